"""Functional normalization (``lens.core.nn.normalization``, like Flax's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from lens.core._scope import Scope
from lens.core.nn import initializers

Array = Any

__all__ = ["batch_norm", "group_norm", "layer_norm"]


def _absolute_dims(ndim: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(ndim + d if d < 0 else d for d in dims)


def batch_norm(
    scope: Scope,
    x: Array,
    use_running_average: bool = False,
    axis: int | tuple[int, ...] = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-5,
    dtype: Any = jnp.float32,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
    scale_init: Callable[..., Array] = initializers.ones_init(),
    axis_name: str | None = None,
    axis_index_groups: Any = None,
    kind: str = "batch_stats",
) -> Array:
    """Batch normalization with running averages ``mean``/``var`` in ``kind``.

    With ``use_running_average=False`` the batch statistics are used (averaged
    over ``axis_name`` when given) and, except on the call that creates them, the
    running averages are updated (so ``kind`` must be mutable).
    """
    x = jnp.asarray(x, jnp.float32)
    axis = axis if isinstance(axis, tuple) else (axis,)
    axis = _absolute_dims(x.ndim, axis)
    redux = tuple(i for i in range(x.ndim) if i not in axis)

    def pmean(v: Array) -> Array:
        m = jnp.mean(v, redux, keepdims=True)
        if axis_name is not None:
            m = lax.pmean(m, axis_name=axis_name, axis_index_groups=axis_index_groups)
        return m

    mean = pmean(x)
    squeeze_shape = jnp.squeeze(mean).shape
    var = pmean(jnp.square(x)) - jnp.square(mean)
    is_init = not scope.has_variable(kind, "mean")
    ra_mean = scope.variable(kind, "mean", jnp.zeros, squeeze_shape)
    ra_var = scope.variable(kind, "var", jnp.ones, squeeze_shape)
    if use_running_average:
        mean = jnp.reshape(ra_mean.value, mean.shape)
        var = jnp.reshape(ra_var.value, var.shape)
    elif not is_init:
        beta = 1.0 - momentum
        ra_mean.value += beta * (jnp.squeeze(mean) - ra_mean.value)
        ra_var.value += beta * (jnp.squeeze(var) - ra_var.value)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    if scale:
        mul = mul * scope.param("scale", scale_init, squeeze_shape).reshape(mean.shape)
    y = y * mul
    if bias:
        y = y + scope.param("bias", bias_init, squeeze_shape).reshape(mean.shape)
    return jnp.asarray(y, dtype)


def layer_norm(
    scope: Scope,
    x: Array,
    epsilon: float = 1e-6,
    dtype: Any = jnp.float32,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
    scale_init: Callable[..., Array] = initializers.ones_init(),
) -> Array:
    """Layer normalization over the last axis, with ``scale`` and ``bias``."""
    features = x.shape[-1]
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(lax.square(x), axis=-1, keepdims=True) - lax.square(mean)
    mul = lax.rsqrt(var + epsilon)
    if scale:
        mul = mul * jnp.asarray(scope.param("scale", scale_init, (features,)), dtype)
    y = (x - mean) * mul
    if bias:
        y = y + jnp.asarray(scope.param("bias", bias_init, (features,)), dtype)
    return y


def group_norm(
    scope: Scope,
    x: Array,
    num_groups: int | None = 32,
    group_size: int | None = None,
    epsilon: float = 1e-6,
    dtype: Any = jnp.float32,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
    scale_init: Callable[..., Array] = initializers.ones_init(),
) -> Array:
    """Group normalization of the channels (last axis) in ``num_groups`` groups.

    ``scale``/``bias`` have shape ``(1, ..., 1, channels)``.
    """
    x = jnp.asarray(x, jnp.float32)
    if (num_groups is None) == (group_size is None):
        raise ValueError(
            "Either `num_groups` or `group_size` should be specified, but not both "
            "of them."
        )
    channels = x.shape[-1]
    if group_size is not None:
        if channels % group_size:
            raise ValueError(
                f"Number of channels ({channels}) is not multiple of the group size "
                f"({group_size})."
            )
        num_groups = channels // group_size
    assert num_groups is not None
    input_shape = x.shape
    x = x.reshape(x.shape[:-1] + (num_groups, channels // num_groups))
    reduction = list(range(1, x.ndim - 2)) + [x.ndim - 1]
    mean = jnp.mean(x, axis=reduction, keepdims=True)
    var = jnp.mean(jnp.square(x), axis=reduction, keepdims=True) - jnp.square(mean)
    x = ((x - mean) * lax.rsqrt(var + epsilon)).reshape(input_shape)
    feature_shape = (1,) * (len(input_shape) - 1) + (input_shape[-1],)
    if scale:
        x = x * scope.param("scale", scale_init, feature_shape)
    if bias:
        x = x + scope.param("bias", bias_init, feature_shape)
    return x.astype(dtype)
