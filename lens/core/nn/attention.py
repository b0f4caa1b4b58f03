"""Functional attention (``lens.core.nn.attention``, like ``flax.core.nn.attention``).

Attention over one or more ``attention_axis`` of inputs
``(batch, *attention dims, features)``, with causal, padding and segmentation
masks and an autoregressive ``cache`` (a :class:`CacheEntry`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens import struct
from lens._kernels.random import bernoulli
from lens.core._scope import Scope
from lens.core.nn import initializers
from lens.core.nn.linear import default_kernel_init, dense_general

Array = Any

__all__ = [
    "CacheEntry",
    "dot_product_attention",
    "make_padding_mask",
    "multi_head_dot_product_attention",
]


def _check_attention_axes(ndim: int, axes: tuple[int, ...]) -> None:
    for ax in axes:
        if not (ndim >= 3 and 1 <= ax < ndim - 2):
            raise ValueError(
                "Attention axis must be between the batch axis and the last-two axes."
                f"\nGot axis {ax} for inputs of rank {ndim} "
                "(batch, *attention dims, heads, depth)."
            )


def dot_product_attention(
    scope: Scope,
    query: Array,
    key: Array,
    value: Array,
    dtype: Any = jnp.float32,
    bias: Array | None = None,
    axis: int | tuple[int, ...] | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Any = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    precision: Any = None,
) -> Array:
    """Attention over ``axis`` of ``(batch, *attention dims, heads, depth)`` inputs.

    The softmax runs jointly over all attention axes of the key. Dropout draws
    from ``'dropout'`` unless ``dropout_rng`` is given.
    """
    assert key.shape[:-1] == value.shape[:-1], "k, v shapes must match (but depth)."
    assert query.shape[0:1] == key.shape[0:1] and query.shape[-1] == key.shape[-1], (
        "q, k batch and depth must match."
    )
    if axis is None:
        axis = tuple(range(1, key.ndim - 2))
    if not isinstance(axis, Iterable):
        axis = (axis,)
    axis = tuple(axis)
    assert key.ndim == query.ndim == value.ndim, "q, k, v must have same rank."
    _check_attention_axes(query.ndim, axis)
    depth = query.shape[-1]
    n = key.ndim
    batch_dims = tuple(int(d) for d in np.delete(range(n), axis + (n - 1,)))
    qk_perm = batch_dims + axis + (n - 1,)
    key = key.transpose(qk_perm)
    query = query.transpose(qk_perm)
    value = value.transpose(batch_dims + (n - 1,) + axis)
    query = query / jnp.sqrt(depth).astype(dtype)
    bt = tuple(range(len(batch_dims)))
    weights = lax.dot_general(
        query, key, (((n - 1,), (n - 1,)), (bt, bt)), precision=precision
    )
    if bias is not None:
        weights = weights + bias
    norm_dims = tuple(range(weights.ndim - len(axis), weights.ndim))
    weights = lax.exp(
        weights - jax.scipy.special.logsumexp(weights, axis=norm_dims, keepdims=True)
    ).astype(dtype)
    if not deterministic and dropout_rate > 0.0:
        if dropout_rng is None:
            dropout_rng = scope.make_rng("dropout")
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            shape = (1,) * len(bt) + weights.shape[-(2 * len(axis)) :]
            keep = bernoulli(dropout_rng, keep_prob, shape)
        else:
            keep = bernoulli(dropout_rng, keep_prob, weights.shape)
        weights = weights * (
            keep.astype(weights.dtype) / jnp.asarray(keep_prob, dtype=dtype)
        )
    contract = (norm_dims, tuple(range(value.ndim - len(axis), value.ndim)))
    y = lax.dot_general(weights, value, (contract, (bt, bt)), precision=precision)
    return y.transpose(_invert_perm(qk_perm))


def _invert_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, j in enumerate(perm):
        inv[j] = i
    return tuple(inv)


class CacheEntry(struct.PyTreeNode):
    """The autoregressive cache: keys, values and the next position ``i``."""

    key: Array
    value: Array
    i: Array


def multi_head_dot_product_attention(
    scope: Scope,
    inputs_q: Array,
    inputs_kv: Array | None,
    num_heads: int,
    dtype: Any = jnp.float32,
    qkv_features: int | None = None,
    out_features: int | None = None,
    attention_axis: tuple[int, ...] | None = None,
    causal_mask: bool = False,
    padding_mask: Array | None = None,
    key_padding_mask: Array | None = None,
    segmentation: Array | None = None,
    key_segmentation: Array | None = None,
    cache: bool = False,
    broadcast_dropout: bool = True,
    dropout_rng: Any = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    precision: Any = None,
    kernel_init: Callable[..., Array] = default_kernel_init,
    bias_init: Callable[..., Array] = initializers.zeros_init(),
    bias: bool = True,
    attention_fn: Callable[..., Array] = dot_product_attention,
) -> Array:
    """Multi-head attention from ``inputs_q`` to ``inputs_kv`` (None: self).

    Children ``query``, ``key``, ``value``, ``out`` (:func:`dense_general`).
    With ``cache=True`` (causal only), a ``CacheEntry`` in collection ``cache``
    under ``entry``: initialise it by calling with ``inputs_q`` of the full
    shape; later calls take one position at a time.
    """
    assert causal_mask or not cache, "Caching is only support for causal attention."
    if inputs_kv is None:
        inputs_kv = inputs_q
    if attention_axis is None:
        attention_axis = tuple(range(1, inputs_q.ndim - 1))
    features: int = out_features or inputs_q.shape[-1]
    qkv_features = int(qkv_features or inputs_q.shape[-1])
    assert qkv_features % num_heads == 0, (
        "Memory dimension must be divisible by number of heads."
    )
    head_dim = qkv_features // num_heads
    dense = functools.partial(
        dense_general, axis=-1, dtype=dtype, features=(num_heads, head_dim),
        kernel_init=kernel_init, bias_init=bias_init, bias=bias, precision=precision,
    )  # fmt: skip
    query = scope.child(dense, "query")(inputs_q)
    key = scope.child(dense, "key")(inputs_kv)
    value = scope.child(dense, "value")(inputs_kv)

    cache_entry: Any = None
    if cache:
        key, value, cache_entry, key_padding_mask = _cache_step(
            scope, key, value, inputs_q, attention_axis, key_padding_mask
        )
    attention_bias = _attention_bias(
        query, key, attention_axis, dtype, causal_mask, cache_entry,
        padding_mask, key_padding_mask, segmentation, key_segmentation,
    )  # fmt: skip
    x = scope.child(attention_fn)(
        query, key, value, dtype=dtype, axis=attention_axis, bias=attention_bias,
        precision=precision, dropout_rng=dropout_rng, dropout_rate=dropout_rate,
        broadcast_dropout=broadcast_dropout, deterministic=deterministic,
    )  # fmt: skip
    return scope.child(dense_general, name="out")(
        x,
        features=features,
        axis=(-2, -1),
        kernel_init=kernel_init,
        bias_init=bias_init,
        bias=bias,
        dtype=dtype,
        precision=precision,
    )


def _cache_step(
    scope: Scope,
    key: Array,
    value: Array,
    inputs_q: Array,
    attention_axis: tuple[int, ...],
    key_padding_mask: Array | None,
) -> tuple[Array, Array, Any, Array | None]:
    """Writes this step's key and value into the cache (or creates its init fn)."""
    if not scope.has_variable("cache", "entry"):
        ndim, tail_shape = key.ndim, key.shape[-2:]

        def init_fn(shape: tuple, dtype: Any = jnp.float32) -> CacheEntry:
            full_shape = tuple(shape) + tail_shape
            if len(full_shape) != ndim:
                raise ValueError(
                    "Shape should be a tuple with the shape of the batch and "
                    "attention dims."
                )
            return CacheEntry(
                key=jnp.zeros(full_shape, dtype),
                value=jnp.zeros(full_shape, dtype),
                i=jnp.zeros((), jnp.uint32),
            )

        cache_entry = init_fn
    else:
        cache_entry = scope.get_variable("cache", "entry")
        if not isinstance(cache_entry, CacheEntry):
            raise ValueError(
                "Cache is not initialized.\nThe 'entry' in the cache collection "
                "must be the CacheEntry an earlier call created."
            )
        expected = list(cache_entry.key.shape[:-2])
        for d in attention_axis:
            expected[d] = 1
        expected_shape = tuple(expected) + inputs_q.shape[-1:]
        if expected_shape != inputs_q.shape:
            raise ValueError(
                f"Invalid shape provided, expected shape {expected_shape} instead got {inputs_q.shape}."
            )
        cshape = cache_entry.key.shape
        indices: list[Any] = [0] * len(cshape)
        i = cache_entry.i
        attn_size = int(np.prod(np.take(cshape, attention_axis)))
        for d in attention_axis:
            attn_size //= cshape[d]
            indices[d] = (i // attn_size).astype(jnp.int32)
            i = i % attn_size
        key = lax.dynamic_update_slice(cache_entry.key, key, indices)
        value = lax.dynamic_update_slice(cache_entry.value, value, indices)
        one = jnp.array(1, jnp.uint32)
        cache_entry = cache_entry.replace(i=cache_entry.i + one, key=key, value=value)
        key_padding_mask = jnp.broadcast_to(
            jnp.arange(cshape[1]) < cache_entry.i, cshape[:2]
        ).astype(jnp.float32)[..., None]
    scope.put_variable("cache", "entry", cache_entry)
    return key, value, cache_entry, key_padding_mask


def _attention_bias(
    query: Array,
    key: Array,
    attention_axis: tuple[int, ...],
    dtype: Any,
    causal_mask: bool,
    cache_entry: Any,
    padding_mask: Array | None,
    key_padding_mask: Array | None,
    segmentation: Array | None,
    key_segmentation: Array | None,
) -> Array | None:
    """The additive bias (0 or -1e10) of the causal, padding and segment masks."""
    masks = []
    if causal_mask:
        if isinstance(cache_entry, CacheEntry):
            pre = (1,) * (key.ndim - 1)
            attn_shape = tuple(np.take(key.shape, attention_axis))
            ii = jnp.arange(int(np.prod(attn_shape)), dtype=jnp.uint32)
            masks.append((ii < cache_entry.i).reshape(pre + attn_shape))
        else:
            masks.append(_make_causal_mask(key, attention_axis))
    if padding_mask is not None:
        if key_padding_mask is None:
            key_padding_mask = padding_mask
        masks.append(
            make_padding_mask(
                padding_mask_query=padding_mask,
                padding_mask_key=key_padding_mask,
                query_shape=query.shape,
                key_shape=key.shape,
                attention_axis=attention_axis,
            )
        )
    if segmentation is not None:
        if key_segmentation is None:
            key_segmentation = segmentation
        masks.append(
            make_padding_mask(
                padding_mask_query=segmentation,
                padding_mask_key=key_segmentation,
                query_shape=query.shape,
                key_shape=key.shape,
                attention_axis=attention_axis,
                segmentation_mask=True,
            )
        )
    attention_bias = None
    if masks:
        mask = masks[0]
        for m in masks[1:]:
            mask = jnp.logical_and(mask, m)
        attention_bias = lax.select(
            mask > 0,
            jnp.full(mask.shape, 0.0).astype(dtype),
            jnp.full(mask.shape, -1e10).astype(dtype),
        )
    return attention_bias


def make_padding_mask(
    padding_mask_query: Array,
    padding_mask_key: Array,
    query_shape: tuple[int, ...],
    key_shape: tuple[int, ...],
    attention_axis: tuple[int, ...] | None = None,
    segmentation_mask: bool = False,
) -> Array:
    """A ``(batch, 1, *q attention dims, *k attention dims)`` float mask.

    ``segmentation_mask=True`` compares segment ids (equal: attend) instead of
    multiplying padding indicators.
    """
    assert query_shape[0] == key_shape[0], "q, k batch sizes must match."
    assert len(query_shape) == len(key_shape), "q, k must have same rank."
    ndim = len(key_shape)
    if attention_axis is None:
        attention_axis = tuple(range(1, ndim - 2))
    assert isinstance(attention_axis, tuple)
    _check_attention_axes(ndim, attention_axis)
    final = (query_shape[0], 1)
    for ax in attention_axis:
        final += (query_shape[ax],)
    for ax in attention_axis:
        final += (key_shape[ax],)
    q = padding_mask_query[..., None]
    k = padding_mask_key[..., None]
    perm = (0,) + tuple(int(a) for a in np.flip(np.arange(k.ndim)))[:-1]
    if segmentation_mask:
        mask = jnp.equal(q, k.transpose(perm))
    else:
        mask = jnp.multiply(q, k.transpose(perm))
    return lax.convert_element_type(mask.reshape(final), jnp.float32)


def _make_causal_mask(
    key: Array, attention_axis: tuple[int, ...] | None = None, self_mask: bool = False
) -> Array:
    if attention_axis is None:
        attention_axis = tuple(range(1, key.ndim - 2))
    assert isinstance(attention_axis, tuple)
    _check_attention_axes(key.ndim, attention_axis)
    mask_shape = (1,) * (key.ndim - len(attention_axis) - 1)
    final = mask_shape
    for _ in range(2):
        flat = 1
        for ax in attention_axis:
            final += (key.shape[ax],)
            flat *= key.shape[ax]
        mask_shape += (flat,)
    n, m = mask_shape[-2:]
    k = -1 if self_mask else 0
    x = jnp.arange(n, dtype=jnp.int32)
    y = jnp.arange(m, dtype=jnp.int32)
    mask = lax.ge(
        lax.broadcast_in_dim(x, shape=(n, m), broadcast_dimensions=(0,)) + k,
        lax.broadcast(y, [n]),
    )
    return mask.reshape(final)
