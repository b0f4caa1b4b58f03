"""How an nnx object prints (flax.nnx's ``Pytree.__nnx_repr__``): its attributes in
the order they were set, arrays of more than one element as their shape and dtype,
Variables with their (shortened) values, a ``# Param: 9 (36 B)`` comment per node,
and a node met a second time as ``Linear(...)``.

The per-repr bookkeeping (which nodes were shown, each node's sizes) lives in
:data:`OBJECT_CONTEXT`, whose fields are context variables.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from lens._facades import show_at_flax_paths
from lens.nnx import reprlib
from lens.nnx._variables.variable import RngState, Variable
from lens.typing import SizeBytes

NodeStats = dict[int, dict[type, SizeBytes]]


class ObjectContext:
    """What the object repr being written has seen: ``seen_modules_repr`` (the
    ids of the nodes shown so far) and ``node_stats`` (each node's sizes per
    Variable type). Both are ``None`` outside a repr; each is a context variable,
    so reprs in other threads or tasks do not share them."""

    def __init__(
        self,
        seen_modules_repr: set[int] | None = None,
        node_stats: NodeStats | None = None,
    ):
        self._seen = contextvars.ContextVar(
            f"lens_seen_{id(self)}", default=seen_modules_repr
        )
        self._stats = contextvars.ContextVar(
            f"lens_stats_{id(self)}", default=node_stats
        )

    @property
    def seen_modules_repr(self) -> set[int] | None:
        return self._seen.get()

    @seen_modules_repr.setter
    def seen_modules_repr(self, value: set[int] | None) -> None:
        self._seen.set(value)

    @property
    def node_stats(self) -> NodeStats | None:
        return self._stats.get()

    @node_stats.setter
    def node_stats(self, value: NodeStats | None) -> None:
        self._stats.set(value)

    def __repr__(self) -> str:
        return (
            f"ObjectContext(seen_modules_repr={self.seen_modules_repr!r}, "
            f"node_stats={self.node_stats!r})"
        )


OBJECT_CONTEXT = ObjectContext()


@dataclasses.dataclass(frozen=True, repr=False)
class ArrayRepr(reprlib.Representable):
    """An array shown by its shape and dtype: ``Array(shape=(2, 3), dtype=...)``."""

    shape: tuple[int, ...]
    dtype: Any

    @staticmethod
    def from_array(array: jax.Array | np.ndarray) -> ArrayRepr:
        return ArrayRepr(array.shape, array.dtype)

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        yield reprlib.Object(type="Array", same_line=True)
        yield reprlib.Attr("shape", self.shape)
        yield reprlib.Attr("dtype", self.dtype)


@dataclasses.dataclass(frozen=True, repr=False)
class MutableArrayRepr(reprlib.Representable):
    """A mutable array (``jax.Ref``) shown by its shape and dtype."""

    shape: tuple[int, ...]
    dtype: Any

    @staticmethod
    def from_array(array: jax.Array | np.ndarray) -> MutableArrayRepr:
        return MutableArrayRepr(array.shape, array.dtype)

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        yield reprlib.Object(type="ArrayRef", same_line=True)
        yield reprlib.Attr("shape", self.shape)
        yield reprlib.Attr("dtype", self.dtype)


@dataclasses.dataclass(frozen=True, repr=False)
class VariableRepr(reprlib.Representable):
    """A Variable as an object's repr shows it: its type, its value (arrays as
    :class:`ArrayRepr`) and its metadata."""

    var_type: type[Variable]
    value: Any
    metadata: dict[str, Any]

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        comment = reprlib.size_comment(self.value)
        yield reprlib.Object(type=self.var_type.__name__, comment=comment)
        yield reprlib.Attr("value", self.value)
        for name, value in self.metadata.items():
            yield reprlib.Attr(name, value)


def _is_ref(x: Any) -> bool:
    ref_type = getattr(jax, "Ref", None)
    return ref_type is not None and isinstance(x, ref_type)


def to_shape_dtype(x: Any) -> Any:
    """What a leaf of an object's attribute shows as (see the module docstring)."""
    if isinstance(x, Variable):
        value = jax.tree.map(to_shape_dtype, x.get_raw_value())
        return VariableRepr(type(x), value, dict(x.metadata))
    shape = getattr(x, "shape", None)  # an Rngs answers any name with a stream
    many = isinstance(shape, tuple) and int(np.prod(shape)) > 1
    if _is_ref(x) and many:
        return MutableArrayRepr(x.shape, x.dtype)
    if isinstance(x, np.ndarray | jax.Array) and many:
        return ArrayRepr(x.shape, x.dtype)
    return x


