"""flax.nnx's ``extract``: :func:`prefix`, specs for a transform's ``in_axes`` /
``out_axes`` / shardings computed from the model itself, and the helpers flax.nnx's
transforms are built from: pytrees of objects as pytrees of states
(``to_tree``/``from_tree``, ``to_tree2``/``from_tree2``, in
:mod:`lens.nnx._mirror.tree_states` and :mod:`lens.nnx._mirror.extract_tree`), prefix broadcasting
and argument tuples (:mod:`lens.nnx._mirror.extract_prefix`), and the Variable updates of
tree-mode transforms (:mod:`lens.nnx._mirror.extract_updates`).

lens's transforms take an object's spec as a :class:`~lens.nnx.StateAxes` (a
filter per group of variables), so ``prefix`` gives one for each object it meets;
plain arrays and Variables outside objects get their value directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import jax

from lens.nnx._graph.mode import set_graph_mode
from lens.nnx._graph.walk import is_graph_node
from lens.nnx._mirror.extract_prefix import ExtractIndex as ExtractIndex
from lens.nnx._mirror.extract_prefix import Index as Index
from lens.nnx._mirror.extract_prefix import KeyPath as KeyPath
from lens.nnx._mirror.extract_prefix import Leaf as Leaf
from lens.nnx._mirror.extract_prefix import Mask as Mask
from lens.nnx._mirror.extract_prefix import OrderedDict as OrderedDict
from lens.nnx._mirror.extract_prefix import Prefix as Prefix
from lens.nnx._mirror.extract_prefix import PrefixMapping as PrefixMapping
from lens.nnx._mirror.extract_prefix import broadcast_prefix as broadcast_prefix
from lens.nnx._mirror.extract_prefix import broadcast_prefix2 as broadcast_prefix2
from lens.nnx._mirror.extract_prefix import broadcast_prefix_map as broadcast_prefix_map
from lens.nnx._mirror.extract_prefix import extract as extract
from lens.nnx._mirror.extract_prefix import filter_kwargs as filter_kwargs
from lens.nnx._mirror.extract_prefix import find as find
from lens.nnx._mirror.extract_prefix import insert as insert
from lens.nnx._mirror.extract_prefix import labeled as labeled
from lens.nnx._mirror.extract_prefix import mask_at as mask_at
from lens.nnx._mirror.extract_prefix import replace_at as replace_at
from lens.nnx._mirror.extract_prefix import slice_at as slice_at
from lens.nnx._mirror.extract_tree import GraphDefState as GraphDefState
from lens.nnx._mirror.extract_tree import Opaque as Opaque
from lens.nnx._mirror.extract_tree import TreeState as TreeState
from lens.nnx._mirror.extract_tree import (
    check_consistent_aliasing2 as check_consistent_aliasing2,
)
from lens.nnx._mirror.extract_tree import check_prefix as check_prefix
from lens.nnx._mirror.extract_tree import from_tree2 as from_tree2
from lens.nnx._mirror.extract_tree import to_tree2 as to_tree2
from lens.nnx._mirror.extract_updates import KeepFn as KeepFn
from lens.nnx._mirror.extract_updates import Updates as Updates
from lens.nnx._mirror.extract_updates import apply_updates as apply_updates
from lens.nnx._mirror.extract_updates import check_no_aliases as check_no_aliases
from lens.nnx._mirror.extract_updates import (
    check_same_variables as check_same_variables,
)
from lens.nnx._mirror.extract_updates import copy_var_structure as copy_var_structure
from lens.nnx._mirror.extract_updates import get_updates as get_updates
from lens.nnx._mirror.extract_updates import snapshot as snapshot
from lens.nnx._mirror.extract_updates import to_masked as to_masked
from lens.nnx._mirror.extract_updates import treemap_copy_args as treemap_copy_args
from lens.nnx._mirror.extract_updates import (
    update_carry_variables as update_carry_variables,
)
from lens.nnx._mirror.extract_updates import variable_changed as variable_changed
from lens.nnx._mirror.tree_states import NodeStates as NodeStates
from lens.nnx._mirror.tree_states import (
    check_consistent_aliasing as check_consistent_aliasing,
)
from lens.nnx._mirror.tree_states import clear_non_graph_nodes as clear_non_graph_nodes
from lens.nnx._mirror.tree_states import default_split_fn as default_split_fn
from lens.nnx._mirror.tree_states import from_tree as from_tree
from lens.nnx._mirror.tree_states import is_tree_node as is_tree_node
from lens.nnx._mirror.tree_states import merge_tree_node as merge_tree_node
from lens.nnx._mirror.tree_states import to_tree as to_tree
from lens.nnx._transforms.prefix_axes import PrefixAxes as PrefixAxes
from lens.nnx._transforms.prefix_axes import axes_by_path, key_path
from lens.nnx._transforms.prefix_axes import tree_prefix_axes as tree_prefix_axes
from lens.nnx.filterlib import to_predicate
from lens.nnx.graphlib import graphdef, iter_graph
from lens.nnx.transforms.general import StateAxes
from lens.nnx.variablelib import Variable


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
