"""Functional linear layers (``lens.core.nn.linear``, like ``flax.core.nn.linear``).

Each is ``layer(scope, inputs, ...)``: parameters come from ``scope.param`` (the
initializer is called as ``init(rng, shape)``, i.e. float32), and ``dtype`` is the
computation dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from lens import struct
from lens.core._scope import Scope
from lens.core.nn import initializers
from lens.core.nn.initializers import default_embed_init, default_kernel_init

Array = Any

__all__ = [
    "Embedding",
    "conv",
    "conv_transpose",
    "default_embed_init",
    "default_kernel_init",
    "dense",
    "dense_general",
    "embedding",
]


def _normalize_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    return tuple(a if a >= 0 else ndim + a for a in axes)


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, Iterable) else (x,)


def dense_general(
    scope: Scope,
    inputs: Array,
    features: int | Sequence[int],
    axis: int | Sequence[int] = -1,
    batch_dims: int | Sequence[int] = (),
    bias: bool = True,
    dtype: Any = jnp.float32,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
    precision: Any = None,
) -> Array:
    """A linear transformation contracting ``axis`` of ``inputs`` to ``features``.

    ``batch_dims`` (leading, consecutive) are kernel batch axes: each batch entry
    has its own kernel slice (initialised, as in Flax, by one draw repeated).
    """
    inputs = jnp.asarray(inputs, dtype)
    features, axis, batch_dims = (
        _as_tuple(features),
        _as_tuple(axis),
        _as_tuple(batch_dims),
    )
    if batch_dims:
        max_dim = np.max(batch_dims)
        if set(batch_dims) != set(range(max_dim + 1)):
            raise ValueError(
                f"batch_dims {str(batch_dims)} must be consecutive leading dimensions starting from 0."
            )
    ndim = inputs.ndim
    n_batch = len(batch_dims)
    axis = _normalize_axes(axis, ndim)
    batch_dims = _normalize_axes(batch_dims, ndim)
    n_axis, n_features = len(axis), len(features)

    def kernel_init_wrap(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
        copies = int(np.prod(shape[:n_batch], dtype=np.int32))
        flat = (
            int(np.prod(shape[n_batch : n_axis + n_batch])),
            int(np.prod(shape[-n_features:])),
        )
        k = jnp.concatenate([kernel_init(rng, flat, dtype) for _ in range(copies)], 0)
        return jnp.reshape(k, shape)

    batch_shape = tuple(inputs.shape[a] for a in batch_dims)
    kernel_shape = tuple(inputs.shape[a] for a in axis) + features
    kernel = scope.param("kernel", kernel_init_wrap, batch_shape + kernel_shape)
    kernel = jnp.asarray(kernel, dtype)
    batch_ind = tuple(range(n_batch))
    contract_ind = tuple(range(n_batch, n_axis + n_batch))
    out = lax.dot_general(
        inputs,
        kernel,
        ((axis, contract_ind), (batch_dims, batch_ind)),
        precision=precision,
    )
    if bias:

        def bias_init_wrap(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
            copies = int(np.prod(shape[:n_batch], dtype=np.int32))
            flat = (int(np.prod(shape[-n_features:])),)
            b = jnp.concatenate([bias_init(rng, flat, dtype) for _ in range(copies)], 0)
            return jnp.reshape(b, shape)

        b = scope.param("bias", bias_init_wrap, batch_shape + features)
        for ax in sorted(set(range(inputs.ndim)) - set(axis) - set(batch_dims)):
            b = jnp.expand_dims(b, ax)
        out = out + jnp.asarray(b, dtype)
    return out


def dense(
    scope: Scope,
    inputs: Array,
    features: int,
    bias: bool = True,
    dtype: Any = jnp.float32,
    precision: Any = None,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
) -> Array:
    """A linear layer over the last axis: ``inputs @ kernel + bias``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.core import init
        >>> y, v = init(dense)(jax.random.key(0), jnp.ones((2, 3)), 4)
        >>> v["params"]["kernel"].shape, y.shape
        ((3, 4), (2, 4))
    """
    inputs = jnp.asarray(inputs, dtype)
    kernel = scope.param("kernel", kernel_init, (inputs.shape[-1], features))
    kernel = jnp.asarray(kernel, dtype)
    y = lax.dot_general(
        inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=precision
    )
    if bias:
        b = jnp.asarray(scope.param("bias", bias_init, (features,)), dtype)
        y += jnp.reshape(b, (1,) * (y.ndim - 1) + (-1,))
    return y


def _conv_dimension_numbers(input_shape: Sequence[int]) -> lax.ConvDimensionNumbers:
    ndim = len(input_shape)
    lhs_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
    rhs_spec = (ndim - 1, ndim - 2) + tuple(range(0, ndim - 2))
    return lax.ConvDimensionNumbers(lhs_spec, rhs_spec, lhs_spec)


def conv(
    scope: Scope,
    inputs: Array,
    features: int,
    kernel_size: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: Any = "SAME",
    input_dilation: Sequence[int] | None = None,
    kernel_dilation: Sequence[int] | None = None,
    feature_group_count: int = 1,
    bias: bool = True,
    dtype: Any = jnp.float32,
    precision: Any = None,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
) -> Array:
    """A convolution over channel-last ``inputs`` ``(batch, *spatial, features)``.

    ``kernel``: ``(*kernel_size, in // feature_group_count, features)``.
    """
    inputs = jnp.asarray(inputs, dtype)
    window: Sequence[int] = (1,) * (inputs.ndim - 2) if strides is None else strides
    in_features = inputs.shape[-1]
    if in_features % feature_group_count:
        raise AssertionError(
            f"{in_features} input features are not divisible by "
            f"feature_group_count={feature_group_count}."
        )
    kernel_shape = tuple(kernel_size) + (in_features // feature_group_count, features)
    kernel = jnp.asarray(scope.param("kernel", kernel_init, kernel_shape), dtype)
    y = lax.conv_general_dilated(
        inputs,
        kernel,
        window,
        padding,
        lhs_dilation=input_dilation,
        rhs_dilation=kernel_dilation,
        dimension_numbers=_conv_dimension_numbers(inputs.shape),
        feature_group_count=feature_group_count,
        precision=precision,
    )
    if bias:
        b = jnp.asarray(scope.param("bias", bias_init, (features,)), dtype)
        y += jnp.reshape(b, (1,) * (y.ndim - 1) + (-1,))
    return y


def conv_transpose(
    scope: Scope,
    inputs: Array,
    features: int,
    kernel_size: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: Any = "SAME",
    kernel_dilation: Sequence[int] | None = None,
    bias: bool = True,
    dtype: Any = jnp.float32,
    precision: Any = None,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
) -> Array:
    """A transposed convolution (``lax.conv_transpose``) over channel-last inputs."""
    inputs = jnp.asarray(inputs, dtype)
    window: Sequence[int] = strides or (1,) * (inputs.ndim - 2)
    kernel_shape = tuple(kernel_size) + (inputs.shape[-1], features)
    kernel = jnp.asarray(scope.param("kernel", kernel_init, kernel_shape), dtype)
    y = lax.conv_transpose(
        inputs,
        kernel,
        window,
        padding,
        rhs_dilation=kernel_dilation,
        precision=precision,
    )
    if bias:
        b = jnp.asarray(scope.param("bias", bias_init, (features,)), dtype)
        y += jnp.reshape(b, (1,) * (y.ndim - 1) + (-1,))
    return y


@struct.dataclass
class Embedding:
    """An embedding table with :meth:`lookup` and :meth:`attend`."""

    table: Array

    def lookup(self, indices: Array) -> Array:
        """The rows of ``indices`` (integers): a trailing ``features`` axis."""
        if indices.dtype not in (jnp.int32, jnp.int64, jnp.uint32, jnp.uint64):
            raise ValueError(
                "Input type must be an integer or unsigned integer.\n"
                f"Got {indices.dtype}; cast the ids, e.g. ids.astype(jnp.int32)."
            )
        return self.table[indices]

    def attend(self, query: Array) -> Array:
        """``query @ table.T``: scores over the vocabulary (weight tying)."""
        return jnp.dot(query, self.table.T)


def embedding(
    scope: Scope,
    num_embeddings: int,
    features: int,
    init_fn: Callable[..., Array] = default_embed_init,
) -> Embedding:
    """Creates (or reads) the ``table`` param and returns it as an :class:`Embedding`."""
    return Embedding(scope.param("table", init_fn, (num_embeddings, features)))
