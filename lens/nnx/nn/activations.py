"""Activations (flax.nnx's ``nn.activations``): JAX's activation functions, which
this module re-exports as flax.nnx's does (``activations.gelu is jax.nn.gelu``),
and the ``PReLU`` layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from jax.nn import identity as identity
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

from lens.nnx._objects.module import Module
from lens.nnx._variables.variable import Param
from lens.nnx.nn._parameters import NO_META
from lens.nnx.nn.dtypes import promote_dtype

Array = Any

__all__ = [
    "PReLU",
    "celu",
    "elu",
    "gelu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "standardize",
    "swish",
    "tanh",
]


class PReLU(Module):
    """Parametric ReLU: ``x`` where ``x >= 0``, else ``negative_slope * x`` with a
    learned scalar ``negative_slope``."""

    def __init__(
        self,
        negative_slope_init: float = 0.01,
        *,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        promote_dtype: Callable[..., Any] = promote_dtype,
        negative_slope_metadata: Mapping[str, Any] = NO_META,
    ):
        self.negative_slope = Param(
            jnp.asarray(negative_slope_init, dtype=param_dtype),
            **dict(negative_slope_metadata),
        )
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Array) -> Array:
        slope = self.negative_slope.value
        if self.dtype is not None:
            inputs, slope = self.promote_dtype((inputs, slope), dtype=self.dtype)
        else:  # as Linen: the parameter takes the input's dtype
            slope = jnp.asarray(slope, inputs.dtype)
        return jnp.where(inputs >= 0, inputs, slope * inputs)
