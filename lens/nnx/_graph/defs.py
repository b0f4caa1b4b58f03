"""The definitions a graph walk produces, and :class:`GraphDef`.

lens's walk (:mod:`lens.nnx._graph.walk`) describes a graph as a tree of defs, one
per node, each holding its children's defs (``ObjectDef``, ``SeqDef``, ...):
that is what merge and the transforms rebuild from. flax.nnx describes the same
graph flat: ``GraphDef.nodes`` (one :class:`NodeDef`, :class:`VariableDef` or
:class:`NodeRef` per node, depth first) and ``GraphDef.attributes`` (each node's
children in order: ``NODE_ATTR`` for a node, ``LEAF_ATTR`` for a state leaf,
``Static(value)`` for a static value), with ``num_leaves``. A GraphDef offers
both; either one builds it (``GraphDef(nodes, attributes, num_leaves)``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.registry import (
    GRAPH_REGISTRY,
    PYTREE_REGISTRY,
    GenericPytree,
    IndexesPytreeDef,
)
from lens.nnx._objects.object import Pytree
from lens.nnx._variables.static import StaticValue

Path = tuple[Any, ...]
N = TypeVar("N")
A = TypeVar("A")


# ---- lens's tree of defs (what the walk gives and the Builder rebuilds) ----


@dataclasses.dataclass(frozen=True)
class ObjectDef(Generic[N]):
    """An object in the walk: its type, its index, its attributes' defs;
    ``outer_index``: the index of the object it came from outside a transform
    (set by a split inside ``nnx.update_context``); ``flags``: its
    ``_pytree__state``'s ``(initializing, is_setup)`` when either is set."""

    type: type
    index: int
    attributes: tuple[tuple[Any, Any], ...]
    outer_index: int | None = None
    flags: tuple[bool, bool] | None = None

    @functools.cached_property
    def build_plan(self) -> tuple[tuple[Any, ...], tuple[tuple[Any, Any], ...]]:
        """For the Builder, worked out once per def: the attribute names, and per
        attribute (its static value, None) or (None, the def to build)."""
        keys = tuple(k for k, _ in self.attributes)
        plan = tuple(
            (sub.value.value, None) if type(sub) is StaticDef else (None, sub)
            for _, sub in self.attributes
        )
        return keys, plan


@dataclasses.dataclass(frozen=True)
class RegisteredDef(Generic[N]):
    """A node of a type given to ``register_graph_node_type``: rebuilt with its
    impl's ``create_empty(metadata)`` and ``init``."""

    type: type
    index: int
    attributes: tuple[tuple[Any, Any], ...]
    outer_index: int | None
    metadata: Any


@dataclasses.dataclass(frozen=True)
class VariableDef(Generic[N]):
    """A Variable in a GraphDef (flax.nnx's fields): ``array_refdef`` numbers
    the ``jax.Ref`` a ref-backed Variable holds (an :class:`ArrayRefDef`, or a
    :class:`NodeRef` to a ref met before); None for any other value."""

    type: type
    index: int
    outer_index: int | None
    metadata: tuple[tuple[str, Any], ...]
    array_refdef: Any = None

    @functools.cached_property
    def metadata_dict(self) -> dict[str, Any]:
        """The metadata as a dict, worked out once per def (each Variable built
        from it gets a copy)."""
        return {k: s.value for k, s in self.metadata}


@dataclasses.dataclass(frozen=True)
class NodeRef(Generic[N]):
    """A node met before in the same walk (or split context)."""

    index: int


@dataclasses.dataclass(frozen=True)
class ArrayDef:
    """A state leaf that is not a Variable (an array attribute, a data value)."""


@dataclasses.dataclass(frozen=True)
class SeqDef:
    type: type
    items: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class DictDef:
    keys: tuple[Any, ...]
    items: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class PytreeDef:
    """Any other pytree holding state (an optax state: namedtuples of arrays):
    its one-level treedef, its children's keys and defs in JAX's order."""

    treedef: Any
    items: tuple[Any, ...]
    keys: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class CustomPytreeDef:
    """A pytree of a type given to ``register_pytree_node_type``."""

    type: type
    metadata: Any
    keys: tuple[Any, ...]
    items: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class StaticDef:
    value: StaticValue


