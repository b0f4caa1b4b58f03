"""flax.nnx's ``extract.to_tree2`` / ``from_tree2`` and the prefix checks of its
tree-mode transforms (exported by :mod:`lens.nnx.extract`).

``to_tree2(tree)`` replaces each object and Variable of a pytree by a
:class:`TreeState` (its GraphDef, static, and its State, the pytree leaves), all
flattened with one shared ref map, so an object reached twice becomes a
``NodeRef`` the second time and is one object again after ``from_tree2``. The
State holds the objects' own Variables: ``from_tree2(to_tree2(x))`` rebuilds the
objects around them. With a ``prefix`` (``in_axes``-like) the same Variable under
two prefixes is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

import jax

from lens import struct
from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import GraphDef
from lens.nnx._graph.mode import set_graph_mode
from lens.nnx._graph.ops import (
    VariableBuilder,
    as_state,
    graphdef,
    graphdef_leaves,
    iter_graph,
)
from lens.nnx._graph.tree import key_of
from lens.nnx._graph.walk import VariableDef, is_graph_node
from lens.nnx._mirror.contexts import IndexMap, RefMap, flatten
from lens.nnx._mirror.extract_prefix import PrefixMapping, broadcast_prefix
from lens.nnx._mirror.tree_states import Missing
from lens.nnx._transforms.modes import TransformMode
from lens.nnx._transforms.modes import check_prefix as _check_transform_prefix
from lens.nnx._transforms.prefix_axes import PrefixAxes, axes_by_path, key_path
from lens.nnx._transforms.specs import StateAxes
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Variable

A = TypeVar("A")


@dataclasses.dataclass(frozen=True, slots=True)
class Opaque(Generic[A]):
    """A static value that never changes a pytree's structure: all Opaques are
    equal and hash alike (a ``prefix_fn`` kept in a TreeState's static data)."""

    value: A

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return 0


class TreeState:
    """flax.nnx's tree of a graph node's state with its graphdef: the pytree
    ``to_tree2`` makes of an object (``__state__`` the child, ``graphdef`` and
    ``prefix_fn`` static). What ``prefix(graph=True)`` returns is also one, its
    ``state`` holding the prefixes by attribute."""

    def __init__(
        self,
        graphdef: Any = None,
        __state__: Any = None,
        prefix_fn: Any = Opaque(None),  # noqa: B008 - immutable, flax's default
    ):
        self.graphdef = graphdef
        self.__state__ = __state__
        self.prefix_fn = prefix_fn

    @property
    def state(self) -> Any:
        return self.__state__

    def replace(self, **kwargs: Any) -> TreeState:
        """A copy with the given fields replaced."""
        fields = {
            "graphdef": self.graphdef,
            "__state__": self.__state__,
            "prefix_fn": self.prefix_fn,
        }
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(
                f"TreeState has no field {sorted(unknown)[0]!r}.\nIts fields are "
                "graphdef, __state__ and prefix_fn."
            )
        return TreeState(**{**fields, **kwargs})

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (
            (self.graphdef, self.__state__, self.prefix_fn)
            == (other.graphdef, other.__state__, other.prefix_fn)  # type: ignore[attr-defined]
        )

    __hash__ = None  # type: ignore[assignment] - mutable fields, as a dataclass

    def __repr__(self) -> str:
        return (
            f"TreeState(graphdef={self.graphdef!r}, __state__={self.__state__!r}, "
            f"prefix_fn={self.prefix_fn!r})"
        )


jax.tree_util.register_pytree_with_keys(
    TreeState,
    lambda t: (
        [(jax.tree_util.GetAttrKey("__state__"), t.__state__)],
        (t.graphdef, t.prefix_fn),
    ),
    lambda aux, children: TreeState(aux[0], next(iter(children)), aux[1]),
    lambda t: ([t.__state__], (t.graphdef, t.prefix_fn)),
)


class GraphDefState(struct.PyTreeNode):
    """A GraphDef (static) and a State (the pytree child)."""

    graphdef: GraphDef = struct.field(pytree_node=False)
    state: State = struct.field(pytree_node=True)


def _is_node(x: Any) -> bool:
    return isinstance(x, Variable) or is_graph_node(x)


def _nnx_path(keypath: Any) -> tuple:
    return tuple(key_of(k) for k in keypath)


def _path_repr(path: tuple) -> str:
    return "/".join(map(str, path)) if path else "<root>"


def _leaf_prefix(prefix: Any, path: tuple, value: Variable) -> Any:
    """The prefix of the Variable at ``path`` of an object whose prefix is
    ``prefix`` (a TreeState's ``prefix_fn`` gives one per Variable)."""
    if not isinstance(prefix, TreeState):
        return prefix
    if isinstance(prefix, StateAxes):  # nnx.prefix(graph=True)'s result
        return prefix.map_prefix(path, value)
    fn = prefix.prefix_fn
    fn = fn.value if isinstance(fn, Opaque) else fn
    if not callable(fn):
        raise ValueError(
            "When passing a TreeState object as a prefix (e.g. for `in_axes`), it "
            "must have been produced by `nnx.prefix()` or contain a callable in "
            "`TreeState.metadata` with signature `(path: tuple[Any, ...], value: "
            f"Variable) -> Any`. Got metadata of type {type(fn).__name__}.\nBuild "
            "the prefix with nnx.prefix(node, filter_map, graph=True)."
        )
    return fn(path, value)


def _unique(prefixes: list[Any]) -> int:
    keys = set()
    for p in prefixes:
        try:
            keys.add(p)
        except TypeError:
            keys.add(("unhashable", repr(p)))
    return len(keys)


def check_consistent_aliasing2(
    node: Any,
    prefix: Any,
    /,
    *,
    base_path: tuple[Any, ...] = (),
    node_prefixes: dict[int, list[tuple[tuple, Any]]],
) -> None:
    """Records the prefix of every Variable of ``node`` (at ``base_path``) in
    ``node_prefixes`` (Variable id -> ``[(path, prefix)]``, shared between calls)
    and checks that each Variable met so far has had one prefix.

    Raises:
        ValueError: a Variable is reached under two different prefixes.
    """
    variables: dict[int, Variable] = {}
    for local_path, value in iter_graph(node, graph=True):
        if isinstance(value, Variable):
            variables[id(value)] = value
            entry = (
                base_path + tuple(local_path),
                _leaf_prefix(prefix, local_path, value),
            )
            node_prefixes.setdefault(id(value), []).append(entry)
    msgs = []
    for key, entries in node_prefixes.items():
        if _unique([p for _, p in entries]) > 1:
            kind = (
                type(variables[key]).__name__ if key in variables else f"Node ID: {key}"
            )
            lines = "\n".join(f"  {_path_repr(path)}: {p}" for path, p in entries)
            msgs.append(f"Node: {kind}\n{lines}")
    if msgs:
        raise ValueError(
            "Inconsistent aliasing detected. The following nodes have different "
            "prefixes:\n" + "\n".join(msgs) + "\nA Variable reached twice must get "
            "the same prefix each time: give every alias the same prefix."
        )


def to_tree2(
    tree: Any,
    /,
    *,
    prefix: Any = Missing,
    check_aliasing: bool = True,
    prefix_fn: Callable[[tuple, Any], Any] | None = None,
) -> Any:
    """``tree`` with each object and Variable replaced by its :class:`TreeState`
    (one shared ref map: a second reach is a ``NodeRef``). With ``prefix`` (a tree
    prefix of ``tree``) and ``check_aliasing``, each Variable must get one prefix.

    Raises:
        ValueError: ``prefix`` is not a tree prefix of ``tree``, or a Variable gets
            two different prefixes.
    """
    ref_index = RefMap()

    def to_state(leaf: Any) -> Any:
        if not _is_node(leaf):
            return leaf
        graphdef, flat = flatten(leaf, ref_index=ref_index, graph=True)
        return TreeState(graphdef, as_state(dict(flat)), Opaque(prefix_fn))

    if prefix is Missing or prefix is None:
        return jax.tree.map(to_state, tree, is_leaf=_is_node)
    prefixes = broadcast_prefix(
        prefix,
        tree,
        prefix_is_leaf=lambda x: x is None or isinstance(x, TreeState),
        tree_is_leaf=_is_node,
    )
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_node)
    node_prefixes: dict[int, list[tuple[tuple, Any]]] = {}
    out = []
    for (keypath, leaf), leaf_prefix in zip(leaves, prefixes, strict=True):
        if _is_node(leaf) and check_aliasing:
            check_consistent_aliasing2(
                leaf,
                leaf_prefix,
                base_path=_nnx_path(keypath),
                node_prefixes=node_prefixes,
            )
        out.append(to_state(leaf))
    return jax.tree.unflatten(treedef, out)


