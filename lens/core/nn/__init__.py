"""Functional layers on scopes (``lens.core.nn``, like ``flax.core.nn``).

Each layer is a function ``layer(scope, inputs, ...)`` that creates its parameters
with ``scope.param`` and uses the same names and shapes as the ``lens.nn`` modules.
"""

# fmt: off
# isort: off
from jax.nn import (
    celu, elu, gelu, glu, leaky_relu, log_sigmoid, log_softmax, relu, sigmoid, silu,
    soft_sign, softmax, softplus, swish,
)
from jax.numpy import tanh
from lens.core.nn import attention, initializers, linear, normalization, stochastic
from lens.core.nn.attention import (
    dot_product_attention, multi_head_dot_product_attention,
)
from lens.core.nn.linear import (
    Embedding, conv, conv_transpose, dense, dense_general, embedding,
)
from lens.core.nn.normalization import batch_norm, group_norm, layer_norm
from lens.core.nn.stochastic import dropout
# isort: on
# fmt: on


def __getattr__(name: str) -> object:
    # lens.nn imports lens.core: take these from it lazily (no import cycle).
    if name == "activation":
        from lens.nn import activation

        return activation
    if name in ("avg_pool", "max_pool"):
        from lens.nn import pooling

        return getattr(pooling, name)
    raise AttributeError(f"module 'lens.core.nn' has no attribute {name!r}")
