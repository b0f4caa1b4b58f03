"""Activation functions, and ``PReLU``."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax.nn import celu as celu
from jax.nn import elu as elu
from jax.nn import gelu as gelu
from jax.nn import glu as glu
from jax.nn import hard_sigmoid as hard_sigmoid
from jax.nn import hard_silu as hard_silu
from jax.nn import hard_swish as hard_swish
from jax.nn import hard_tanh as hard_tanh
from jax.nn import leaky_relu as leaky_relu
from jax.nn import log_sigmoid as log_sigmoid
from jax.nn import log_softmax as log_softmax
from jax.nn import logsumexp as logsumexp
from jax.nn import one_hot as one_hot
from jax.nn import relu as relu
from jax.nn import relu6 as relu6
from jax.nn import selu as selu
from jax.nn import sigmoid as sigmoid
from jax.nn import silu as silu
from jax.nn import soft_sign as soft_sign
from jax.nn import softmax as softmax
from jax.nn import softplus as softplus
from jax.nn import standardize as standardize
from jax.nn import swish as swish
from jax.numpy import tanh as tanh

from lens._facades import show_at_flax_paths
from lens.nn._module import Module
from lens.nn._module_support import compact

normalize = standardize  # Flax keeps the old jax.nn name


class PReLU(Module):
    """Parametric ReLU with a learned ``negative_slope`` parameter."""

    param_dtype: Any = jnp.float32
    negative_slope_init: float = 0.01

    @compact
    def __call__(self, inputs: Any) -> Any:
        """``where(x >= 0, x, slope * x)``."""
        slope = self.param(
            "negative_slope",
            lambda k: jnp.asarray(self.negative_slope_init, self.param_dtype),
        )
        return jnp.where(inputs >= 0, inputs, jnp.asarray(slope, inputs.dtype) * inputs)


show_at_flax_paths(__name__)
