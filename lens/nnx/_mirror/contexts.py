"""Splits and merges that remember what they met (flax.nnx's ``split_context``,
``merge_context`` and ``update_context``), for writing transforms by hand.

- :class:`RefMap` (object -> index) and :class:`IndexMap` (index -> object): what a
  split and a merge have met. ``flatten(node, ref_index=refmap)`` numbers the new
  objects after those in ``refmap`` and gives a ``NodeRef`` for one already in it;
  ``unflatten(graphdef, state, index_ref=indexmap)`` resolves refs to objects
  built before.
- ``split_context()``/``merge_context()``: several splits (merges) that share one
  map, so an object reached by two calls is one object.
- ``update_context(tag)``: the four calls around a transform (split outside, merge
  inside, split inside, merge outside) are tied together: the last merge writes
  the changes made inside back into the very objects that went in.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterator, MutableMapping, Sequence
from typing import Any, TypeVar

import jax
import numpy as np

from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import (
    NO_UPDATE,
    ArrayRefDef,
    ArrayRefOutput,
    GraphDef,
    NodeRef,
    NoUpdate,
    Repeated,
)
from lens.nnx._graph.ops import as_state, graphdef_leaves
from lens.nnx._graph.ops import flatten as _plain_flatten
from lens.nnx._graph.ops import unflatten as _plain_unflatten
from lens.nnx._graph.registry import GRAPH_REGISTRY
from lens.nnx._graph.walk import (
    Builder,
    Leaf,
    ObjectDef,
    RegisteredDef,
    SpecAt,
    StaticDef,
    VariableDef,
    Walker,
)
from lens.nnx._variables.refs import is_array_ref
from lens.nnx._variables.state import FlatState, partition_flat
from lens.nnx._variables.variable import Variable, new_variable
from lens.nnx.tracers import structure_changed

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])


class RefMap(MutableMapping[Any, int]):
    """``{object: index}`` keyed by identity (objects need not be hashable)."""

    def __init__(self, mapping: Any = (), /):
        self._mapping: dict[int, tuple[Any, int]] = {}
        items = mapping.items() if hasattr(mapping, "items") else mapping
        for key, value in items:
            self[key] = value

    @staticmethod
    def from_indexmap(indexmap: IndexMap) -> RefMap:
        """The inverse of an :class:`IndexMap`."""
        return RefMap((obj, index) for index, obj in indexmap.items())

    def __getitem__(self, key: Any) -> int:
        return self._mapping[id(key)][1]

    def __setitem__(self, key: Any, value: int) -> None:
        self._mapping[id(key)] = (key, value)

    def __delitem__(self, key: Any) -> None:
        del self._mapping[id(key)]

    def __contains__(self, key: object) -> bool:
        return id(key) in self._mapping

    def __iter__(self) -> Iterator[Any]:
        return (key for key, _ in self._mapping.values())

    def __len__(self) -> int:
        return len(self._mapping)

    def __repr__(self) -> str:
        items = ", ".join(f"{type(k).__name__}: {i}" for k, i in self._mapping.values())
        return f"RefMap({{{items}}})"


# flax.nnx.graph's type names
PythonRefMap = RefMap  # flax's name for the pure-Python RefMap (lens has only it)
GraphFlatState = FlatState[Any]
Index = int  # a node's number in a walk
Names = Sequence[int]
# What a state leaf may be: lens Variables hold plain arrays (no array refs).
LeafType = Variable | jax.Array | np.ndarray | ArrayRefOutput | NoUpdate


class IndexMap(dict):
    """``{index: object}``: what a merge built (or the inverse of a RefMap)."""

    @staticmethod
    def from_refmap(refmap: RefMap) -> IndexMap:
        """The inverse of a :class:`RefMap`."""
        return IndexMap((index, obj) for obj, index in refmap.items())


def _seeded_walker(ref_index: RefMap | None, ref_outer_index: Any) -> Walker:
    """A Walker that already met the objects of ``ref_index`` (indices 0..n-1)."""
    w = Walker()
    for obj, i in sorted((ref_index or {}).items(), key=lambda kv: kv[1]):
        if i != len(w.nodes):
            raise ValueError(
                f"RefMap indices must be 0..{len(ref_index or ()) - 1}, got {i}.\n"
                "Pass a RefMap that only flatten (or a split_context) has filled."
            )
        w.index[id(obj)] = i
        w.nodes.append(obj)
        w.specs.append(SpecAt(None, (), "input"))
    if ref_outer_index:
        w.outer_index = {id(obj): i for obj, i in ref_outer_index.items()}
    return w


def flatten(
    node: Any,
    /,
    *,
    with_paths: bool = True,
    ref_index: RefMap | None = None,
    ref_outer_index: RefMap | None = None,
    graph: bool | None = None,
) -> tuple[GraphDef, Any]:
    """``(graphdef, flat state)``: ``split`` with the state as ``(path, variable)``
    pairs (or only the variables, ``with_paths=False``).

    With ``ref_index``, objects in it become ``NodeRef``s and the new ones are
    added to it; with ``ref_outer_index``, each def records the index its object
    had outside (``NodeDef.outer_index``), so ``unflatten(...,
    outer_index_outer_ref=...)`` can write into those objects. A ``jax.Ref``
    is then no leaf (a ref cannot leave a transform): one the outside has is
    ``NO_UPDATE`` (its writes already happened in place), one made inside an
    ``ArrayRefOutput`` of its value (a new ref outside).
    """
    if ref_index is None and ref_outer_index is None:
        return _plain_flatten(node, with_paths=with_paths, graph=graph)
    w = _seeded_walker(ref_index, ref_outer_index)
    start = len(w.nodes)
    d = w.node(node, ())
    if isinstance(d, StaticDef):
        return _plain_flatten(node, with_paths=with_paths, graph=graph)
    gdef = GraphDef(node=d, paths=tuple(leaf.path for leaf in w.leaves))
    values = [_leaf_out(leaf, ref_outer_index) for leaf in w.leaves]
    if ref_index is not None:
        for i, obj in enumerate(w.nodes[start:], start):
            ref_index[obj] = i
    if not with_paths:
        return gdef, values
    return gdef, FlatState(zip(gdef.paths, values, strict=True))


def _leaf_out(leaf: Leaf, ref_outer_index: RefMap | None) -> Any:
    """What a flatten gives for one leaf: its Variable, or its value; with
    ``ref_outer_index`` (a split inside a transform) a ref is replaced by
    ``NO_UPDATE`` or an ``ArrayRefOutput`` (a Variable's in a copy of it)."""
    value = leaf.value
    if ref_outer_index is None or not is_array_ref(value):
        return value if leaf.variable is None else leaf.variable
    out = NO_UPDATE if value in ref_outer_index else ArrayRefOutput(value[...])
    if leaf.variable is None:
        return out
    return leaf.variable.type._new(out, dict(leaf.variable.metadata))


_REF_MARKERS = (NoUpdate, Repeated, ArrayRefOutput)


class _ContextBuilder(Builder):
    """Builds into a shared ``index_ref``; reuses the outside objects of
    ``outer`` (outer index -> object) for defs that carry an ``outer_index``."""

    def __init__(self, values: Iterator[Any], index_ref: dict, outer: dict | None):
        super().__init__(values)
        self.nodes = index_ref
        self.outer = outer or {}
        if self.outer:
            structure_changed()

    def _reuse(self, d: Any) -> Any:
        obj = self.outer.get(d.outer_index) if d.outer_index is not None else None
        return obj if type(obj) is d.type else None

    def build(self, d: Any) -> Any:
        if isinstance(d, ObjectDef) and (obj := self._reuse(d)) is not None:
            obj._graph_clear()
            self.nodes[d.index] = obj
            for k, sub in d.attributes:
                obj._graph_set(k, self.build(sub))
            return obj
        if isinstance(d, RegisteredDef) and (node := self._reuse(d)) is not None:
            impl: Any = GRAPH_REGISTRY[d.type]
            impl.clear(node)
            self.nodes[d.index] = node
            impl.init(node, [(k, self.build(sub)) for k, sub in d.attributes])
            return node
        if isinstance(d, VariableDef):
            leaf = next(self.values)
            meta = {k: s.value for k, s in d.metadata}
            if isinstance(leaf, Variable):
                leaf, meta = leaf._raw_value, dict(leaf.metadata)
            if isinstance(d.array_refdef, ArrayRefDef):
                leaf = self._array_ref(d.array_refdef, leaf)
            elif isinstance(d.array_refdef, NodeRef):  # a ref built before
                leaf = self.nodes[d.array_refdef.index]
            v = self._reuse(d)
            if v is None:
                v = new_variable(d.type, leaf, meta)
            else:
                object.__setattr__(v, "_raw_value", leaf)
                object.__setattr__(v, "_var_metadata", meta)
            self.variable_built(d, v, leaf)
            return v
        if isinstance(d, ArrayRefDef):
            ref = self._array_ref(d, next(self.values))
            self.nodes[d.index] = ref
            return ref
        return super().build(d)

    def _array_ref(self, d: ArrayRefDef, leaf: Any) -> Any:
        """The ref a split's leaf stands for: the outside's own (``NO_UPDATE``),
        a new one (``ArrayRefOutput``), or the leaf itself (a ref, or an array
        merged as it is)."""
        if d.outer_index is not None and d.outer_index in self.outer:
            if type(leaf) is not NoUpdate:
                raise RuntimeError(
                    f"Expected a no update for ArrayRef but got {leaf}.\nThe ref "
                    "exists outside: a split inside the transform gives NO_UPDATE "
                    "for it (its writes happen in place)."
                )
            return self.outer[d.outer_index]
        if type(leaf) in (NoUpdate, Repeated):
            raise ValueError(
                f"Expected a ArrayRefOutput type but got '{leaf}.'\nThis ref has "
                "no outside counterpart to reuse: merge it inside the same "
                "update_context that split it."
            )
        if type(leaf) is ArrayRefOutput:
            return jax.new_ref(leaf.value)
        return leaf


def unflatten(
    graphdef: GraphDef,
    state: Any,
    /,
    *,
    index_ref: IndexMap | None = None,
    outer_index_outer_ref: IndexMap | None = None,
    copy_variables: bool = False,
    recreate_variables: bool = True,
) -> Any:
    """The object ``graphdef`` describes (``flatten``'s inverse).

    With ``index_ref``, refs resolve to objects in it and the objects built are
    added; with ``outer_index_outer_ref``, a def with an ``outer_index`` reuses
    that outside object, its attributes and values replaced in place.
    """
    if index_ref is None and outer_index_outer_ref is None:
        return _plain_unflatten(
            graphdef,
            state,
            copy_variables=copy_variables,
            recreate_variables=recreate_variables,
        )
    states = (state,)
    if isinstance(state, list) and not isinstance(state, FlatState):
        states = (FlatState(zip(graphdef.paths, state, strict=True), sort=False),)
    leaves = graphdef_leaves(graphdef, states) if graphdef.paths else []
    nodes = index_ref if index_ref is not None else IndexMap()
    builder = _ContextBuilder(iter(leaves), nodes, outer_index_outer_ref)
    return builder.build(graphdef.node)


@dataclasses.dataclass
class UpdateContext:
    """The maps ``update_context`` keeps between its four splits and merges."""

    tag: Hashable
    outer_ref_outer_index: RefMap | None = None
    outer_index_inner_ref: IndexMap | None = None
    outer_index_outer_ref: IndexMap | None = None
    inner_ref_outer_index: RefMap | None = None
    static_cache: Any = None

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UpdateContext)

    def flatten_end(self, ref_index: RefMap) -> None:
        """After a split: the first (outside) one's map is kept."""
        if self.outer_ref_outer_index is None:
            self.outer_ref_outer_index = ref_index
            self.outer_index_outer_ref = IndexMap.from_refmap(ref_index)
        else:
            self.outer_index_inner_ref = None
            self.inner_ref_outer_index = None

    def unflatten_end(self, index_ref: IndexMap, inner_merge: bool) -> None:
        """After a merge: the inside one's objects, by their outside index."""
        if inner_merge:
            self.outer_index_inner_ref = index_ref
            self.inner_ref_outer_index = RefMap.from_indexmap(index_ref)