class _Builder(VariableBuilder):
    """merge's builder, sharing its node table between calls; with
    ``recreate_variables=False`` a raw value stays a raw value."""

    def __init__(self, values: Any, nodes: dict[int, Any], recreate: bool):
        super().__init__(values)
        self.nodes = nodes
        self.recreate = recreate

    def build(self, d: Any) -> Any:
        if not self.recreate and isinstance(d, VariableDef):
            leaf = next(self.values)
            self.variable_built(d, leaf, leaf)
            return leaf
        return super().build(d)


def from_tree2(tree: Any, /, recreate_variables: bool = True) -> Any:
    """The inverse of :func:`to_tree2`: each :class:`TreeState` rebuilt (one shared
    index map: a ``NodeRef`` is the object built before). The States' Variables
    are put in as they are; a raw value becomes a new Variable, or stays a raw
    value with ``recreate_variables=False``."""
    nodes = IndexMap()

    def build(x: Any) -> Any:
        if not isinstance(x, TreeState):
            return x
        graphdef = x.graphdef
        leaves = graphdef_leaves(graphdef, (x.state,)) if graphdef.paths else []
        return _Builder(iter(leaves), nodes, recreate_variables).build(graphdef.node)

    return jax.tree.map(
        build, tree, is_leaf=lambda x: isinstance(x, TreeState) or _is_node(x)
    )


