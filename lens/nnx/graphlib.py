"""The object-graph API (flax.nnx's ``graphlib``, also importable as ``graph``).

A thin public module: the operations (``split``/``merge``/``state``/``update``/
``clone``/``graphdef``, ``iter_graph``, ``pop``, ...) are in
:mod:`lens.nnx.graphops`, the walk and the defs (``GraphDef``, ``NodeDef``,
``VariableDef``, ``NodeRef``) in :mod:`lens.nnx.graphwalk`, the shared-map splits
and merges (``split_context``, ``merge_context``, ``update_context``, ``RefMap``)
in :mod:`lens.nnx.graphcontext`, and ``with_vars``/``as_pure`` in
:mod:`lens.nnx.graphvars`.
"""

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
from lens.nnx.graphops import pop as pop
from lens.nnx.graphops import recursive_map as recursive_map
from lens.nnx.graphops import set_metadata as set_metadata
from lens.nnx.graphops import split as split
from lens.nnx.graphops import state as state
from lens.nnx.graphops import unpack as unpack
from lens.nnx.graphops import update as update
from lens.nnx.graphops import variables as variables
from lens.nnx.graphtree import TreeNodeDef as TreeNodeDef
from lens.nnx.graphvars import as_pure as as_pure
from lens.nnx.graphvars import pure as pure
from lens.nnx.graphvars import vars_as as vars_as
from lens.nnx.graphvars import with_vars as with_vars
from lens.nnx.graphwalk import NodeDef as NodeDef
from lens.nnx.graphwalk import Path as Path
from lens.nnx.graphwalk import Ref
from lens.nnx.graphwalk import VariableDef as VariableDef
from lens.nnx.graphwalk import is_graph_node as is_graph_node
from lens.nnx.pytreelib import Object as Object
from lens.nnx.statelib import FlatState as FlatState
from lens.nnx.statelib import State as State
from lens.nnx.variablelib import Variable as Variable
from lens.typing import Key as Key  # flax.nnx.graph.Key (filters guide: KeyPath)

NodeRef = Ref  # flax.nnx's name for a node met before in the same walk
