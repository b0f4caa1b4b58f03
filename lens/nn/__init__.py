"""The Module API (``lens.nn``, like ``flax.linen``): ``from lens import nn``.

Public names, signatures and variable layout follow Flax Linen, so porting a model
is an import change and the same key gives the same initial parameters.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names; at run time each loads on first use (lens/_lazy.py), so
# `import lens.nn` stays cheap.
if TYPE_CHECKING:
    # fmt: off
    # isort: off
    from lens._kernels.dtypes import merge_param, promote_dtype
    from lens.core import (
        AxisMetadata, broadcast, current_mesh, DenyList, FrozenDict, get_partition_spec,
        get_sharding, meta, PARTITION_NAME, Partitioned, Scope, unbox, Variable,
        with_partitioning,
    )
    from lens.core.nn.initializers import ones, ones_init, zeros, zeros_init
    from lens.nn import (
        activation, attention, batch_apply, combinators, dtypes, fp8_ops, initializers,
        kw_only_dataclasses, linear, module, normalization, partitioning, pooling,
        recurrent, spmd, stochastic, summary, transforms,
    )
    from lens.nn._activation import (
        celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
        leaky_relu, log_sigmoid, log_softmax, logsumexp, normalize, one_hot, PReLU,
        relu, relu6, selu, sigmoid, silu, soft_sign, softmax, softplus, standardize,
        swish, tanh,
    )
    from lens.nn._attention import (
        combine_masks, dot_product_attention, dot_product_attention_weights,
        make_attention_mask, make_causal_mask, MultiHeadAttention,
        MultiHeadDotProductAttention, SelfAttention,
    )
    from lens.nn._combinators import Sequential
    from lens.nn._context import (
        disable_named_call, enable_named_call, override_named_call,
    )
    from lens.nn._conv import Conv, ConvLocal, ConvTranspose
    from lens.nn._linear import Dense, DenseGeneral, Einsum, Embed
    from lens.nn._module import Module
    from lens.nn._module_entry import apply, init, init_with_output
    from lens.nn._module_support import (
        compact, compact_name_scope, intercept_methods, InterceptorContext, nowrap,
    )
    from lens.nn._normalization import (
        BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm,
    )
    from lens.nn._pooling import avg_pool, max_pool, min_pool, pool
    from lens.nn._recurrent import (
        ConvLSTMCell, GRUCell, LSTMCell, MGUCell, OptimizedLSTMCell, RNNCellBase,
        SimpleCell,
    )
    from lens.nn._rnn import Bidirectional, RNN
    from lens.nn._share_scope import share_scope
    from lens.nn._stochastic import Dropout
    from lens.nn._summary import tabulate
    from lens.nn._transforms import (
        add_metadata_axis, checkpoint, cond, custom_jvp, custom_vjp, fold_rngs, grad,
        jit, jvp, map_variables, named_call, remat, remat_scan, scan, switch,
        value_and_grad, vjp, vmap, while_loop,
    )
    from lens.nn._weight_norms import SpectralNorm, WeightNorm
    from lens.nn.batch_apply import BatchApply
    from lens.nn.fp8_ops import (
        Fp8DirectDotGeneralOp, Fp8DotGeneral, Fp8DotGeneralOp, Fp8Einsum,
        NANOOFp8DotGeneralOp,
    )
    from lens.nn.spmd import (
        get_logical_axis_rules, logical_axis_rules, logical_to_mesh,
        logical_to_mesh_axes, logical_to_mesh_sharding, LogicallyPartitioned,
        set_logical_axis_rules, with_logical_constraint, with_logical_partitioning,
    )
    from lens.typing import In, Out
    # isort: on
    # fmt: on


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
