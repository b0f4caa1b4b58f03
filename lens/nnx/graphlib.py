"""The object-graph API (flax.nnx's ``graphlib``, also importable as ``graph``).

A thin public module: the operations (``split``/``merge``/``state``/``clone``/
``graphdef``, ``iter_graph``, ...) are in :mod:`lens.nnx._graph.ops`, ``update``/
``pop``/``iter_children`` in :mod:`lens.nnx._graph.update`, the walk in
:mod:`lens.nnx._graph.walk`, the defs (``GraphDef``, ``NodeDef``, ``VariableDef``,
``NodeRef``, ``Static``, ...) in :mod:`lens.nnx._graph.defs`, the node registry
(``register_graph_node_type``, ``get_node_impl``, ...) in
:mod:`lens.nnx._graph.registry`, the shared-map splits and merges
(``split_context``, ``merge_context``, ``update_context``, ``RefMap``) in
:mod:`lens.nnx._mirror.contexts` (``GRAPH_CONTEXT``/``static_cache`` in
:mod:`lens.nnx._mirror.graph_context`), and ``with_vars``/``as_pure`` in
:mod:`lens.nnx._graph.vars`.
"""

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from lens.nnx._graph.defs import LEAF_ATTR as LEAF_ATTR
from lens.nnx._graph.defs import NO_UPDATE as NO_UPDATE
from lens.nnx._graph.defs import NODE_ATTR as NODE_ATTR
from lens.nnx._graph.defs import REPEATED as REPEATED
from lens.nnx._graph.defs import ArrayRefDef as ArrayRefDef
from lens.nnx._graph.defs import ArrayRefOutput as ArrayRefOutput
from lens.nnx._graph.defs import AttrType as AttrType
from lens.nnx._graph.defs import LeafAttr as LeafAttr
from lens.nnx._graph.defs import NodeAttr as NodeAttr
from lens.nnx._graph.defs import NodeDef as NodeDef
from lens.nnx._graph.defs import NodeDefType as NodeDefType
from lens.nnx._graph.defs import NodeRef as NodeRef
from lens.nnx._graph.defs import NoUpdate as NoUpdate
from lens.nnx._graph.defs import Repeated as Repeated
from lens.nnx._graph.defs import Static as Static
from lens.nnx._graph.defs import VariableDef as VariableDef
from lens.nnx._graph.mode import set_graph_mode as set_graph_mode
from lens.nnx._graph.mode import set_graph_updates as set_graph_updates
from lens.nnx._graph.ops import A as A
from lens.nnx._graph.ops import ApplyCaller as ApplyCaller
from lens.nnx._graph.ops import GraphDef as GraphDef
from lens.nnx._graph.ops import GraphState as GraphState
from lens.nnx._graph.ops import PureState as PureState
from lens.nnx._graph.ops import cached_partial as cached_partial
from lens.nnx._graph.ops import call as call
from lens.nnx._graph.ops import clone as clone
from lens.nnx._graph.ops import find_duplicates as find_duplicates
from lens.nnx._graph.ops import graphdef as graphdef
from lens.nnx._graph.ops import iter_graph as iter_graph
from lens.nnx._graph.ops import map as map  # noqa: A004 - Flax's name
from lens.nnx._graph.ops import merge as merge
from lens.nnx._graph.ops import recursive_map as recursive_map
from lens.nnx._graph.ops import set_metadata as set_metadata
from lens.nnx._graph.ops import split as split
from lens.nnx._graph.ops import state as state
from lens.nnx._graph.ops import unpack as unpack
from lens.nnx._graph.ops import variables as variables
from lens.nnx._graph.registry import GRAPH_REGISTRY as GRAPH_REGISTRY
from lens.nnx._graph.registry import JAX_PYTREE_REGISTRY as JAX_PYTREE_REGISTRY
from lens.nnx._graph.registry import PYTREE_NODE_IMPL as PYTREE_NODE_IMPL
from lens.nnx._graph.registry import PYTREE_REGISTRY as PYTREE_REGISTRY
from lens.nnx._graph.registry import DataElem as DataElem
from lens.nnx._graph.registry import GenericPytree as GenericPytree
from lens.nnx._graph.registry import GraphNodeImpl as GraphNodeImpl
from lens.nnx._graph.registry import IndexesPytreeDef as IndexesPytreeDef
from lens.nnx._graph.registry import NodeImpl as NodeImpl
from lens.nnx._graph.registry import NodeImplBase as NodeImplBase
from lens.nnx._graph.registry import PytreeNodeImpl as PytreeNodeImpl
from lens.nnx._graph.registry import StaticElem as StaticElem
from lens.nnx._graph.registry import _flatten_pytree as _flatten_pytree
from lens.nnx._graph.registry import _key_path_to_key as _key_path_to_key
from lens.nnx._graph.registry import _unflatten_pytree as _unflatten_pytree
from lens.nnx._graph.registry import get_node_impl as get_node_impl
from lens.nnx._graph.registry import get_node_impl_for_type as get_node_impl_for_type
from lens.nnx._graph.registry import is_node as is_node
from lens.nnx._graph.registry import is_node_leaf as is_node_leaf
from lens.nnx._graph.registry import is_node_module as is_node_module
from lens.nnx._graph.registry import is_node_type as is_node_type
from lens.nnx._graph.registry import is_pytree_node as is_pytree_node
from lens.nnx._graph.registry import jax_to_nnx_path as jax_to_nnx_path
from lens.nnx._graph.registry import (
    register_graph_node_type as register_graph_node_type,
)
from lens.nnx._graph.registry import (
    register_pytree_node_type as register_pytree_node_type,
)
from lens.nnx._graph.tree import TreeNodeDef as TreeNodeDef
from lens.nnx._graph.update import graph_pop as graph_pop
from lens.nnx._graph.update import iter_children as iter_children
from lens.nnx._graph.update import iter_module_children as iter_module_children
from lens.nnx._graph.update import pop as pop
from lens.nnx._graph.update import update as update
from lens.nnx._graph.vars import as_pure as as_pure
from lens.nnx._graph.vars import pure as pure
from lens.nnx._graph.vars import vars_as as vars_as
from lens.nnx._graph.vars import with_vars as with_vars
from lens.nnx._graph.walk import Path as Path
from lens.nnx._graph.walk import is_graph_node as is_graph_node
from lens.nnx._mirror.contexts import IndexMap as IndexMap
from lens.nnx._mirror.contexts import MergeContext as MergeContext
from lens.nnx._mirror.contexts import RefMap as RefMap
from lens.nnx._mirror.contexts import SplitContext as SplitContext
from lens.nnx._mirror.contexts import UpdateContext as UpdateContext
from lens.nnx._mirror.contexts import UpdateContextManager as UpdateContextManager
from lens.nnx._mirror.contexts import current_update_context as current_update_context
from lens.nnx._mirror.contexts import flatten as flatten
from lens.nnx._mirror.contexts import merge_context as merge_context
from lens.nnx._mirror.contexts import split_context as split_context
from lens.nnx._mirror.contexts import unflatten as unflatten
from lens.nnx._mirror.contexts import update_context as update_context
from lens.nnx._mirror.graph_context import GRAPH_CONTEXT as GRAPH_CONTEXT
from lens.nnx._mirror.graph_context import GraphContext as GraphContext
from lens.nnx._mirror.graph_context import StaticCache as StaticCache
from lens.nnx._mirror.graph_context import static_cache as static_cache
from lens.nnx._objects.object import Object as Object
from lens.nnx.statelib import FlatState as FlatState
from lens.nnx.statelib import State as State
from lens.nnx.variablelib import Variable as Variable
from lens.typing import Key as Key  # flax.nnx.graph.Key (filters guide: KeyPath)

Index = int  # a node's number in a walk
Names = Sequence[int]
PythonRefMap = RefMap  # flax's name for the pure-Python RefMap (lens has only it)
# What a state leaf may be: lens Variables hold plain arrays (no array refs).
LeafType = Variable | jax.Array | np.ndarray | ArrayRefOutput | NoUpdate
GraphFlatState = FlatState[Any]
