"""Attention for eager modules: ``dot_product_attention`` (grouped-query,
causal, sown weights) and ``MultiHeadAttention`` with its decode cache, with
flax.nnx's constructor, variable names and key order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens.core.nn import initializers
from lens.nn import combine_masks, dot_product_attention_weights
from lens.nnx.module import Module
from lens.nnx.nn.dtypes import promote_dtype
from lens.nnx.nn.linear import LinearGeneral
from lens.nnx.nn.normalization import LayerNorm
from lens.nnx.nn.parameters import NO_META
from lens.nnx.rnglib import Rngs, RngStream
from lens.nnx.variablelib import Cache, Intermediate

Array = Any


_default_kernel_init = initializers.default_kernel_init


_zeros = initializers.zeros_init()


def dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: Array | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Any = None,
    precision: Any = None,
    module: Module | None = None,
    promote_dtype: Callable[..., Any] = promote_dtype,
    is_causal: bool = False,
) -> Array:
    """Attention of ``query`` ``[batch..., q_len, heads, depth]`` over ``key`` and
    ``value`` ``[batch..., kv_len, kv_heads, depth]``. ``kv_heads`` may divide
    ``heads`` (grouped-query attention); ``module`` sows the weights as
    ``attention_weights``; ``is_causal`` masks future positions."""
    query, key, value = promote_dtype((query, key, value), dtype=dtype)
    if query.ndim != key.ndim or key.ndim != value.ndim:
        raise ValueError("q, k, v must have same rank.")
    if key.shape[-3] != value.shape[-3]:
        raise ValueError(
            f"k, v lengths must match, but got {key.shape[-3]} and {value.shape[-3]}."
        )
    q_heads, kv_heads = query.shape[-2], key.shape[-2]
    if q_heads % kv_heads:
        raise ValueError(
            f"Query heads ({q_heads}) must be multiple of Key/Value heads ({kv_heads})."
        )
    if dropout_rate == 0.0 and module is None:
        shape = query.shape
        if len(shape) > 4:

            def flat(x: Any) -> Any:
                if x is None:
                    return None
                return jnp.reshape(x, (int(np.prod(x.shape[:-3])), *x.shape[-3:]))

            query, key, value, bias, mask = map(flat, (query, key, value, bias, mask))
        if mask is not None:
            mask = mask.astype(jnp.bool_)
        out = jax.nn.dot_product_attention(
            query, key, value, bias, mask, is_causal=is_causal
        )
        return jnp.reshape(out, shape) if len(shape) > 4 else out
    n_rep = q_heads // kv_heads
    if n_rep > 1:
        key = jnp.repeat(key, n_rep, axis=-2)
        value = jnp.repeat(value, n_rep, axis=-2)
    if is_causal:
        causal = jnp.tril(jnp.ones((query.shape[-3], key.shape[-3]), jnp.bool_))
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    weights = dot_product_attention_weights(
        query,
        key,
        bias,
        mask,
        broadcast_dropout,
        dropout_rng,
        dropout_rate,
        deterministic,
        dtype,
        precision,
    )
    if module is not None:
        module.sow(Intermediate, "attention_weights", weights)
    return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)


class MultiHeadAttention(Module):
    """Multi-head dot-product attention: ``query``/``key``/``value`` projections
    to ``(heads, head_dim)`` (``num_kv_heads`` for key and value: grouped-query
    attention) and ``out`` back; ``decode=True`` with :meth:`init_cache` attends
    one step at a time over a ``Cache``."""

    def __init__(
        self,
        num_heads: int,
        in_features: int,
        qkv_features: int | None = None,
        out_features: int | None = None,
        num_kv_heads: int | None = None,
        in_kv_features: int | None = None,
        *,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        broadcast_dropout: bool = True,
        dropout_rate: float = 0.0,
        deterministic: bool | None = None,
        precision: Any = None,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        out_kernel_init: Callable[..., Array] | None = None,
        bias_init: Callable[..., Array] = _zeros,
        out_bias_init: Callable[..., Array] | None = None,
        use_bias: bool = True,
        attention_fn: Callable[..., Array] = dot_product_attention,
        decode: bool | None = None,
        normalize_qk: bool = False,
        qkv_promote_dtype: Callable[..., Any] = promote_dtype,
        out_promote_dtype: Callable[..., Any] = promote_dtype,
        ln_promote_dtype: Callable[..., Any] = promote_dtype,
        qkv_dot_general: Callable[..., Array] | None = None,
        out_dot_general: Callable[..., Array] | None = None,
        qkv_dot_general_cls: Any = None,
        out_dot_general_cls: Any = None,
        rngs: Rngs,
        keep_rngs: bool = True,
        kernel_metadata: Mapping[str, Any] = NO_META,
        out_kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
        out_bias_metadata: Mapping[str, Any] = NO_META,
        query_ln_scale_metadata: Mapping[str, Any] = NO_META,
        key_ln_scale_metadata: Mapping[str, Any] = NO_META,
    ):
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features if qkv_features is not None else in_features
        self.out_features = out_features if out_features is not None else in_features
        self.in_kv_features = (
            in_kv_features if in_kv_features is not None else in_features
        )
        self.num_kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
        if num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be divisible by num_kv_heads "
                f"({self.num_kv_heads})."
            )
        if self.qkv_features % num_heads:
            raise ValueError(
                f"Memory dimension ({self.qkv_features}) must be divisible by "
                f"'num_heads' heads ({num_heads})."
            )
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.precision = precision
        self.use_bias = use_bias
        self.attention_fn = attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        self.qkv_promote_dtype = qkv_promote_dtype
        self.out_promote_dtype = out_promote_dtype
        self.ln_promote_dtype = ln_promote_dtype
        self.qkv_dot_general = qkv_dot_general
        self.out_dot_general = out_dot_general
        self.qkv_dot_general_cls = qkv_dot_general_cls
        self.out_dot_general_cls = out_dot_general_cls
        self.head_dim = self.qkv_features // num_heads

        def proj(n_in: int, heads: int) -> LinearGeneral:
            return LinearGeneral(
                n_in,
                (heads, self.head_dim),
                dtype=dtype,
                param_dtype=param_dtype,
                kernel_init=kernel_init,
                bias_init=bias_init,
                use_bias=use_bias,
                precision=precision,
                promote_dtype=qkv_promote_dtype,
                dot_general=qkv_dot_general,
                dot_general_cls=qkv_dot_general_cls,
                rngs=rngs,
                kernel_metadata=kernel_metadata,
                bias_metadata=bias_metadata,
            )

        self.query = proj(in_features, num_heads)
        self.key = proj(self.in_kv_features, self.num_kv_heads)
        self.value = proj(self.in_kv_features, self.num_kv_heads)
        self.query_ln: LayerNorm | None = None
        self.key_ln: LayerNorm | None = None
        if normalize_qk:
            for name, meta in (
                ("query_ln", query_ln_scale_metadata),
                ("key_ln", key_ln_scale_metadata),
            ):
                ln = LayerNorm(
                    self.head_dim,
                    use_bias=False,
                    dtype=dtype,
                    param_dtype=param_dtype,
                    promote_dtype=ln_promote_dtype,
                    rngs=rngs,
                    scale_metadata=meta,
                )
                setattr(self, name, ln)
        self.out = LinearGeneral(
            (num_heads, self.head_dim),
            self.out_features,
            axis=(-2, -1),
            kernel_init=out_kernel_init or kernel_init,
            bias_init=out_bias_init or bias_init,
            use_bias=use_bias,
            dtype=dtype,
            param_dtype=param_dtype,
            precision=precision,
            promote_dtype=out_promote_dtype,
            dot_general=out_dot_general,
            dot_general_cls=out_dot_general_cls,
            rngs=rngs,
            kernel_metadata=out_kernel_metadata or kernel_metadata,
            bias_metadata=out_bias_metadata or bias_metadata,
        )
        self.rngs = rngs["dropout"].fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key: Cache | None = None
        self.cached_value: Cache | None = None
        self.cache_index: Cache | None = None

    def init_cache(self, input_shape: Sequence[int], dtype: Any = jnp.float32) -> None:
        """Creates the decode cache for inputs of ``input_shape`` (batch..., length,
        features): ``cached_key``/``cached_value`` and ``cache_index``."""
        shape = (*input_shape[:-1], self.num_kv_heads, self.head_dim)
        self.cached_key = Cache(jnp.zeros(shape, dtype))
        self.cached_value = Cache(jnp.zeros(shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))

    def set_view(
        self,
        deterministic: bool | None = None,
        decode: bool | None = None,
        batch_size: int | Sequence[int] | None = None,
        max_length: int | None = None,
    ) -> None:
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, the module is set to deterministic mode.
          decode: if True, the module is set to decode mode.
          batch_size: the batch size to use for the cache.
          max_length: the max length to use for the cache.
        """
        if deterministic is not None:
            self.deterministic = deterministic
        if decode is not None:
            self.decode = decode
            if self.cached_key is None or self.cached_value is None:
                if batch_size is None:
                    raise TypeError(
                        "'batch_size' must be provided when initializing cache."
                    )
                if max_length is None:
                    raise TypeError(
                        "'max_length' must be provided when initializing cache."
                    )
                batch = (
                    (batch_size,) if isinstance(batch_size, int) else tuple(batch_size)
                )
                self.init_cache((*batch, max_length, 1), self.dtype or jnp.float32)

    def __call__(
        self,
        inputs_q: Array,
        inputs_k: Array | None = None,
        inputs_v: Array | None = None,
        *,
        mask: Array | None = None,
        deterministic: bool | None = None,
        rngs: Rngs | RngStream | None = None,
        sow_weights: bool = False,
        decode: bool | None = None,
        is_causal: bool = False,
        out_sharding: Any = None,
        qkv_sharding: Any = None,
    ) -> Array:
        inputs_k = inputs_q if inputs_k is None else inputs_k
        inputs_v = inputs_k if inputs_v is None else inputs_v
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(
                f"Incompatible input dimension, got {inputs_q.shape[-1]} but module "
                f"expects {self.in_features}."
            )
        q = self.query(inputs_q, out_sharding=qkv_sharding)
        k = self.key(inputs_k, out_sharding=qkv_sharding)
        v = self.value(inputs_v, out_sharding=qkv_sharding)
        if self.normalize_qk:
            assert self.query_ln is not None and self.key_ln is not None
            q, k = self.query_ln(q), self.key_ln(k)
        decode = self.decode if decode is None else decode
        if decode:
            if (
                self.cached_key is None
                or self.cached_value is None
                or self.cache_index is None
            ):
                raise ValueError(
                    "Autoregressive cache not initialized, call ``init_cache`` "
                    "first.\\nMultiHeadAttention(decode=True) needs "
                    "init_cache(input_shape)."
                )
            *batch, max_len, heads, depth = self.cached_key.value.shape
            expected = tuple(batch) + (1, heads, depth)
            if expected != k.shape:
                raise ValueError(
                    "Autoregressive cache shape error, expected key shape "
                    f"{expected} instead got {k.shape}.\\nDecode one step at a time."
                )
            i = self.cache_index.value
            zero = jnp.array(0, dtype=i.dtype)
            start = (zero,) * len(batch) + (i, zero, zero)
            k = jax.lax.dynamic_update_slice(self.cached_key.value, k, start)
            v = jax.lax.dynamic_update_slice(self.cached_value.value, v, start)
            self.cached_key.value, self.cached_value.value = k, v
            self.cache_index.value = i + 1
            step_mask = jnp.broadcast_to(
                jnp.arange(max_len) <= i, tuple(batch) + (1, 1, max_len)
            )
            mask = combine_masks(mask, step_mask)
        dropout_rng = None
        if self.dropout_rate > 0.0:
            det = self.deterministic if deterministic is None else deterministic
            if det is None:
                raise ValueError(
                    "No `deterministic` argument was provided to MultiHeadAttention "
                    "as either a __call__ argument, class attribute, or nnx.flag."
                )
            if not det:
                stream = rngs if rngs is not None else self.rngs
                if stream is None:
                    raise ValueError(
                        "'rngs' must be provided to __call__ method if "
                        "MultiHeadAttention instance is defined with keep_rngs=False."
                    )
                dropout_rng = (
                    stream["dropout"]() if isinstance(stream, Rngs) else stream()
                )
        else:
            det = True
        kw: dict[str, Any] = {"module": self} if sow_weights else {}
        if is_causal:
            kw["is_causal"] = True
        x = self.attention_fn(
            q,
            k,
            v,
            mask=mask,
            dropout_rng=dropout_rng,
            dropout_rate=self.dropout_rate,
            broadcast_dropout=self.broadcast_dropout,
            deterministic=det,
            dtype=self.dtype,
            precision=self.precision,
            **kw,
        )
        return self.out(x, out_sharding=out_sharding)
