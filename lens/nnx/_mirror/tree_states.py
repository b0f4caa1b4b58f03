"""Pytrees of objects as pytrees of states and back (flax.nnx's ``to_tree`` /
``from_tree`` / ``NodeStates``, exported by :mod:`lens.nnx.extract`).

``to_tree(tree)`` replaces every object and Variable in ``tree`` by a
:class:`NodeStates` (its GraphDef, static, and its States, the pytree leaves), all
split in one ``split_context`` so that an object reached twice is one object again
after ``from_tree``. With ``ctxtag`` (inside ``nnx.update_context``) the objects
that went into a transform come back updated. A ``prefix`` (``in_axes``-like) is
broadcast over the tree; the same Variable under two prefixes is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import GraphDef
from lens.nnx._graph.ops import iter_graph
from lens.nnx._graph.walk import is_graph_node, path_str
from lens.nnx._mirror.contexts import MergeContext, SplitContext, merge_context
from lens.nnx._mirror.contexts import split_context as _split_context
from lens.nnx._variables.variable import Variable

Missing = object()  # no prefix given


def _is_node(x: Any) -> bool:
    return is_graph_node(x) or isinstance(x, Variable)


@dataclasses.dataclass(frozen=True)
class NodeStates:
    """An object as its GraphDef (static) and its States (the pytree children);
    ``metadata`` is static too (a split function's prefix, say)."""

    _graphdef: GraphDef | None
    states: tuple[Any, ...]
    metadata: Any = None

    def replace(self, **updates: Any) -> NodeStates:
        """A copy with ``updates`` (flax.nnx's is a ``struct.PyTreeNode``)."""
        return dataclasses.replace(self, **updates)

    @property
    def graphdef(self) -> GraphDef:
        """The GraphDef; ValueError for NodeStates made from prefixes only."""
        if self._graphdef is None:
            raise ValueError(
                "No graphdef available\nThese NodeStates were made with "
                "from_states/from_prefixes; use from_split for a GraphDef."
            )
        return self._graphdef

    @property
    def state(self) -> Any:
        """The one State (ValueError when there are several)."""
        if len(self.states) != 1:
            raise ValueError(
                f"Expected exactly one GraphDefState, got {len(self.states)}\n"
                "Use .states for NodeStates split with filters."
            )
        return self.states[0]

    @classmethod
    def from_split(
        cls,
        graphdef: GraphDef | None,
        state: Any,
        /,
        *states: Any,
        metadata: Any = None,
    ) -> NodeStates:
        """From ``split``'s results: ``NodeStates.from_split(*ctx.split(x))``."""
        return cls(graphdef, (state, *states), metadata)

    @classmethod
    def from_states(cls, state: Any, *states: Any) -> NodeStates:
        """States without a GraphDef."""
        return cls(None, (state, *states), None)

    @classmethod
    def from_prefixes(cls, prefixes: Iterable[Any], /, *, metadata: Any = None):
        """A prefix per State (an ``in_axes`` entry for a split object)."""
        return cls(None, tuple(prefixes), metadata)


# As flax.nnx's: the GraphDef is a child (a pytree with no leaves, so an
# ``in_axes`` prefix may put None there), ``metadata`` is static.
jax.tree_util.register_pytree_with_keys(
    NodeStates,
    lambda n: (
        [
            (jax.tree_util.GetAttrKey("_graphdef"), n._graphdef),
            (jax.tree_util.GetAttrKey("states"), n.states),
        ],
        n.metadata,
    ),
    lambda metadata, children: _unflatten(metadata, *children),
    lambda n: ([n._graphdef, n.states], n.metadata),
)


def _unflatten(metadata: Any, graphdef: Any, states: Any) -> NodeStates:
    return NodeStates(graphdef, states, metadata)


def default_split_fn(ctx: SplitContext, path: Any, prefix: Any, leaf: Any) -> Any:
    """``to_tree``'s default: the whole object as one State."""
    return NodeStates.from_split(*ctx.split(leaf))


def merge_tree_node(ctx: MergeContext, path: Any, prefix: Any, leaf: Any) -> Any:
    """``from_tree``'s default: the object a :class:`NodeStates` stands for."""
    if not isinstance(leaf, NodeStates):
        raise ValueError(
            f"Expected TreeNode, got {type(leaf)} at path {path}\nfrom_tree "
            "takes what to_tree returned."
        )
    return ctx.merge(leaf.graphdef, *leaf.states)


def is_tree_node(x: Any) -> bool:
    """Whether ``x`` is a :class:`NodeStates`."""
    return isinstance(x, NodeStates)


def check_consistent_aliasing(
    node: Any, prefix: Any, /, *, node_prefixes: dict[int, list] | None = None
) -> None:
    """Every Variable of ``node`` gets ``prefix``; one met before (recorded in
    ``node_prefixes``) must have had the same prefix.

    Raises:
        ValueError: a Variable is reached under two different prefixes.
    """
    seen = {} if node_prefixes is None else node_prefixes
    variables: dict[int, Variable] = {}
    for path, value in iter_graph(node):
        if isinstance(value, Variable):
            variables[id(value)] = value
            seen.setdefault(id(value), []).append((path, prefix))
    msgs = []
    for key, entries in seen.items():
        if key in variables and len({repr(p) for _, p in entries}) > 1:
            lines = "\n".join(f"  {path_str(p)}: {pre}" for p, pre in entries)
            msgs.append(f"Node: {type(variables[key]).__name__}\n{lines}")
    if msgs:
        raise ValueError(
            "Inconsistent aliasing detected. The following nodes have different "
            "prefixes:\n" + "\n".join(msgs) + "\nGive every alias the same prefix."
        )


def _broadcast(prefix: Any, tree: Any, is_leaf: Callable[[Any], bool]) -> list[Any]:
    """One prefix per leaf of ``tree`` (``prefix`` is a tree prefix of it)."""
    out: list[Any] = []

    def add(p: Any, sub: Any) -> None:
        out.extend([p] * jax.tree.structure(sub, is_leaf=is_leaf).num_leaves)

    jax.tree.map(add, prefix, tree, is_leaf=lambda x: x is None or is_leaf(x))
    return out


def to_tree(
    tree: Any,
    /,
    *,
    prefix: Any = Missing,
    split_fn: Callable[[SplitContext, Any, Any, Any], Any] = default_split_fn,
    map_non_graph_nodes: bool = False,
    ctxtag: Hashable | None = None,
    check_aliasing: bool = True,
) -> Any:
    """``tree`` with each object or Variable replaced by ``split_fn(ctx, keypath,
    prefix, node)`` (default: its :class:`NodeStates`), all in one
    ``split_context(ctxtag)``; ``map_non_graph_nodes`` applies it to other leaves
    too."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_node)
    if prefix is Missing or prefix is None:
        prefixes = [prefix] * len(leaves)
    else:
        prefixes = _broadcast(prefix, tree, _is_node)
    out = []
    node_prefixes: dict[int, list] = {}
    with _split_context(ctxtag) as ctx:
        for (keypath, leaf), leaf_prefix in zip(leaves, prefixes, strict=True):
            if _is_node(leaf):
                if check_aliasing and prefix is not Missing and prefix is not None:
                    check_consistent_aliasing(
                        leaf, leaf_prefix, node_prefixes=node_prefixes
                    )
                leaf = split_fn(ctx, keypath, leaf_prefix, leaf)
            elif map_non_graph_nodes:
                leaf = split_fn(ctx, keypath, leaf_prefix, leaf)
            out.append(leaf)
    return jax.tree.unflatten(treedef, out)


def from_tree(
    tree: Any,
    /,
    *,
    prefix: Any = Missing,
    merge_fn: Callable[[MergeContext, Any, Any, Any], Any] = merge_tree_node,
    is_node_leaf: Callable[[Any], bool] = is_tree_node,
    is_leaf: Callable[[Any], bool] = is_tree_node,
    map_non_graph_nodes: bool = False,
    is_inner: bool | None = None,
    ctxtag: Hashable | None = None,
) -> Any:
    """The inverse of :func:`to_tree`: each :class:`NodeStates` merged back, all in
    one ``merge_context(ctxtag, is_inner)``."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    if prefix is Missing or prefix is None:
        prefixes = [prefix] * len(leaves)
    else:
        prefixes = _broadcast(prefix, tree, is_leaf)
    out = []
    with merge_context(ctxtag, is_inner) as ctx:
        for (keypath, leaf), leaf_prefix in zip(leaves, prefixes, strict=True):
            if map_non_graph_nodes or is_node_leaf(leaf) or isinstance(leaf, Variable):
                leaf = merge_fn(ctx, keypath, leaf_prefix, leaf)
            out.append(leaf)
    return jax.tree.unflatten(treedef, out)


def clear_non_graph_nodes(tree: Any) -> Any:
    """``tree`` with every leaf that is not an object or Variable set to None."""
    return jax.tree.map(lambda x: x if _is_node(x) else None, tree, is_leaf=_is_node)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
