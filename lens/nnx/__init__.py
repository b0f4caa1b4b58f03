"""Eager modules with JAX-style transforms (``lens.nnx``).

Modules here are ordinary Python objects: built eagerly (``Linear(2, 3,
rngs=nnx.Rngs(0))`` holds its parameters), mutated in place, shared by reference.
``split``/``merge``/``state``/``update`` move between a module and its
:class:`State` (a pytree), and the transforms take modules as JAX transforms take
pytrees:

>>> import jax.numpy as jnp
>>> from lens import nnx
>>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
>>> grads = nnx.grad(lambda m, x: jnp.sum(m(x) ** 2))(model, jnp.ones((1, 2)))
>>> sorted(grads)
['bias', 'kernel']

``vmap``'s ``in_axes`` maps each module argument on its own axis, and the Lift types
refine that inside one module (``StateAxes``, ``DiffState``); ``split_rngs`` gives a
mapped call its own keys; every alias of one object must be lifted the same way.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names, each once (``as`` marks it re-exported for type checkers); at
# run time each loads on first use and ``__all__`` is these names (lens/_lazy.py),
# so `import lens.nnx` stays cheap.
if TYPE_CHECKING:
    from lens.core.spmd import logical_axis_rules as logical_axis_rules
    from lens.nn.activation import celu as celu
    from lens.nn.activation import elu as elu
    from lens.nn.activation import gelu as gelu
    from lens.nn.activation import glu as glu
    from lens.nn.activation import hard_sigmoid as hard_sigmoid
    from lens.nn.activation import hard_silu as hard_silu
    from lens.nn.activation import hard_swish as hard_swish
    from lens.nn.activation import hard_tanh as hard_tanh
    from lens.nn.activation import leaky_relu as leaky_relu
    from lens.nn.activation import log_sigmoid as log_sigmoid
    from lens.nn.activation import log_softmax as log_softmax
    from lens.nn.activation import logsumexp as logsumexp
    from lens.nn.activation import one_hot as one_hot
    from lens.nn.activation import relu as relu
    from lens.nn.activation import relu6 as relu6
    from lens.nn.activation import selu as selu
    from lens.nn.activation import sigmoid as sigmoid
    from lens.nn.activation import silu as silu
    from lens.nn.activation import soft_sign as soft_sign
    from lens.nn.activation import softmax as softmax
    from lens.nn.activation import softplus as softplus
    from lens.nn.activation import standardize as standardize
    from lens.nn.activation import swish as swish
    from lens.nn.activation import tanh as tanh
    from lens.nn.attention import combine_masks as combine_masks
    from lens.nn.attention import make_attention_mask as make_attention_mask
    from lens.nn.attention import make_causal_mask as make_causal_mask
    from lens.nn.pooling import avg_pool as avg_pool
    from lens.nn.pooling import max_pool as max_pool
    from lens.nn.pooling import min_pool as min_pool
    from lens.nn.pooling import pool as pool
    from lens.nnx import bridge as bridge
    from lens.nnx import compat as compat
    from lens.nnx import extract as extract
    from lens.nnx import filterlib as filterlib
    from lens.nnx import graph as graph
    from lens.nnx import graphlib as graphlib
    from lens.nnx import helpers as helpers
    from lens.nnx import ids as ids
    from lens.nnx import module as module
    from lens.nnx import nn as nn
    from lens.nnx import pytreelib as object
    from lens.nnx import pytreelib as pytreelib
    from lens.nnx import reprlib as reprlib
    from lens.nnx import rnglib as rnglib
    from lens.nnx import spmd as spmd
    from lens.nnx import statelib as statelib
    from lens.nnx import summary as summary
    from lens.nnx import training as training
    from lens.nnx import transforms as transforms
    from lens.nnx import traversals as traversals
    from lens.nnx import variablelib as variablelib
    from lens.nnx import visualization as visualization
    from lens.nnx._graph.walk import GraphDef as GraphDef
    from lens.nnx._objects.containers import Dict as Dict
    from lens.nnx._objects.containers import List as List
    from lens.nnx._objects.containers import Sequential as Sequential
    from lens.nnx._objects.containers import TrainState as TrainState
    from lens.nnx._objects.object import Data as Data
    from lens.nnx._objects.object import Object as Object
    from lens.nnx._objects.object import Object as Pytree
    from lens.nnx._objects.object import Static as Static
    from lens.nnx._objects.object import check_pytree as check_pytree
    from lens.nnx._objects.object import data as data
    from lens.nnx._objects.object import dataclass as dataclass
    from lens.nnx._objects.object import has_data as has_data
    from lens.nnx._objects.object import is_data as is_data
    from lens.nnx._objects.object import register_data_type as register_data_type
    from lens.nnx._objects.object import static as static
    from lens.nnx._transforms.custom_gradients import CustomVjp as CustomVjp
    from lens.nnx._transforms.custom_gradients import custom_vjp as custom_vjp
    from lens.nnx._transforms.loops import Carry as Carry
    from lens.nnx._transforms.loops import fori_loop as fori_loop
    from lens.nnx._transforms.loops import scan as scan
    from lens.nnx._transforms.loops import while_loop as while_loop
    from lens.nnx._transforms.sharding import StateSharding as StateSharding
    from lens.nnx._transforms.sharding import shard_map as shard_map
    from lens.nnx.bridge import wrappers as wrappers
    from lens.nnx.extract import NodeStates as NodeStates
    from lens.nnx.extract import from_tree as from_tree
    from lens.nnx.extract import prefix as prefix
    from lens.nnx.extract import to_tree as to_tree
    from lens.nnx.filterlib import All as All
    from lens.nnx.filterlib import Any as Any
    from lens.nnx.filterlib import Everything as Everything
    from lens.nnx.filterlib import Not as Not
    from lens.nnx.filterlib import Nothing as Nothing
    from lens.nnx.filterlib import OfType as OfType
    from lens.nnx.filterlib import PathContains as PathContains
    from lens.nnx.filterlib import WithTag as WithTag
    from lens.nnx.graphlib import A as A
    from lens.nnx.graphlib import GraphState as GraphState
    from lens.nnx.graphlib import MergeContext as MergeContext
    from lens.nnx.graphlib import PureState as PureState
    from lens.nnx.graphlib import SplitContext as SplitContext
    from lens.nnx.graphlib import UpdateContext as UpdateContext
    from lens.nnx.graphlib import as_pure as as_pure
    from lens.nnx.graphlib import cached_partial as cached_partial
    from lens.nnx.graphlib import call as call
    from lens.nnx.graphlib import clone as clone
    from lens.nnx.graphlib import current_update_context as current_update_context
    from lens.nnx.graphlib import find_duplicates as find_duplicates
    from lens.nnx.graphlib import flatten as flatten
    from lens.nnx.graphlib import graphdef as graphdef
    from lens.nnx.graphlib import iter_graph as iter_graph
    from lens.nnx.graphlib import map as map
    from lens.nnx.graphlib import merge as merge
    from lens.nnx.graphlib import merge_context as merge_context
    from lens.nnx.graphlib import pop as pop
    from lens.nnx.graphlib import pure as pure
    from lens.nnx.graphlib import recursive_map as recursive_map
    from lens.nnx.graphlib import set_graph_mode as set_graph_mode
    from lens.nnx.graphlib import set_graph_updates as set_graph_updates
    from lens.nnx.graphlib import set_metadata as set_metadata
    from lens.nnx.graphlib import split as split
    from lens.nnx.graphlib import split_context as split_context
    from lens.nnx.graphlib import state as state
    from lens.nnx.graphlib import unflatten as unflatten
    from lens.nnx.graphlib import unpack as unpack
    from lens.nnx.graphlib import update as update
    from lens.nnx.graphlib import update_context as update_context
    from lens.nnx.graphlib import variables as variables
    from lens.nnx.graphlib import vars_as as vars_as
    from lens.nnx.graphlib import with_vars as with_vars
    from lens.nnx.module import Module as Module
    from lens.nnx.module import capture as capture
    from lens.nnx.module import iter_children as iter_children
    from lens.nnx.module import iter_module_children as iter_module_children
    from lens.nnx.module import iter_modules as iter_modules
    from lens.nnx.module import view as view
    from lens.nnx.module import view_info as view_info
    from lens.nnx.module import with_attributes as with_attributes
    from lens.nnx.nn import initializers as initializers
    from lens.nnx.nn.activations import PReLU as PReLU
    from lens.nnx.nn.activations import identity as identity
    from lens.nnx.nn.attention import MultiHeadAttention as MultiHeadAttention
    from lens.nnx.nn.attention import dot_product_attention as dot_product_attention
    from lens.nnx.nn.linear import Conv as Conv
    from lens.nnx.nn.linear import ConvTranspose as ConvTranspose
    from lens.nnx.nn.linear import Einsum as Einsum
    from lens.nnx.nn.linear import Embed as Embed
    from lens.nnx.nn.linear import Linear as Linear
    from lens.nnx.nn.linear import LinearGeneral as LinearGeneral
    from lens.nnx.nn.lora import LoRA as LoRA
    from lens.nnx.nn.lora import LoRALinear as LoRALinear
    from lens.nnx.nn.lora import LoRAParam as LoRAParam
    from lens.nnx.nn.normalization import BatchNorm as BatchNorm
    from lens.nnx.nn.normalization import GroupNorm as GroupNorm
    from lens.nnx.nn.normalization import InstanceNorm as InstanceNorm
    from lens.nnx.nn.normalization import LayerNorm as LayerNorm
    from lens.nnx.nn.normalization import RMSNorm as RMSNorm
    from lens.nnx.nn.normalization import SpectralNorm as SpectralNorm
    from lens.nnx.nn.normalization import WeightNorm as WeightNorm
    from lens.nnx.nn.recurrent import RNN as RNN
    from lens.nnx.nn.recurrent import Bidirectional as Bidirectional
    from lens.nnx.nn.recurrent import GRUCell as GRUCell
    from lens.nnx.nn.recurrent import LSTMCell as LSTMCell
    from lens.nnx.nn.recurrent import OptimizedLSTMCell as OptimizedLSTMCell
    from lens.nnx.nn.recurrent import RNNCellBase as RNNCellBase
    from lens.nnx.nn.recurrent import SimpleCell as SimpleCell
    from lens.nnx.nn.stochastic import Dropout as Dropout
    from lens.nnx.proxy_caller import ApplyCaller as ApplyCaller
    from lens.nnx.rnglib import Rngs as Rngs
    from lens.nnx.rnglib import RngStream as RngStream
    from lens.nnx.rnglib import fork_rngs as fork_rngs
    from lens.nnx.rnglib import reseed as reseed
    from lens.nnx.rnglib import restore_rngs as restore_rngs
    from lens.nnx.rnglib import split_rngs as split_rngs
    from lens.nnx.rnglib import with_rngs as with_rngs
    from lens.nnx.spmd import PARTITION_NAME as PARTITION_NAME
    from lens.nnx.spmd import abstract_with_sharding as abstract_with_sharding
    from lens.nnx.spmd import as_abstract as as_abstract
    from lens.nnx.spmd import get_abstract_model as get_abstract_model
    from lens.nnx.spmd import get_named_sharding as get_named_sharding
    from lens.nnx.spmd import get_partition_spec as get_partition_spec
    from lens.nnx.spmd import with_partitioning as with_partitioning
    from lens.nnx.statelib import FlatState as FlatState
    from lens.nnx.statelib import State as State
    from lens.nnx.statelib import filter_state as filter_state
    from lens.nnx.statelib import from_flat_state as from_flat_state
    from lens.nnx.statelib import map_state as map_state
    from lens.nnx.statelib import merge_state as merge_state
    from lens.nnx.statelib import replace_by_pure_dict as replace_by_pure_dict
    from lens.nnx.statelib import restore_int_paths as restore_int_paths
    from lens.nnx.statelib import split_state as split_state
    from lens.nnx.statelib import to_flat_state as to_flat_state
    from lens.nnx.statelib import to_pure_dict as to_pure_dict
    from lens.nnx.summary import tabulate as tabulate
    from lens.nnx.training import metrics as metrics
    from lens.nnx.training import optimizer as optimizer
    from lens.nnx.training.ema import EMA as EMA
    from lens.nnx.training.metrics import Metric as Metric
    from lens.nnx.training.metrics import MultiMetric as MultiMetric
    from lens.nnx.training.optimizer import ModelAndOptimizer as ModelAndOptimizer
    from lens.nnx.training.optimizer import OptArray as OptArray
    from lens.nnx.training.optimizer import Optimizer as Optimizer
    from lens.nnx.training.optimizer import OptVariable as OptVariable
    from lens.nnx.training.optimizer import to_opt_state as to_opt_state
    from lens.nnx.transforms.autodiff import checkpoint as checkpoint
    from lens.nnx.transforms.autodiff import grad as grad
    from lens.nnx.transforms.autodiff import jvp as jvp
    from lens.nnx.transforms.autodiff import remat as remat
    from lens.nnx.transforms.autodiff import value_and_grad as value_and_grad
    from lens.nnx.transforms.autodiff import vjp as vjp
    from lens.nnx.transforms.compilation import jit as jit
    from lens.nnx.transforms.compilation import jit_partial as jit_partial
    from lens.nnx.transforms.general import DiffState as DiffState
    from lens.nnx.transforms.general import StateAxes as StateAxes
    from lens.nnx.transforms.iteration import pmap as pmap
    from lens.nnx.transforms.iteration import transform_metadata as transform_metadata
    from lens.nnx.transforms.iteration import vmap as vmap
    from lens.nnx.transforms.transforms import checkify as checkify
    from lens.nnx.transforms.transforms import cond as cond
    from lens.nnx.transforms.transforms import eval_shape as eval_shape
    from lens.nnx.transforms.transforms import make_jaxpr as make_jaxpr
    from lens.nnx.transforms.transforms import switch as switch
    from lens.nnx.variablelib import BatchStat as BatchStat
    from lens.nnx.variablelib import Cache as Cache
    from lens.nnx.variablelib import Intermediate as Intermediate
    from lens.nnx.variablelib import OptState as OptState
    from lens.nnx.variablelib import Param as Param
    from lens.nnx.variablelib import Perturbation as Perturbation
    from lens.nnx.variablelib import RngCount as RngCount
    from lens.nnx.variablelib import RngKey as RngKey
    from lens.nnx.variablelib import RngState as RngState
    from lens.nnx.variablelib import Variable as Variable
    from lens.nnx.variablelib import VariableMetadata as VariableMetadata
    from lens.nnx.variablelib import VariableState as VariableState
    from lens.nnx.variablelib import register_variable_name as register_variable_name
    from lens.nnx.variablelib import use_eager_sharding as use_eager_sharding
    from lens.nnx.variablelib import using_eager_sharding as using_eager_sharding
    from lens.nnx.variablelib import var_defaults as var_defaults
    from lens.nnx.variablelib import variable_name_from_type as variable_name_from_type
    from lens.nnx.variablelib import variable_type_from_name as variable_type_from_name
    from lens.nnx.variablelib import with_metadata as with_metadata
    from lens.nnx.visualization import display as display
    from lens.typing import Initializer as Initializer


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