@dataclasses.dataclass(frozen=True, repr=False)
class TreeNodeDef(Generic[N]):
    """The structure of a node flattened in tree mode: its type, the JAX treedef
    (Variables as leaves), and ``path_index``: each leaf's path, sorted, with its
    position among the treedef's leaves."""

    type: type
    treedef: Any
    path_index: tuple[tuple[Path, int], ...]

    def __repr__(self) -> str:
        return f"TreeNodeDef(type={self.type.__name__}, leaves={len(self.path_index)})"


# ---- flax.nnx's flat form ----


@dataclasses.dataclass(frozen=True)
class NodeDef(Generic[N]):
    """A graph or pytree node in ``GraphDef.nodes``: its type, its index
    (None for a pytree node, which has no identity), the outside index it came
    from, how many entries of ``GraphDef.attributes`` are its children, and
    the aux data its type's ``flatten`` gave."""

    type: type
    index: int | None
    outer_index: int | None
    num_attributes: int
    metadata: Any


@dataclasses.dataclass(frozen=True)
class ArrayRefDef:
    """A mutable array reference (``jax.Ref``) in a GraphDef: a node, so one
    ref reached twice is one ref after a merge. A bare ref attribute is this
    def with the ref as its state leaf; a ref-backed Variable's ref is its
    ``VariableDef.array_refdef``. ``outer_index``: the index the ref had
    outside a transform (set by a split inside ``nnx.update_context``)."""

    index: int
    outer_index: int | None

    def with_no_outer_index(self) -> ArrayRefDef:
        return ArrayRefDef(self.index, None)

    def with_same_outer_index(self) -> ArrayRefDef:
        return ArrayRefDef(self.index, self.index)

    def with_matching_outer_index(self, other: ArrayRefDef) -> ArrayRefDef:
        return ArrayRefDef(self.index, other.outer_index)


@dataclasses.dataclass(frozen=True, slots=True)
class NodeAttr:
    """``GraphDef.attributes`` marker: the child is the next entry of ``nodes``."""


NODE_ATTR = NodeAttr()


@dataclasses.dataclass(frozen=True, slots=True)
class LeafAttr:
    """``GraphDef.attributes`` marker: the child is the next state leaf."""


LEAF_ATTR = LeafAttr()


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True, slots=True)
class Static(Generic[A]):
    """A static value (a pytree with no leaves): an attribute kept in the
    GraphDef. ``value`` should define ``__eq__`` and ``__hash__``."""

    value: A


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True, slots=True)
class NoUpdate:
    """A leaf standing for "unchanged" (an array ref the outside already has)."""


NO_UPDATE = NoUpdate()


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True, slots=True)
class Repeated:
    """A leaf standing for an array ref met before in the same flatten."""


REPEATED = Repeated()


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, slots=True)
class ArrayRefOutput:
    """The value of an array ref created inside a transform, carried out as an
    array (a pytree of one leaf)."""

    value: jax.Array


AttrType = NodeAttr | LeafAttr | Static[Any]
NodeDefType = NodeDef[N] | NodeRef[N] | VariableDef[N] | ArrayRefDef | TreeNodeDef[N]


def _node_parts(d: Any) -> tuple[type, int | None, int | None, list, Any]:
    """``(type, index, outer_index, [(key, child def)], metadata)`` of a node def."""
    if isinstance(d, ObjectDef):
        return d.type, d.index, d.outer_index, list(d.attributes), d.type
    if isinstance(d, RegisteredDef):
        return d.type, d.index, d.outer_index, list(d.attributes), d.metadata
    if isinstance(d, SeqDef):
        return d.type, None, None, list(enumerate(d.items)), None
    if isinstance(d, DictDef):
        return dict, None, None, list(zip(d.keys, d.items, strict=True)), None
    if isinstance(d, CustomPytreeDef):
        children = list(zip(d.keys, d.items, strict=True))
        return d.type, None, None, children, d.metadata
    assert isinstance(d, PytreeDef)
    keys = d.keys or tuple(range(len(d.items)))
    meta = IndexesPytreeDef(tuple((k, i) for i, k in enumerate(keys)), d.treedef)
    return GenericPytree, None, None, list(zip(keys, d.items, strict=True)), meta


def flat_defs(root: Any) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """flax.nnx's ``(nodes, attributes)`` of a tree of defs."""
    nodes: list[Any] = []
    attributes: list[tuple[Any, Any]] = []

    def visit(d: Any) -> None:
        if isinstance(d, NodeRef | VariableDef | TreeNodeDef | ArrayRefDef):
            nodes.append(d)
            return
        kind, index, outer, children, meta = _node_parts(d)
        nodes.append(NodeDef(kind, index, outer, len(children), meta))
        for key, sub in children:
            if isinstance(sub, ArrayDef):
                attributes.append((key, LEAF_ATTR))
            elif isinstance(sub, StaticDef):
                attributes.append((key, Static(sub.value.value)))
            else:
                attributes.append((key, NODE_ATTR))
                visit(sub)

    if not isinstance(root, ArrayDef):  # a leaf root has no nodes
        visit(root)
    return nodes, attributes


