"""The Module API (``lens.nn``, like ``flax.linen``): ``from lens import nn``.

Public names, signatures and variable layout follow Flax Linen, so porting a model
is an import change and the same key gives the same initial parameters.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names; at run time each loads on first use (lens/_lazy.py), so
# `import lens.nn` stays cheap.
if TYPE_CHECKING:
    from lens._kernels.dtypes import merge_param as merge_param
    from lens._kernels.dtypes import promote_dtype as promote_dtype
    from lens.core import DenyList as DenyList
    from lens.core import FrozenDict as FrozenDict
    from lens.core import Scope as Scope
    from lens.core import Variable as Variable
    from lens.core import broadcast as broadcast
    from lens.core import meta as meta
    from lens.core.meta import PARTITION_NAME as PARTITION_NAME
    from lens.core.meta import AxisMetadata as AxisMetadata
    from lens.core.meta import Partitioned as Partitioned
    from lens.core.meta import current_mesh as current_mesh
    from lens.core.meta import get_partition_spec as get_partition_spec
    from lens.core.meta import get_sharding as get_sharding
    from lens.core.meta import unbox as unbox
    from lens.core.meta import with_partitioning as with_partitioning

    # Public submodules, as attributes (``nn.module``, ``nn.transforms``, ...).
    from lens.nn import activation as activation
    from lens.nn import attention as attention
    from lens.nn import batch_apply as batch_apply
    from lens.nn import combinators as combinators
    from lens.nn import dtypes as dtypes
    from lens.nn import fp8_ops as fp8_ops
    from lens.nn import initializers as initializers
    from lens.nn import kw_only_dataclasses as kw_only_dataclasses
    from lens.nn import linear as linear
    from lens.nn import module as module
    from lens.nn import normalization as normalization
    from lens.nn import partitioning as partitioning
    from lens.nn import pooling as pooling
    from lens.nn import recurrent as recurrent
    from lens.nn import spmd as spmd
    from lens.nn import stochastic as stochastic
    from lens.nn import summary as summary
    from lens.nn import transforms as transforms
    from lens.nn._activation import PReLU as PReLU
    from lens.nn._activation import celu as celu
    from lens.nn._activation import elu as elu
    from lens.nn._activation import gelu as gelu
    from lens.nn._activation import glu as glu
    from lens.nn._activation import hard_sigmoid as hard_sigmoid
    from lens.nn._activation import hard_silu as hard_silu
    from lens.nn._activation import hard_swish as hard_swish
    from lens.nn._activation import hard_tanh as hard_tanh
    from lens.nn._activation import leaky_relu as leaky_relu
    from lens.nn._activation import log_sigmoid as log_sigmoid
    from lens.nn._activation import log_softmax as log_softmax
    from lens.nn._activation import logsumexp as logsumexp
    from lens.nn._activation import normalize as normalize
    from lens.nn._activation import one_hot as one_hot
    from lens.nn._activation import relu as relu
    from lens.nn._activation import relu6 as relu6
    from lens.nn._activation import selu as selu
    from lens.nn._activation import sigmoid as sigmoid
    from lens.nn._activation import silu as silu
    from lens.nn._activation import soft_sign as soft_sign
    from lens.nn._activation import softmax as softmax
    from lens.nn._activation import softplus as softplus
    from lens.nn._activation import standardize as standardize
    from lens.nn._activation import swish as swish
    from lens.nn._activation import tanh as tanh
    from lens.nn._attention import MultiHeadAttention as MultiHeadAttention
    from lens.nn._attention import (
        MultiHeadDotProductAttention as MultiHeadDotProductAttention,
    )
    from lens.nn._attention import SelfAttention as SelfAttention
    from lens.nn._attention import combine_masks as combine_masks
    from lens.nn._attention import dot_product_attention as dot_product_attention
    from lens.nn._attention import (
        dot_product_attention_weights as dot_product_attention_weights,
    )
    from lens.nn._attention import make_attention_mask as make_attention_mask
    from lens.nn._attention import make_causal_mask as make_causal_mask
    from lens.nn._combinators import Sequential as Sequential
    from lens.nn._context import disable_named_call as disable_named_call
    from lens.nn._context import enable_named_call as enable_named_call
    from lens.nn._context import override_named_call as override_named_call
    from lens.nn._conv import Conv as Conv
    from lens.nn._conv import ConvLocal as ConvLocal
    from lens.nn._conv import ConvTranspose as ConvTranspose
    from lens.nn._linear import Dense as Dense
    from lens.nn._linear import DenseGeneral as DenseGeneral
    from lens.nn._linear import Einsum as Einsum
    from lens.nn._linear import Embed as Embed
    from lens.nn._module import Module as Module
    from lens.nn._module_entry import apply as apply
    from lens.nn._module_entry import init as init
    from lens.nn._module_entry import init_with_output as init_with_output
    from lens.nn._module_support import InterceptorContext as InterceptorContext
    from lens.nn._module_support import compact as compact
    from lens.nn._module_support import compact_name_scope as compact_name_scope
    from lens.nn._module_support import intercept_methods as intercept_methods
    from lens.nn._module_support import nowrap as nowrap
    from lens.nn._normalization import BatchNorm as BatchNorm
    from lens.nn._normalization import GroupNorm as GroupNorm
    from lens.nn._normalization import InstanceNorm as InstanceNorm
    from lens.nn._normalization import LayerNorm as LayerNorm
    from lens.nn._normalization import RMSNorm as RMSNorm
    from lens.nn._pooling import avg_pool as avg_pool
    from lens.nn._pooling import max_pool as max_pool
    from lens.nn._pooling import min_pool as min_pool
    from lens.nn._pooling import pool as pool
    from lens.nn._recurrent import ConvLSTMCell as ConvLSTMCell
    from lens.nn._recurrent import GRUCell as GRUCell
    from lens.nn._recurrent import LSTMCell as LSTMCell
    from lens.nn._recurrent import MGUCell as MGUCell
    from lens.nn._recurrent import OptimizedLSTMCell as OptimizedLSTMCell
    from lens.nn._recurrent import RNNCellBase as RNNCellBase
    from lens.nn._recurrent import SimpleCell as SimpleCell
    from lens.nn._rnn import RNN as RNN
    from lens.nn._rnn import Bidirectional as Bidirectional
    from lens.nn._share_scope import share_scope as share_scope
    from lens.nn._stochastic import Dropout as Dropout
    from lens.nn._summary import tabulate as tabulate
    from lens.nn._transforms import add_metadata_axis as add_metadata_axis
    from lens.nn._transforms import checkpoint as checkpoint
    from lens.nn._transforms import cond as cond
    from lens.nn._transforms import custom_jvp as custom_jvp
    from lens.nn._transforms import custom_vjp as custom_vjp
    from lens.nn._transforms import fold_rngs as fold_rngs
    from lens.nn._transforms import grad as grad
    from lens.nn._transforms import jit as jit
    from lens.nn._transforms import jvp as jvp
    from lens.nn._transforms import map_variables as map_variables
    from lens.nn._transforms import named_call as named_call
    from lens.nn._transforms import remat as remat
    from lens.nn._transforms import remat_scan as remat_scan
    from lens.nn._transforms import scan as scan
    from lens.nn._transforms import switch as switch
    from lens.nn._transforms import value_and_grad as value_and_grad
    from lens.nn._transforms import vjp as vjp
    from lens.nn._transforms import vmap as vmap
    from lens.nn._transforms import while_loop as while_loop
    from lens.nn._weight_norms import SpectralNorm as SpectralNorm
    from lens.nn._weight_norms import WeightNorm as WeightNorm
    from lens.nn.batch_apply import BatchApply as BatchApply
    from lens.nn.fp8_ops import Fp8DirectDotGeneralOp as Fp8DirectDotGeneralOp
    from lens.nn.fp8_ops import Fp8DotGeneral as Fp8DotGeneral
    from lens.nn.fp8_ops import Fp8DotGeneralOp as Fp8DotGeneralOp
    from lens.nn.fp8_ops import Fp8Einsum as Fp8Einsum
    from lens.nn.fp8_ops import NANOOFp8DotGeneralOp as NANOOFp8DotGeneralOp
    from lens.nn.initializers import ones as ones
    from lens.nn.initializers import ones_init as ones_init
    from lens.nn.initializers import zeros as zeros
    from lens.nn.initializers import zeros_init as zeros_init
    from lens.nn.spmd import LogicallyPartitioned as LogicallyPartitioned
    from lens.nn.spmd import get_logical_axis_rules as get_logical_axis_rules
    from lens.nn.spmd import logical_axis_rules as logical_axis_rules
    from lens.nn.spmd import logical_to_mesh as logical_to_mesh
    from lens.nn.spmd import logical_to_mesh_axes as logical_to_mesh_axes
    from lens.nn.spmd import logical_to_mesh_sharding as logical_to_mesh_sharding
    from lens.nn.spmd import set_logical_axis_rules as set_logical_axis_rules
    from lens.nn.spmd import with_logical_constraint as with_logical_constraint
    from lens.nn.spmd import with_logical_partitioning as with_logical_partitioning
    from lens.typing import In as In
    from lens.typing import Out as Out


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