def _size(value: Any) -> SizeBytes:
    size, nbytes = reprlib.size_and_bytes(value)
    return SizeBytes(size, nbytes)


def _is_object(x: Any) -> bool:
    """An nnx object (lens.nnx._objects.object.Object: it has the graph protocol)."""
    return hasattr(type(x), "_graph_items") and hasattr(type(x), "_repr_attributes")


def collect_stats(node: Any, stats: NodeStats) -> None:
    """Fills ``stats`` (by id) with the sizes per Variable type of ``node`` and
    of every node below it, each Variable counted once per node (rng keys and
    counts together as ``RngState``)."""
    if id(node) in stats:
        return
    own: dict[type, SizeBytes] = {}
    stats[id(node)] = own
    if isinstance(node, Variable):
        size = _size(node.get_raw_value())
        if size.size:
            own[RngState if isinstance(node, RngState) else type(node)] = size
        return
    children = node._graph_items() if _is_object(node) else _container(node)
    for _, value in children:
        if id(value) in stats:
            continue  # shown (and counted) where it was met first
        if _is_object(value) or isinstance(value, Variable | list | tuple | dict):
            collect_stats(value, stats)
            for t, size in stats[id(value)].items():
                own[t] = own[t] + size if t in own else size


def _container(x: Any) -> list[tuple[Any, Any]]:
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, list | tuple):
        return list(enumerate(x))
    return []


def stats_comment(stats: dict[type, SizeBytes]) -> str:
    """`` # Param: 9 (36 B), BatchStat: 2 (8 B), Total: 11 (44 B)``."""
    if not stats:
        return ""
    parts = [f"{t.__name__}: {size}" for t, size in stats.items()]
    if len(stats) > 1:
        parts.append(f"Total: {sum(stats.values(), SizeBytes(0, 0))}")
    return " # " + ", ".join(parts)


def _shown_attributes(obj: Any) -> Iterator[tuple[str, Any]]:
    def leaf(x: Any) -> bool:
        return isinstance(x, Variable) or _is_object(x)

    for name, value in obj._repr_attributes():
        yield name, jax.tree.map(to_shape_dtype, value, is_leaf=leaf)


def object_nnx_repr(obj: Any) -> Iterator[reprlib.Object | reprlib.Attr]:
    """flax.nnx's ``__nnx_repr__`` of an object (see the module docstring)."""
    ctx = OBJECT_CONTEXT
    # The outermost repr makes the bookkeeping and clears it when it is done
    # (set, not reset: a generator may be finished in another context).
    clear_stats = ctx.node_stats is None or id(obj) not in ctx.node_stats
    if clear_stats:
        node_stats: NodeStats = {}
        collect_stats(obj, node_stats)
        ctx.node_stats = node_stats
    clear_seen = ctx.seen_modules_repr is None
    if clear_seen:
        ctx.seen_modules_repr = set()
    try:
        seen, stats = ctx.seen_modules_repr, ctx.node_stats
        assert seen is not None and stats is not None
        if id(obj) in seen:
            yield reprlib.Object(type=type(obj), empty_repr="...")
            return
        yield reprlib.Object(type=type(obj), comment=stats_comment(stats[id(obj)]))
        seen.add(id(obj))
        for name, value in _shown_attributes(obj):
            yield reprlib.Attr(name, value)
    finally:
        if clear_seen:
            ctx.seen_modules_repr = None
        if clear_stats:
            ctx.node_stats = None


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