def tree_defs(nodes: list[Any], attributes: list[tuple[Any, Any]]) -> tuple[Any, tuple]:
    """``(root def, leaf paths)`` from flax.nnx's flat ``nodes``/``attributes``.

    Raises:
        ValueError: the lists do not describe one graph.
    """
    if not nodes:
        return ArrayDef(), ((),)
    if isinstance(nodes[0], TreeNodeDef):
        return nodes[0], tuple(p for p, _ in nodes[0].path_index)
    node_it, attr_it = iter(nodes), iter(attributes)
    paths: list[Path] = []

    def build(nd: Any, path: Path) -> Any:
        if isinstance(nd, VariableDef | ArrayRefDef):
            paths.append(path)
        if isinstance(nd, NodeRef | VariableDef | ArrayRefDef):
            return nd
        if not isinstance(nd, NodeDef):
            raise ValueError(
                f"Unknown node definition: {nd!r}\nA GraphDef's nodes are "
                "NodeDef, VariableDef and NodeRef entries."
            )
        children = []
        for _ in range(nd.num_attributes):
            key, attr = _next(attr_it, "attributes")
            if isinstance(attr, Static):
                children.append((key, StaticDef(StaticValue(attr.value))))
            elif isinstance(attr, LeafAttr):
                paths.append(path + (key,))
                children.append((key, ArrayDef()))
            else:
                children.append((key, build(_next(node_it, "nodes"), path + (key,))))
        return _def_of(nd, children)

    root = build(next(node_it), ())
    return root, tuple(paths)


def _next(it: Iterator[Any], what: str) -> Any:
    try:
        return next(it)
    except StopIteration:
        raise ValueError(
            f"The GraphDef's {what} end before its nodes' attributes do.\n"
            "Build a GraphDef with nnx.graphdef(node) or nnx.split(node)."
        ) from None


def _def_of(nd: NodeDef, children: list[tuple[Any, Any]]) -> Any:
    """lens's def of one flat NodeDef with its children's defs."""
    kind = nd.type
    keys = tuple(k for k, _ in children)
    items = tuple(d for _, d in children)
    if isinstance(kind, type) and issubclass(kind, Pytree):
        assert nd.index is not None
        return ObjectDef(kind, nd.index, tuple(children), nd.outer_index)
    if kind in (list, tuple):
        return SeqDef(kind, items)
    if kind is dict:
        return DictDef(keys, items)
    if kind is GenericPytree:
        order = dict(nd.metadata.key_index)
        ordered = sorted(children, key=lambda kv: order[kv[0]])
        return PytreeDef(
            nd.metadata.treedef,
            tuple(d for _, d in ordered),
            tuple(k for k, _ in ordered),
        )
    if dict.get(GRAPH_REGISTRY, kind) is not None:
        assert nd.index is not None
        return RegisteredDef(
            kind, nd.index, tuple(children), nd.outer_index, nd.metadata
        )
    if kind in PYTREE_REGISTRY:
        return CustomPytreeDef(kind, nd.metadata, keys, items)
    raise ValueError(
        f"Unsupported node type {kind!r} in a GraphDef.\nRegister it with "
        "nnx.graphlib.register_graph_node_type or register_pytree_node_type."
    )