_UPDATE_STACKS: contextvars.ContextVar[dict[Hashable, list[UpdateContext]] | None] = (
    contextvars.ContextVar("lens_nnx_update_contexts", default=None)
)


def _stacks() -> dict[Hashable, list[UpdateContext]]:
    stacks = _UPDATE_STACKS.get()
    if stacks is None:
        stacks = {}
        _UPDATE_STACKS.set(stacks)
    return stacks


# The split and merge contexts open in this thread/task (innermost last), and
# the static cache ``static_cache(...)`` handed to the next update context.
SPLIT_CONTEXTS: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "lens_nnx_split_contexts", default=()
)
MERGE_CONTEXTS: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "lens_nnx_merge_contexts", default=()
)
TMP_STATIC_CACHE: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "lens_nnx_tmp_static_cache", default=None
)


@dataclasses.dataclass
class UpdateContextManager:
    """What ``update_context(tag)`` returns: a context manager and a decorator."""

    tag: Hashable

    def __enter__(self) -> UpdateContext:
        # a cache handed over by ``static_cache(...)`` goes to this context
        ctx = UpdateContext(self.tag, static_cache=TMP_STATIC_CACHE.get())
        TMP_STATIC_CACHE.set(None)
        _stacks().setdefault(self.tag, []).append(ctx)
        return ctx

    def __exit__(self, *exc: Any) -> None:
        stacks = _stacks()
        stacks[self.tag].pop()
        if not stacks[self.tag]:
            del stacks[self.tag]

    def __call__(self, f: F) -> F:
        @functools.wraps(f)
        def with_update_context(*args: Any, **kwargs: Any) -> Any:
            with self:
                return f(*args, **kwargs)

        return with_update_context  # type: ignore[return-value]