def _tree_state_error(where: str, prefix_name: str, fn: str, updates: bool) -> str:
    msg = (
        f"Found `TreeState` object {where} in `{prefix_name}` for nnx.{fn}. "
        "`TreeState` objects are only allowed as prefixes when `graph=True` and "
        "`graph_updates=False`.\nPass graph=True and graph_updates=False to "
        f"nnx.{fn}"
    )
    if updates:
        msg += ", or build the prefix with nnx.prefix(..., graph=False)"
    return msg + "."


def _foreign(x: Any) -> bool:
    """A TreeState or PrefixMapping that is not one of lens's specs."""
    return isinstance(x, PrefixMapping | TreeState) and not isinstance(x, StateAxes)


def check_prefix(
    prefix: Any,
    prefix_name: str,
    fn_name: str,
    graph: bool,
    graph_updates: bool,
    none_leaf: bool = True,
) -> list[Any]:
    """Checks a transform's prefix (``in_axes``, ``in_shardings``, ...) for
    ``nnx.<fn_name>(..., graph=graph, graph_updates=graph_updates)``, by the rules
    lens's transforms apply, and returns its distinct leaves (None among them
    when ``none_leaf``).

    Raises:
        ValueError: a Variable in the prefix; a per-Variable prefix
            (``StateAxes``, another :class:`PrefixMapping`) outside
            ``graph=True, graph_updates=True``; an object in graph mode; a
            :class:`TreeState` not made by ``nnx.prefix`` outside ``graph=True,
            graph_updates=False``.
    """
    mode = TransformMode(fn_name, bool(graph), bool(graph_updates))

    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, PrefixMapping | TreeState) or _is_node(x)

    # lens's rules for its own specs (a TreeState is one prefix: not entered)
    own = jax.tree.map(lambda x: None if _foreign(x) else x, prefix, is_leaf=is_leaf)
    _check_transform_prefix(own, prefix_name, mode)
    for kp, leaf in jax.tree_util.tree_flatten_with_path(prefix, is_leaf=is_leaf)[0]:
        where = f"at path {jax.tree_util.keystr(kp)}"
        if not _foreign(leaf):
            continue
        kind = type(leaf).__name__
        if isinstance(leaf, PrefixMapping) and mode.simple:
            raise ValueError(
                f"`{prefix_name}` cannot contain `{kind}` objects when "
                f"`graph=False` or `graph_updates=False`.\nRemove the {kind} from "
                f"`{prefix_name}`, or use nnx.{fn_name}(..., graph=True, "
                f"graph_updates=True) (or nnx.compat.{fn_name})."
            )
        if isinstance(leaf, TreeState) and (not graph or graph_updates):
            raise ValueError(
                _tree_state_error(where, prefix_name, fn_name, bool(graph_updates))
            )
    leaves = jax.tree.leaves(prefix, is_leaf=lambda x: x is None and none_leaf)
    unique: list[Any] = []
    for leaf in leaves:
        if leaf not in unique:
            unique.append(leaf)
    return unique


