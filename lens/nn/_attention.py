"""Attention: dot-product attention, masks, MultiHeadDotProductAttention, SelfAttention.

Submodule names (``query``, ``key``, ``value``, ``out``) and the decode cache
(``cache``: ``cached_key``, ``cached_value``, ``cache_index``) follow Flax Linen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from lens.nn import initializers
from lens.nn._dtypes import merge_param, promote_dtype
from lens.nn._linear import DenseGeneral
from lens.nn._module import Module, compact
from lens.nn._normalization import LayerNorm

Array = Any
Dtype = Any


def dot_product_attention_weights(
    query: Array,
    key: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Any = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: Any = None,
    module: Module | None = None,
) -> Array:
    """Attention weights ``softmax(q k^T / sqrt(d) + bias, masked)``: ``[..., h, q, k]``."""
    query, key = promote_dtype(query, key, dtype=dtype)
    dtype = query.dtype
    if query.ndim != key.ndim or query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query {query.shape} and key {key.shape} must have the same rank and depth."
        )
    query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
    weights = jnp.einsum("...qhd,...khd->...hqk", query, key, precision=precision)
    if bias is not None:
        weights = weights + bias
    if mask is not None:
        big_neg = jnp.finfo(dtype).min
        weights = jnp.where(mask, weights, big_neg)
    weights = jax.nn.softmax(weights).astype(dtype)
    if module is not None:
        module.sow("intermediates", "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        keep = 1.0 - dropout_rate
        if broadcast_dropout:
            shape = (1,) * (weights.ndim - 2) + weights.shape[-2:]
            keep_mask = jax.random.bernoulli(dropout_rng, keep, shape)
        else:
            keep_mask = jax.random.bernoulli(dropout_rng, keep, weights.shape)
        weights = weights * (keep_mask.astype(dtype) / jnp.asarray(keep, dtype))
    return weights


def dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Any = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: Any = None,
    module: Module | None = None,
) -> Array:
    """Multi-head attention on ``[..., length, heads, depth]`` inputs."""
    query, key, value = promote_dtype(query, key, value, dtype=dtype)
    weights = dot_product_attention_weights(
        query,
        key,
        bias,
        mask,
        broadcast_dropout,
        dropout_rng,
        dropout_rate,
        deterministic,
        query.dtype,
        precision,
        module,
    )
    return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)


def make_attention_mask(
    query_input: Array,
    key_input: Array,
    pairwise_fn: Callable[..., Array] = jnp.multiply,
    extra_batch_dims: int = 0,
    dtype: Dtype = jnp.float32,
) -> Array:
    """A ``[batch..., 1, q, k]`` mask from per-position query and key inputs."""
    mask = pairwise_fn(jnp.expand_dims(query_input, -1), jnp.expand_dims(key_input, -2))
    mask = jnp.expand_dims(mask, -3)
    mask = jnp.expand_dims(mask, tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(
    x: Array, extra_batch_dims: int = 0, dtype: Dtype = jnp.float32
) -> Array:
    """A causal (lower-triangular) mask for inputs ``[batch..., length]``."""
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims, dtype)


def combine_masks(*masks: Array | None, dtype: Dtype = jnp.float32) -> Array | None:
    """The logical AND of the masks that are not None (None if all are)."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    if len({m.ndim for m in present}) != 1:
        raise ValueError(
            f"combine_masks: masks must have the same rank, got {[m.ndim for m in present]}."
        )
    out = present[0]
    for m in present[1:]:
        out = jnp.logical_and(out, m)
    return out.astype(dtype)