def update_context(tag: Hashable) -> UpdateContextManager:
    """Ties a transform's splits and merges together so the objects that went in
    come back updated (flax.nnx's ``update_context``):

    >>> import jax
    >>> from lens import nnx
    >>> class Foo(nnx.Module):
    ...     pass
    >>> m1 = Foo()
    >>> with nnx.update_context("example"):
    ...     with nnx.split_context("example") as ctx:
    ...         graphdef, state = ctx.split(m1)
    ...     @jax.jit
    ...     def f(graphdef, state):
    ...         with nnx.merge_context("example", True) as ctx:
    ...             m2 = ctx.merge(graphdef, state)
    ...         m2.a = 1
    ...         with nnx.split_context("example") as ctx:
    ...             return ctx.split(m2)
    ...     graphdef_out, state_out = f(graphdef, state)
    ...     with nnx.merge_context("example", False) as ctx:
    ...         m3 = ctx.merge(graphdef_out, state_out)
    >>> m3 is m1, m1.a
    (True, 1)
    """
    return UpdateContextManager(tag)


def current_update_context(tag: Hashable) -> UpdateContext:
    """The innermost active :class:`UpdateContext` for ``tag``.

    Raises:
        ValueError: no ``update_context(tag)`` is active.
    """
    stack = _stacks().get(tag)
    if not stack:
        raise ValueError(
            f"No update context found for tag {tag!r}.\nWrap the splits and "
            f"merges in `with nnx.update_context({tag!r}):`."
        )
    return stack[-1]