# ``prefix``: a transform's specs computed from the model itself (flax.nnx.extract's)


def _prefix_fn(filter_map: Mapping[Any, Any] | Callable[..., Any]) -> Callable:
    if not isinstance(filter_map, Mapping):
        return filter_map
    predicates = [(to_predicate(f), v) for f, v in filter_map.items()]

    def prefix_fn(path: tuple, leaf: Any) -> Any:
        for predicate, value in predicates:
            if predicate(path, leaf):
                return value
        raise ValueError(
            f"No filter matched leaf at path {path!r} with value {leaf!r}. "
            f"Filters: {list(filter_map)}\nEnd the mapping with ...: <prefix> "
            "for the rest."
        )

    return prefix_fn


class _GraphPrefixAxes(PrefixAxes, TreeState):
    """``prefix(..., graph=True)``'s result: a :class:`PrefixAxes` and a
    :class:`TreeState`."""


def _object_axes(node: Any, prefix_fn: Callable[..., Any]) -> StateAxes:
    """One object's spec (graph mode): its variables grouped by the prefix each
    gets; also flax's TreeState (graphdef, prefixes by attribute, prefix_fn)."""
    by_path = {
        path: prefix_fn(path, value)
        for path, value in iter_graph(node)
        if isinstance(value, Variable)
    }
    axes = cast(_GraphPrefixAxes, axes_by_path(by_path, _GraphPrefixAxes))
    TreeState.__init__(axes, graphdef(node), axes.state, Opaque(prefix_fn))
    return axes


def prefix(
    node: Any,
    filter_map: Mapping[Any, Any] | Callable[..., Any],
    /,
    *,
    graph: bool | None = None,
) -> Any:
    """Specs for a transform, computed from ``node``'s variables (flax.nnx's).

    ``filter_map`` is ``(path, leaf) -> prefix`` or a mapping from filter to prefix
    (the first filter that matches wins). In graph mode each object in ``node``
    becomes a :class:`StateAxes` of its variables' prefixes (also flax's
    :class:`TreeState`, its ``state`` the prefixes by attribute); in tree mode
    (``graph=False``) the result is ``node``'s own pytree with each Variable
    replaced by its prefix, as flax.nnx's (``jax.vmap`` takes it too). A Variable
    or array outside an object becomes its prefix.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens import nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> nnx.prefix(model, {nnx.PathContains("kernel"): 0, ...: None})
        StateAxes({AtPaths(('bias',),): None, AtPaths(('kernel',),): 0})
    """
    graph_mode = set_graph_mode.current_value() if graph is None else graph
    fn = _prefix_fn(filter_map)
    is_variable = lambda x: isinstance(x, Variable)  # noqa: E731
    if not graph_mode:
        # flax's tree mode: the node's own pytree with each Variable (and any
        # other leaf) replaced by its prefix, a pytree prefix of the node (JAX's
        # transforms take it; lens's read it by tree_prefix_axes)
        return jax.tree.map_with_path(
            lambda p, x: fn(key_path(p), x), node, is_leaf=is_variable
        )

    # graph mode: each object becomes a StateAxes of its variables' prefixes
    # (also a TreeState, as flax's result)
    def leaf(path: Any, x: Any) -> Any:
        if is_graph_node(x) and not isinstance(x, Variable):
            return _object_axes(x, fn)
        return fn(key_path(path), x)

    is_leaf = lambda x: is_graph_node(x) or is_variable(x)  # noqa: E731
    return jax.tree.map_with_path(leaf, node, is_leaf=is_leaf)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
