"""Functional layers on scopes (``lens.core.nn``, like ``flax.core.nn``).

Each layer is a function ``layer(scope, inputs, ...)`` that creates its parameters
with ``scope.param`` and uses the same names and shapes as the ``lens.nn`` modules.
"""

from jax.nn import celu as celu
from jax.nn import elu as elu
from jax.nn import gelu as gelu
from jax.nn import log_softmax as log_softmax
from jax.nn import relu as relu
from jax.nn import sigmoid as sigmoid
from jax.nn import silu as silu
from jax.nn import softmax as softmax
from jax.nn import softplus as softplus
from jax.nn import swish as swish
from jax.numpy import tanh as tanh

from lens.core.nn._layers import batch_norm as batch_norm
from lens.core.nn._layers import conv as conv
from lens.core.nn._layers import dense as dense
from lens.core.nn._layers import dense_general as dense_general
from lens.core.nn._layers import dropout as dropout
from lens.core.nn._layers import embedding as embedding
from lens.core.nn._layers import group_norm as group_norm
from lens.core.nn._layers import layer_norm as layer_norm