@dataclasses.dataclass
class SplitContext:
    """Splits that share one :class:`RefMap` (``split_context``'s ``ctx``)."""

    ctxtag: Hashable | None
    ref_index: RefMap
    is_inner: bool | None

    def _inner_map(self) -> RefMap | None:
        if self.ctxtag is None:
            return None
        return current_update_context(self.ctxtag).inner_ref_outer_index

    def split(self, node: Any, *filters: Any) -> tuple[Any, ...]:
        """``nnx.split``, with objects met by an earlier split as ``NodeRef``s."""
        gdef, flat = self.flatten(node)
        flat = {p: v for p, v in flat} if isinstance(flat, list) else flat
        parts = partition_flat(dict(flat), filters, exhaustive=True)
        return (gdef, *(as_state(p) for p in parts))

    def flatten(self, node: Any, *filters: Any, with_paths: bool = True) -> Any:
        """``flatten`` with this context's RefMap: ``(graphdef, flat_state)``, or
        with filters ``(graphdef, flat_state, ...)``, one FlatState per filter
        (every variable must match one, as ``FlatState.split``)."""
        if filters and not with_paths:
            raise ValueError("Cannot use filters with with_paths=False")
        graphdef, flat = flatten(
            node,
            with_paths=with_paths,
            ref_index=self.ref_index,
            ref_outer_index=self._inner_map(),
        )
        if not filters:
            return graphdef, flat
        parts = flat.split(*filters)
        return (graphdef, *(parts if isinstance(parts, tuple) else (parts,)))


