"""The object-graph API (flax.nnx's ``graphlib``, also importable as ``graph``).

A thin public module: the operations (``split``/``merge``/``state``/``clone``/
``graphdef``, ``iter_graph``, ...) are in :mod:`lens.nnx.graphops`, ``update``/
``pop``/``iter_children`` in :mod:`lens.nnx.graphupdate`, the walk in
:mod:`lens.nnx.graphwalk`, the defs (``GraphDef``, ``NodeDef``, ``VariableDef``,
``NodeRef``, ``Static``, ...) in :mod:`lens.nnx.graphdefs`, the node registry
(``register_graph_node_type``, ``get_node_impl``, ...) in
:mod:`lens.nnx.graph_registry`, the shared-map splits and merges
(``split_context``, ``merge_context``, ``update_context``, ``RefMap``) in
:mod:`lens.nnx.graphcontext` (``GRAPH_CONTEXT``/``static_cache`` in
:mod:`lens.nnx.graphcache`), and ``with_vars``/``as_pure`` in
:mod:`lens.nnx.graphvars`.
"""

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from lens.nnx.graph_registry import GRAPH_REGISTRY as GRAPH_REGISTRY
from lens.nnx.graph_registry import JAX_PYTREE_REGISTRY as JAX_PYTREE_REGISTRY
from lens.nnx.graph_registry import PYTREE_NODE_IMPL as PYTREE_NODE_IMPL
from lens.nnx.graph_registry import PYTREE_REGISTRY as PYTREE_REGISTRY
from lens.nnx.graph_registry import DataElem as DataElem
from lens.nnx.graph_registry import GenericPytree as GenericPytree
from lens.nnx.graph_registry import GraphNodeImpl as GraphNodeImpl
from lens.nnx.graph_registry import IndexesPytreeDef as IndexesPytreeDef
from lens.nnx.graph_registry import NodeImpl as NodeImpl
from lens.nnx.graph_registry import NodeImplBase as NodeImplBase
from lens.nnx.graph_registry import PytreeNodeImpl as PytreeNodeImpl
from lens.nnx.graph_registry import StaticElem as StaticElem
from lens.nnx.graph_registry import _flatten_pytree as _flatten_pytree
from lens.nnx.graph_registry import _key_path_to_key as _key_path_to_key
from lens.nnx.graph_registry import _unflatten_pytree as _unflatten_pytree
from lens.nnx.graph_registry import get_node_impl as get_node_impl
from lens.nnx.graph_registry import get_node_impl_for_type as get_node_impl_for_type
from lens.nnx.graph_registry import is_node as is_node
from lens.nnx.graph_registry import is_node_leaf as is_node_leaf
from lens.nnx.graph_registry import is_node_module as is_node_module
from lens.nnx.graph_registry import is_node_type as is_node_type
from lens.nnx.graph_registry import is_pytree_node as is_pytree_node
from lens.nnx.graph_registry import jax_to_nnx_path as jax_to_nnx_path
from lens.nnx.graph_registry import register_graph_node_type as register_graph_node_type
from lens.nnx.graph_registry import (
    register_pytree_node_type as register_pytree_node_type,
)
from lens.nnx.graphcache import GRAPH_CONTEXT as GRAPH_CONTEXT
from lens.nnx.graphcache import GraphContext as GraphContext
from lens.nnx.graphcache import StaticCache as StaticCache
from lens.nnx.graphcache import static_cache as static_cache
from lens.nnx.graphcontext import IndexMap as IndexMap
from lens.nnx.graphcontext import MergeContext as MergeContext
from lens.nnx.graphcontext import RefMap as RefMap
from lens.nnx.graphcontext import SplitContext as SplitContext
from lens.nnx.graphcontext import UpdateContext as UpdateContext
from lens.nnx.graphcontext import UpdateContextManager as UpdateContextManager
from lens.nnx.graphcontext import current_update_context as current_update_context
from lens.nnx.graphcontext import flatten as flatten
from lens.nnx.graphcontext import merge_context as merge_context
from lens.nnx.graphcontext import split_context as split_context
from lens.nnx.graphcontext import unflatten as unflatten
from lens.nnx.graphcontext import update_context as update_context
from lens.nnx.graphdefs import LEAF_ATTR as LEAF_ATTR
from lens.nnx.graphdefs import NO_UPDATE as NO_UPDATE
from lens.nnx.graphdefs import NODE_ATTR as NODE_ATTR
from lens.nnx.graphdefs import REPEATED as REPEATED
from lens.nnx.graphdefs import ArrayRefDef as ArrayRefDef
from lens.nnx.graphdefs import ArrayRefOutput as ArrayRefOutput
from lens.nnx.graphdefs import AttrType as AttrType
from lens.nnx.graphdefs import LeafAttr as LeafAttr
from lens.nnx.graphdefs import NodeAttr as NodeAttr
from lens.nnx.graphdefs import NodeDef as NodeDef
from lens.nnx.graphdefs import NodeDefType as NodeDefType
from lens.nnx.graphdefs import NodeRef as NodeRef
from lens.nnx.graphdefs import NoUpdate as NoUpdate
from lens.nnx.graphdefs import Repeated as Repeated
from lens.nnx.graphdefs import Static as Static
from lens.nnx.graphdefs import VariableDef as VariableDef
from lens.nnx.graphmode import set_graph_mode as set_graph_mode
from lens.nnx.graphmode import set_graph_updates as set_graph_updates
from lens.nnx.graphops import A as A
from lens.nnx.graphops import ApplyCaller as ApplyCaller
from lens.nnx.graphops import GraphDef as GraphDef
from lens.nnx.graphops import GraphState as GraphState
from lens.nnx.graphops import PureState as PureState
from lens.nnx.graphops import cached_partial as cached_partial
from lens.nnx.graphops import call as call
from lens.nnx.graphops import clone as clone
from lens.nnx.graphops import find_duplicates as find_duplicates
from lens.nnx.graphops import graphdef as graphdef
from lens.nnx.graphops import iter_graph as iter_graph
from lens.nnx.graphops import map as map  # noqa: A004 - Flax's name
from lens.nnx.graphops import merge as merge
from lens.nnx.graphops import recursive_map as recursive_map
from lens.nnx.graphops import set_metadata as set_metadata
from lens.nnx.graphops import split as split
from lens.nnx.graphops import state as state
from lens.nnx.graphops import unpack as unpack
from lens.nnx.graphops import variables as variables
from lens.nnx.graphtree import TreeNodeDef as TreeNodeDef
from lens.nnx.graphupdate import graph_pop as graph_pop
from lens.nnx.graphupdate import iter_children as iter_children
from lens.nnx.graphupdate import iter_module_children as iter_module_children
from lens.nnx.graphupdate import pop as pop
from lens.nnx.graphupdate import update as update
from lens.nnx.graphvars import as_pure as as_pure
from lens.nnx.graphvars import pure as pure
from lens.nnx.graphvars import vars_as as vars_as
from lens.nnx.graphvars import with_vars as with_vars
from lens.nnx.graphwalk import Path as Path
from lens.nnx.graphwalk import is_graph_node as is_graph_node
from lens.nnx.pytreelib import Object as Object
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