class GraphDef(Generic[N]):
    """The static structure of an object graph (hashable; ``merge`` rebuilds it).

    flax.nnx's fields: ``nodes``, ``attributes``, ``num_leaves`` (see the module
    docstring); lens's: ``node`` (the root's def) and ``paths`` (each state
    leaf's path, in walk order). Build one from either.
    """

    __slots__ = ("_flat", "_leaf_shapes", "node", "paths")

    def __init__(
        self,
        nodes: list[Any] | None = None,
        attributes: list[tuple[Any, Any]] | None = None,
        num_leaves: int | None = None,
        *,
        node: Any = None,
        paths: tuple[Path, ...] | None = None,
    ):
        flat = None
        if node is None:
            if nodes is None:
                raise TypeError(
                    "GraphDef() needs nodes, attributes and num_leaves (flax.nnx's "
                    "flat form) or node= and paths= (lens's)."
                )
            node, paths = tree_defs(list(nodes), list(attributes or ()))
            if num_leaves is not None and num_leaves != len(paths):
                raise ValueError(
                    f"GraphDef: num_leaves is {num_leaves} but the attributes "
                    f"describe {len(paths)} leaves.\nPass the count of LEAF_ATTR "
                    "entries and VariableDefs."
                )
            flat = (list(nodes), list(attributes or ()))
        elif nodes is not None:
            flat = (list(nodes), list(attributes or ()))
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "paths", tuple(paths or ()))
        object.__setattr__(self, "_flat", flat)
        # Strict mode only (lens.strict): each leaf's (Variable type, shape) at
        # the split that made this GraphDef, for merge to check the state it gets
        # against. Not part of equality, hashing or pickling.
        object.__setattr__(self, "_leaf_shapes", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field '{name}'")

    def _flat_form(self) -> tuple[list[Any], list[tuple[Any, Any]]]:
        if self._flat is None:
            object.__setattr__(self, "_flat", flat_defs(self.node))
        assert self._flat is not None
        return self._flat

    @property
    def nodes(self) -> list[Any]:
        """The node defs, depth first from the root (flax.nnx's ``nodes``)."""
        return self._flat_form()[0]

    @property
    def attributes(self) -> list[tuple[Any, Any]]:
        """Each node's children in order: ``(key, NODE_ATTR | LEAF_ATTR |
        Static(value))``."""
        return self._flat_form()[1]

    @property
    def num_leaves(self) -> int:
        """How many state leaves the graph has."""
        return len(self.paths)

    def _with_nodes(self, nodes: list[Any]) -> GraphDef[N]:
        return GraphDef(nodes, self.attributes, self.num_leaves)

    def with_no_outer_index(self) -> GraphDef[N]:
        """This GraphDef with no node tied to an outside index."""
        return self._with_nodes([_outer(n, lambda n: None) for n in self.nodes])

    def with_same_outer_index(self) -> GraphDef[N]:
        """This GraphDef with each node's outer index its own index."""
        return self._with_nodes([_outer(n, lambda n: n.index) for n in self.nodes])

    def with_matching_outer_index(self, other: GraphDef[Any]) -> GraphDef[N]:
        """This GraphDef with the outer indices of ``other`` (same structure)."""
        pairs = zip(self.nodes, other.nodes, strict=True)
        return self._with_nodes([_matching(n, o) for n, o in pairs])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GraphDef):
            return NotImplemented
        return self.node == other.node and self.paths == other.paths

    def __hash__(self) -> int:
        return hash((self.node, self.paths))

    def __repr__(self) -> str:
        name = getattr(getattr(self.node, "type", None), "__name__", "?")
        return f"GraphDef({name}, {len(self.paths)} leaves)"

    def __reduce__(self) -> Any:
        return (_rebuild_graphdef, (self.node, self.paths))


def _outer(node: Any, outer: Any) -> Any:
    """``node`` with ``outer(node)`` as its outer index (refs, tree-mode defs
    and pytree nodes, which have no index, stay as they are)."""
    if isinstance(node, NodeDef) and node.index is not None:
        return dataclasses.replace(node, outer_index=outer(node))
    if isinstance(node, VariableDef) and isinstance(node.array_refdef, ArrayRefDef):
        ref = node.array_refdef
        return dataclasses.replace(
            node, outer_index=outer(node), array_refdef=_outer(ref, outer)
        )
    if isinstance(node, VariableDef | ArrayRefDef):
        return dataclasses.replace(node, outer_index=outer(node))
    return node


def _matching(node: Any, other: Any) -> Any:
    """``node`` with ``other``'s outer index (and its ref's, for a Variable)."""
    out = _outer(node, lambda _: other.outer_index)
    ref = getattr(out, "array_refdef", None)
    if isinstance(ref, ArrayRefDef):
        other_ref = getattr(other, "array_refdef", None)
        outer = other_ref.outer_index if isinstance(other_ref, ArrayRefDef) else None
        out = dataclasses.replace(out, array_refdef=ArrayRefDef(ref.index, outer))
    return out


def _rebuild_graphdef(node: Any, paths: tuple) -> GraphDef:
    return GraphDef(node=node, paths=paths)


# A GraphDef is static: a pytree with no leaves, so it can sit in a jitted
# function's arguments (a TrainState's field) as flax.nnx's does.
jax.tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
