"""Initializers (``lens.nn.initializers``, like ``flax.linen.initializers``).

These are JAX's own initializers, so the same key gives the same values as in Flax.
"""

from __future__ import annotations

from typing import Any

from jax.nn.initializers import constant as constant
from jax.nn.initializers import delta_orthogonal as delta_orthogonal
from jax.nn.initializers import glorot_normal as glorot_normal
from jax.nn.initializers import glorot_uniform as glorot_uniform
from jax.nn.initializers import he_normal as he_normal
from jax.nn.initializers import he_uniform as he_uniform
from jax.nn.initializers import kaiming_normal as kaiming_normal
from jax.nn.initializers import kaiming_uniform as kaiming_uniform
from jax.nn.initializers import lecun_normal as lecun_normal
from jax.nn.initializers import lecun_uniform as lecun_uniform
from jax.nn.initializers import normal as normal
from jax.nn.initializers import ones as ones
from jax.nn.initializers import orthogonal as orthogonal
from jax.nn.initializers import truncated_normal as truncated_normal
from jax.nn.initializers import uniform as uniform
from jax.nn.initializers import variance_scaling as variance_scaling
from jax.nn.initializers import xavier_normal as xavier_normal
from jax.nn.initializers import xavier_uniform as xavier_uniform
from jax.nn.initializers import zeros as zeros

Initializer = Any


def zeros_init() -> Initializer:
    """An initializer of zeros (``zeros_init()(key, shape, dtype)``)."""
    return zeros


def ones_init() -> Initializer:
    """An initializer of ones."""
    return ones


default_kernel_init = lecun_normal()
"""The default kernel initializer of Dense, Conv, ...: ``lecun_normal()``."""

default_embed_init = variance_scaling(1.0, "fan_in", "normal", out_axis=0)
"""The default ``Embed`` initializer."""
