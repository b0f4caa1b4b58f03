"""Activations (flax.nnx's ``nn.activations``): JAX's activation functions and the
``PReLU`` layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax.numpy as jnp

from lens.nnx.module import Module
from lens.nnx.nn.dtypes import promote_dtype
from lens.nnx.nn.parameters import NO_META
from lens.nnx.variablelib import Param

Array = Any


def identity(x: Array) -> Array:
    """Returns ``x`` (an activation that does nothing)."""
    return x


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
