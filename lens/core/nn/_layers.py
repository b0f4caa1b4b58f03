"""Functional layers: dense, conv, embedding, normalisation and dropout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens.core._scope import Scope

Array = Any
default_kernel_init = jax.nn.initializers.lecun_normal()
zeros = jax.nn.initializers.zeros
ones = jax.nn.initializers.ones


def dense(
    scope: Scope,
    inputs: Array,
    features: int,
    bias: bool = True,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = zeros,
    precision: Any = None,
) -> Array:
    """A linear layer over the last axis: ``inputs @ kernel + bias``.

    Creates ``kernel`` of shape ``(inputs.shape[-1], features)`` and ``bias`` of
    shape ``(features,)``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.core import init
        >>> y, v = init(dense)(jax.random.key(0), jnp.ones((2, 3)), 4)
        >>> v["params"]["kernel"].shape, y.shape
        ((3, 4), (2, 4))
    """
    inputs = jnp.asarray(inputs)
    kernel = scope.param(
        "kernel", kernel_init, (inputs.shape[-1], features), jnp.float32
    )
    y = lax.dot_general(
        inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=precision
    )
    if bias:
        y = y + scope.param("bias", bias_init, (features,), jnp.float32)
    return y


def dense_general(
    scope: Scope,
    inputs: Array,
    features: int | Sequence[int],
    axis: int | Sequence[int] = -1,
    bias: bool = True,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = zeros,
    precision: Any = None,
) -> Array:
    """A linear layer contracting ``axis`` of ``inputs`` to ``features``.

    Creates ``kernel`` of shape ``in_shape + features`` and ``bias`` of shape
    ``features``.
    """
    inputs = jnp.asarray(inputs)
    features = (features,) if isinstance(features, int) else tuple(features)
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    axis = tuple(a % inputs.ndim for a in axis)
    in_shape = tuple(inputs.shape[a] for a in axis)
    n_in = int(np.prod(in_shape))

    def flat_init(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
        flat = kernel_init(rng, (n_in, int(np.prod(features))), dtype)
        return jnp.reshape(flat, shape)

    kernel = scope.param("kernel", flat_init, in_shape + features, jnp.float32)
    y = lax.dot_general(
        inputs, kernel, ((axis, tuple(range(len(axis)))), ((), ())), precision=precision
    )
    if bias:
        b = scope.param("bias", bias_init, features, jnp.float32)
        y = y + b
    return y


def conv(
    scope: Scope,
    inputs: Array,
    features: int,
    kernel_size: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "SAME",
    bias: bool = True,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = zeros,
) -> Array:
    """An N-d convolution over channel-last ``inputs`` (``(batch, *spatial, in)``).

    Creates ``kernel`` of shape ``(*kernel_size, in, features)`` and ``bias``.
    """
    inputs = jnp.asarray(inputs)
    nd = len(kernel_size)
    strides = tuple(strides or (1,) * nd)
    kernel = scope.param(
        "kernel",
        kernel_init,
        tuple(kernel_size) + (inputs.shape[-1], features),
        jnp.float32,
    )
    dn = lax.conv_dimension_numbers(inputs.shape, kernel.shape, _conv_spec(nd))
    y = lax.conv_general_dilated(inputs, kernel, strides, padding, dimension_numbers=dn)
    if bias:
        y = y + scope.param("bias", bias_init, (features,), jnp.float32)
    return y


def _conv_spec(nd: int) -> tuple[str, str, str]:
    spatial = {1: "H", 2: "HW", 3: "DHW"}[nd]
    return ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")


def embedding(
    scope: Scope,
    num_embeddings: int,
    features: int,
    init_fn: Callable[..., Array] = jax.nn.initializers.normal(stddev=1.0),
) -> Array:
    """Creates (or reads) the ``embedding`` table of shape ``(num, features)``."""
    return scope.param("embedding", init_fn, (num_embeddings, features), jnp.float32)


def _normalize(x: Array, mean: Array, var: Array, epsilon: float) -> Array:
    return (x - mean) * lax.rsqrt(var + epsilon)


def batch_norm(
    scope: Scope,
    x: Array,
    use_running_average: bool = False,
    axis: int = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-5,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = zeros,
    scale_init: Callable[..., Array] = ones,
    axis_name: str | None = None,
    kind: str = "batch_stats",
) -> Array:
    """Batch normalisation with running statistics in collection ``kind``.

    Creates ``mean`` and ``var`` in ``batch_stats`` and ``scale``/``bias`` params.
    With ``use_running_average=False`` the batch statistics are used (averaged over
    ``axis_name`` when given, e.g. inside ``vmap``) and, when ``batch_stats`` is
    mutable and not initialising, the running averages are updated.
    """
    x = jnp.asarray(x)
    axis = axis % x.ndim
    feat = (x.shape[axis],)
    reduce = tuple(i for i in range(x.ndim) if i != axis)
    is_init = not scope.has_variable(kind, "mean")
    ra_mean = scope.variable(kind, "mean", jnp.zeros, feat, jnp.float32)
    ra_var = scope.variable(kind, "var", jnp.ones, feat, jnp.float32)
    if use_running_average:
        mean, var = ra_mean.value, ra_var.value
    else:
        mean = jnp.mean(x, axis=reduce)
        mean2 = jnp.mean(jnp.square(x), axis=reduce)
        if axis_name is not None:
            mean, mean2 = lax.pmean((mean, mean2), axis_name)
        var = jnp.maximum(0.0, mean2 - jnp.square(mean))
        if not is_init:  # updating needs a mutable batch_stats, as in Flax
            ra_mean.value = momentum * ra_mean.value + (1 - momentum) * mean
            ra_var.value = momentum * ra_var.value + (1 - momentum) * var
    shape = [1] * x.ndim
    shape[axis] = feat[0]
    y = _normalize(x, mean.reshape(shape), var.reshape(shape), epsilon)
    if scale:
        y = y * scope.param("scale", scale_init, feat, jnp.float32).reshape(shape)
    if bias:
        y = y + scope.param("bias", bias_init, feat, jnp.float32).reshape(shape)
    return y


def layer_norm(
    scope: Scope,
    x: Array,
    epsilon: float = 1e-6,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = zeros,
    scale_init: Callable[..., Array] = ones,
) -> Array:
    """Layer normalisation over the last axis, with ``scale`` and ``bias`` params."""
    x = jnp.asarray(x)
    feat = (x.shape[-1],)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.maximum(
        0.0, jnp.mean(jnp.square(x), axis=-1, keepdims=True) - jnp.square(mean)
    )
    y = _normalize(x, mean, var, epsilon)
    if scale:
        y = y * scope.param("scale", scale_init, feat, jnp.float32)
    if bias:
        y = y + scope.param("bias", bias_init, feat, jnp.float32)
    return y


def group_norm(
    scope: Scope,
    x: Array,
    num_groups: int = 32,
    epsilon: float = 1e-6,
    bias: bool = True,
    scale: bool = True,
    bias_init: Callable[..., Array] = zeros,
    scale_init: Callable[..., Array] = ones,
) -> Array:
    """Group normalisation over the channel (last) axis split into ``num_groups``."""
    x = jnp.asarray(x)
    c = x.shape[-1]
    if c % num_groups:
        raise ValueError(
            f"group_norm: {c} channels cannot be split into {num_groups} groups."
        )
    g = x.reshape(x.shape[:-1] + (num_groups, c // num_groups))
    axes = tuple(range(1, g.ndim - 2)) + (g.ndim - 1,)
    mean = jnp.mean(g, axis=axes, keepdims=True)
    var = jnp.maximum(
        0.0, jnp.mean(jnp.square(g), axis=axes, keepdims=True) - jnp.square(mean)
    )
    y = _normalize(g, mean, var, epsilon).reshape(x.shape)
    if scale:
        y = y * scope.param("scale", scale_init, (c,), jnp.float32)
    if bias:
        y = y + scope.param("bias", bias_init, (c,), jnp.float32)
    return y


def dropout(
    scope: Scope,
    inputs: Array,
    rate: float,
    deterministic: bool = False,
    rng: Any = None,
) -> Array:
    """Zeroes each element with probability ``rate`` and rescales the rest.

    Draws from the ``'dropout'`` stream unless ``rng`` is given.
    """
    if deterministic or rate == 0.0:
        return inputs
    if rate == 1.0:
        return jnp.zeros_like(inputs)
    if rng is None:
        rng = scope.make_rng("dropout")
    keep = jax.random.bernoulli(rng, 1.0 - rate, jnp.shape(inputs))
    return lax.select(keep, inputs / (1.0 - rate), jnp.zeros_like(inputs))
