"""The specs lens.nnx transforms lift objects with, and the values they carry.

``StateAxes`` (per-filter axes or shardings), ``DiffState``/``DiffSpec`` (what
to differentiate), and the walk's records: ``Skeleton`` (the static half of the
arguments), ``Entry`` (one value), ``Carrier`` (values with a static skeleton in
the pytree aux data). Flax's ``transforms.general`` path serves them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Leaf, is_graph_node, path_str
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.static import StaticValue


class StateAxes(Mapping[Any, Any]):
    """Per-filter axes for one object in ``vmap``'s ``in_axes``/``out_axes``.

    ``StateAxes({Param: 1, BatchStat: None})``: params mapped on axis 1, batch stats
    broadcast. Filters are tried in order; every variable must match one (end with
    ``...: axis`` for the rest). A read-only mapping from filter to axis, as in
    flax.nnx (``filters``, ``axes``, ``items()``, ``sa[Param]``).
    """

    _what = "axis"
    # made by nnx.prefix from a model: flax's tree-shaped prefix, allowed in
    # every mode
    from_prefix = False

    def __init__(self, filter_axes: Mapping[Any, Any] | Any):
        if hasattr(filter_axes, "flat_state"):  # a State of axes: one per path
            flat = cast(Any, filter_axes).flat_state()
            items = [(AtPath(p), ax) for p, ax in flat]
        elif isinstance(filter_axes, Mapping):
            items = filter_axes.items()
        else:
            items = filter_axes
        self._items = tuple(items)
        self._preds = tuple(to_predicate(f) for f, _ in self._items)

    @property
    def filters(self) -> tuple[Any, ...]:
        """The filters, in the order they are tried."""
        return tuple(f for f, _ in self._items)

    @property
    def axes(self) -> tuple[Any, ...]:
        """The axis (or spec) of each filter."""
        return tuple(ax for _, ax in self._items)

    def items(self) -> Any:
        """The ``(filter, axis)`` pairs, in order."""
        return iter(self._items)

    def __getitem__(self, key: Any) -> Any:
        for f, ax in self._items:
            if f is key or f == key:
                return ax
        raise KeyError(key)

    def __iter__(self) -> Any:
        return iter(self.filters)

    def __len__(self) -> int:
        return len(self._items)

    def axis(self, path: tuple, x: Any) -> Any:
        for pred, (_, ax) in zip(self._preds, self._items, strict=True):
            if pred(path, x):
                return ax
        raise ValueError(
            f"{self!r}: no filter matches {path_str(path)} "
            f"({type(x).__name__}); add ...: <{self._what}> for the rest."
        )

    def map_prefix(self, path: tuple, variable: Any) -> Any:
        """flax.nnx's name for :meth:`axis`: the spec of the variable at ``path``."""
        return self.axis(tuple(path), variable)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateAxes) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return tuple((repr(f), ax) for f, ax in self._items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{_filter_name(f)}: {ax}" for f, ax in self._items)
        return f"StateAxes({{{inner}}})"


class AtPath:
    """A filter: the variable at exactly ``path``."""

    def __init__(self, path: tuple):
        self.path = tuple(path)

    def __call__(self, path: tuple, x: Any) -> bool:
        return tuple(path) == self.path

    def __repr__(self) -> str:
        return f"AtPath({self.path!r})"


def _filter_name(f: Any) -> str:
    if f is Ellipsis:
        return "..."
    return f.__name__ if isinstance(f, type) else repr(f)


@dataclasses.dataclass(frozen=True)
class DiffState:
    """``argnums`` entry: differentiate argument ``argnum``'s ``filter`` variables."""

    argnum: int
    filter: Any

    def map_prefix(self, path: tuple[Any, ...], variable: Any) -> bool:
        """Whether the variable at ``path`` is differentiated (flax.nnx's
        prefix protocol: the filter as a predicate)."""
        return bool(to_predicate(self.filter)(path, variable))


class GraphArg:
    """An object argument, as a placeholder leaf while the pytree is flattened."""

    __slots__ = ("node",)

    def __init__(self, node: Any):
        self.node = node


def wrap_objects(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: GraphArg(x) if is_graph_node(x) else x, tree, is_leaf=is_graph_node
    )


class GraphSlot(NamedTuple):
    """An argument leaf that is an object: its graph def and where it was met."""

    graphdef: Any
    root: tuple[Any, ...]  # ("args", i) or ("args", i, j): its place in the call


class LeafSlot(NamedTuple):
    """An argument leaf that is an array (or another pytree leaf)."""


class StaticSlot(NamedTuple):
    """A static argument (``static_argnums``): its value is part of the key."""

    value: StaticValue


Slot = GraphSlot | LeafSlot | StaticSlot


@dataclasses.dataclass(frozen=True)
class Skeleton:
    """The static half of the arguments: pytree structure, graph defs, statics."""

    treedef: Any
    slots: tuple[Slot, ...]  # one per argument leaf

    def root_of(self, i: int) -> tuple[Any, ...]:
        """Where the object at slot ``i`` was met (``("args", 0)``)."""
        slot = self.slots[i]
        assert isinstance(slot, GraphSlot), slot
        return slot.root


class Carrier:
    """A pytree of values whose static skeleton rides in the aux data, so jit caches
    on it and vmap/grad hand it back."""

    __slots__ = ("values", "aux", "axes")

    def __init__(self, values: list[Any], aux: Any, axes: Any = None):
        self.values = values
        self.aux = aux
        self.axes = axes  # per value, the out axis to move it to (vmap)


jax.tree_util.register_pytree_node(
    Carrier,
    lambda c: (c.values, (c.aux, c.axes)),
    lambda aux, values: Carrier(list(values), *aux),
)


@dataclasses.dataclass
class Entry:
    """One value of the flattened arguments: its spec, and where it came from."""

    value: Any
    spec: Any
    slot: int  # index into the skeleton's slots
    leaf: Leaf | None  # the walked graph leaf (None: a plain pytree leaf)
    arg: int = 0  # the argument it belongs to


def axes_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, StateAxes):
        return spec.axis(path, x)
    return spec


class DiffSpec:
    """The grad spec of an argument: differentiate its ``filter`` variables."""

    __slots__ = ("filter",)

    def __init__(self, filter: Any):
        self.filter = filter

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DiffSpec) and StaticValue(self.filter) == StaticValue(
            other.filter
        )

    def __hash__(self) -> int:
        return hash(StaticValue(self.filter))

    def __repr__(self) -> str:
        return f"a gradient (filter {_filter_name(self.filter)})"


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