@contextlib.contextmanager
def split_context(ctxtag: Hashable | None = None) -> Iterator[SplitContext]:
    """Splits inside share their RefMap: an object split twice is a ``NodeRef``
    the second time."""
    ctx = current_update_context(ctxtag) if ctxtag is not None else None
    is_inner = ctx.outer_ref_outer_index is not None if ctx is not None else None
    split_ctx = SplitContext(ctxtag, RefMap(), is_inner)
    token = SPLIT_CONTEXTS.set((*SPLIT_CONTEXTS.get(), split_ctx))
    try:
        yield split_ctx
    finally:
        SPLIT_CONTEXTS.reset(token)
        if ctxtag is not None:
            current_update_context(ctxtag).flatten_end(split_ctx.ref_index)
        del split_ctx.ref_index
        del split_ctx.ctxtag


@dataclasses.dataclass
class MergeContext:
    """Merges that share one :class:`IndexMap` (``merge_context``'s ``ctx``)."""

    ctxtag: Hashable | None
    index_ref: IndexMap
    is_inner: bool | None

    def merge(self, graphdef: GraphDef, state: Any, /, *states: Any) -> Any:
        """``nnx.merge``; a ``NodeRef`` resolves to an object an earlier merge
        built; outside a transform (``inner=False``), into the objects split."""
        outer = None
        if self.ctxtag is not None and not self.is_inner:
            outer = current_update_context(self.ctxtag).outer_index_outer_ref
        leaves = graphdef_leaves(graphdef, (state, *states)) if graphdef.paths else []
        values = [_copied(v) for v in leaves]
        return _ContextBuilder(iter(values), self.index_ref, outer).build(graphdef.node)

    def unflatten(self, graphdef: GraphDef, flat_state: Any, /, *more: Any) -> Any:
        """``merge`` from FlatStates or a list of leaves."""
        if isinstance(flat_state, list) and not isinstance(flat_state, FlatState):
            if more:
                raise ValueError(
                    "Cannot use multiple flat_states when flat_state is a list, got "
                    f"flat_state: {flat_state!r}, flat_states: {more!r}\nPass one "
                    "list of leaves, or FlatStates only."
                )
            flat_state = FlatState(zip(graphdef.paths, flat_state, strict=True))
        return self.merge(graphdef, flat_state, *more)


def _copied(v: Any) -> Any:
    """A merge's copy of a Variable leaf (a ref-backed one gets a new ref); one
    holding ``NO_UPDATE`` or an ``ArrayRefOutput`` is taken as it is."""
    if not isinstance(v, Variable) or isinstance(v._raw_value, _REF_MARKERS):
        return v
    return v.copy()


@contextlib.contextmanager
def merge_context(
    ctxtag: Hashable | None = None, inner: bool | None = None
) -> Iterator[MergeContext]:
    """Merges inside share their IndexMap: a ``NodeRef`` is the object built by
    an earlier merge. With ``ctxtag``, ``inner`` says which side of the
    transform this is (True inside, False outside)."""
    merge_ctx = MergeContext(ctxtag, IndexMap(), inner)
    token = MERGE_CONTEXTS.set((*MERGE_CONTEXTS.get(), merge_ctx))
    try:
        yield merge_ctx
    finally:
        MERGE_CONTEXTS.reset(token)
        if ctxtag is not None:
            if inner is None:
                raise ValueError(
                    "inner_merge must be specified when using ctxtag\nPass "
                    "merge_context(tag, True) inside the transform, False outside."
                )
            current_update_context(ctxtag).unflatten_end(merge_ctx.index_ref, inner)
        del merge_ctx.index_ref
        del merge_ctx.ctxtag


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