class MultiHeadDotProductAttention(Module):
    """Multi-head dot-product attention (Linen-compatible).

    Attributes:
      num_heads: the number of heads; ``qkv_features`` must be divisible by it.
      qkv_features: the projection size (default: the query's feature size).
      out_features: the output size (default: the query's feature size).
      dropout_rate, broadcast_dropout, deterministic: attention dropout.
      decode: autoregressive decoding with a ``cache`` collection.
      normalize_qk: LayerNorm on queries and keys.
    """

    num_heads: int
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    qkv_features: int | None = None
    out_features: int | None = None
    broadcast_dropout: bool = True
    dropout_rate: float = 0.0
    deterministic: bool | None = None
    precision: Any = None
    kernel_init: Callable[..., Array] = initializers.default_kernel_init
    out_kernel_init: Callable[..., Array] | None = None
    bias_init: Callable[..., Array] = initializers.zeros_init()
    out_bias_init: Callable[..., Array] | None = None
    use_bias: bool = True
    attention_fn: Callable[..., Array] = dot_product_attention
    decode: bool = False
    normalize_qk: bool = False

    @compact
    def __call__(
        self,
        inputs_q: Array,
        inputs_k: Array | None = None,
        inputs_v: Array | None = None,
        *,
        inputs_kv: Array | None = None,
        mask: Array | None = None,
        deterministic: bool | None = None,
        dropout_rng: Any = None,
        sow_weights: bool = False,
    ) -> Array:
        """Attends from ``inputs_q`` to ``inputs_k``/``inputs_v`` (default: self-attention)."""
        if inputs_kv is not None:
            if inputs_k is not None or inputs_v is not None:
                raise ValueError(
                    "Give either inputs_kv or inputs_k/inputs_v, not both."
                )
            inputs_k = inputs_v = inputs_kv
        else:
            if inputs_k is None:
                if inputs_v is not None:
                    raise ValueError("inputs_v needs inputs_k.")
                inputs_k = inputs_q
            if inputs_v is None:
                inputs_v = inputs_k
        features = self.out_features or inputs_q.shape[-1]
        qkv_features = self.qkv_features or inputs_q.shape[-1]
        if qkv_features % self.num_heads:
            raise ValueError(
                f"qkv_features ({qkv_features}) must be divisible by num_heads ({self.num_heads})."
            )
        head_dim = qkv_features // self.num_heads
        dense = functools.partial(
            DenseGeneral,
            axis=-1,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            features=(self.num_heads, head_dim),
            kernel_init=self.kernel_init,
            bias_init=self.bias_init,
            use_bias=self.use_bias,
            precision=self.precision,
        )
        query, key, value = (
            dense(name="query")(inputs_q),
            dense(name="key")(inputs_k),
            dense(name="value")(inputs_v),
        )
        if self.normalize_qk:
            query = LayerNorm(
                name="query_ln",
                use_bias=False,
                dtype=self.dtype,
                param_dtype=self.param_dtype,
            )(query)
            key = LayerNorm(
                name="key_ln",
                use_bias=False,
                dtype=self.dtype,
                param_dtype=self.param_dtype,
            )(key)
        if self.decode:
            initialized = self.has_variable("cache", "cached_key")
            cached_key = self.variable(
                "cache", "cached_key", jnp.zeros, key.shape, key.dtype
            )
            cached_value = self.variable(
                "cache", "cached_value", jnp.zeros, value.shape, value.dtype
            )
            cache_index = self.variable(
                "cache", "cache_index", lambda: jnp.array(0, dtype=jnp.int32)
            )
            if initialized:
                *batch_dims, max_length, num_heads, depth = cached_key.value.shape
                expected = tuple(batch_dims) + (1, num_heads, depth)
                if expected != query.shape:
                    raise ValueError(
                        f"Autoregressive cache shape error: decode one step at a time, expected "
                        f"query shape {expected} but got {query.shape}."
                    )
                cur = cache_index.value
                zero = jnp.array(0, dtype=lax.dtype(cur.dtype))
                indices = (zero,) * len(batch_dims) + (cur, zero, zero)
                key = lax.dynamic_update_slice(cached_key.value, key, indices)
                value = lax.dynamic_update_slice(cached_value.value, value, indices)
                cached_key.value = key
                cached_value.value = value
                cache_index.value = cache_index.value + 1
                mask = combine_masks(
                    mask,
                    jnp.broadcast_to(
                        jnp.arange(max_length) <= cur,
                        tuple(batch_dims) + (1, 1, max_length),
                    ),
                )
        dropout_rate = self.dropout_rate
        if dropout_rate > 0.0:
            m_deterministic = merge_param(
                "deterministic", self.deterministic, deterministic
            )
            if not m_deterministic and dropout_rng is None:
                dropout_rng = self.make_rng("dropout")
        else:
            m_deterministic = True
        x = self.attention_fn(
            query,
            key,
            value,
            mask=mask,
            dropout_rng=dropout_rng,
            dropout_rate=dropout_rate,
            broadcast_dropout=self.broadcast_dropout,
            deterministic=m_deterministic,
            dtype=self.dtype,
            precision=self.precision,
            **({"module": self} if sow_weights else {}),
        )
        out = DenseGeneral(
            features=features,
            axis=(-2, -1),
            kernel_init=self.out_kernel_init or self.kernel_init,
            bias_init=self.out_bias_init or self.bias_init,
            use_bias=self.use_bias,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            precision=self.precision,
            name="out",
        )(x)
        return out


class MultiHeadAttention(MultiHeadDotProductAttention):
    """Alias of :class:`MultiHeadDotProductAttention` (Linen has both names)."""


class SelfAttention(MultiHeadDotProductAttention):
    """Self-attention: ``MultiHeadDotProductAttention`` with keys/values = queries."""

    @compact
    def __call__(  # type: ignore[override]
        self,
        inputs_q: Array,
        mask: Array | None = None,
        deterministic: bool | None = None,
        dropout_rng: Any = None,
        sow_weights: bool = False,
    ) -> Array:
        """Attends ``inputs_q`` to itself."""
        return MultiHeadDotProductAttention.__call__._lens_orig(  # type: ignore[attr-defined]
            self,
            inputs_q,
            mask=mask,
            deterministic=deterministic,
            dropout_rng=dropout_rng,
            sow_weights=sow_weights,
        )
