"""Functional layers on scopes (``lens.core.nn``, like ``flax.core.nn``).

Each layer is a function ``layer(scope, inputs, ...)`` that creates its parameters
with ``scope.param`` and uses the same names and shapes as the ``lens.nn`` modules.
"""

from jax.nn import celu as celu
from jax.nn import elu as elu
from jax.nn import gelu as gelu
from jax.nn import glu as glu
from jax.nn import leaky_relu as leaky_relu
from jax.nn import log_sigmoid as log_sigmoid
from jax.nn import log_softmax as log_softmax
from jax.nn import relu as relu
from jax.nn import sigmoid as sigmoid
from jax.nn import silu as silu
from jax.nn import soft_sign as soft_sign
from jax.nn import softmax as softmax
from jax.nn import softplus as softplus
from jax.nn import swish as swish
from jax.numpy import tanh as tanh

from lens.core.nn import attention as attention
from lens.core.nn import initializers as initializers
from lens.core.nn import linear as linear
from lens.core.nn import normalization as normalization
from lens.core.nn import stochastic as stochastic
from lens.core.nn.attention import dot_product_attention as dot_product_attention
from lens.core.nn.attention import (
    multi_head_dot_product_attention as multi_head_dot_product_attention,
)
from lens.core.nn.linear import Embedding as Embedding
from lens.core.nn.linear import conv as conv
from lens.core.nn.linear import conv_transpose as conv_transpose
from lens.core.nn.linear import dense as dense
from lens.core.nn.linear import dense_general as dense_general
from lens.core.nn.linear import embedding as embedding
from lens.core.nn.normalization import batch_norm as batch_norm
from lens.core.nn.normalization import group_norm as group_norm
from lens.core.nn.normalization import layer_norm as layer_norm
from lens.core.nn.stochastic import dropout as dropout


def __getattr__(name: str) -> object:
    # lens.nn imports lens.core: take these from it lazily (no import cycle).
    if name == "activation":
        from lens.nn import activation

        return activation
    if name in ("avg_pool", "max_pool"):
        from lens.nn import pooling

        return getattr(pooling, name)
    raise AttributeError(f"module 'lens.core.nn' has no attribute {name!r}")
