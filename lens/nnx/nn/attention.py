"""Attention for eager modules: ``dot_product_attention`` (grouped-query,
causal, sown weights) and ``MultiHeadAttention`` with its decode cache, with
flax.nnx's constructor, variable names and key order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._kernels.random import bernoulli
from lens.core.nn import initializers
from lens.nn import combine_masks as combine_masks
from lens.nn import make_attention_mask as make_attention_mask
from lens.nn import make_causal_mask as make_causal_mask
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs, RngStream
from lens.nnx._variables.variable import Cache, Intermediate
from lens.nnx.nn._parameters import NO_META
from lens.nnx.nn.dtypes import promote_dtype
from lens.nnx.nn.linear import LinearGeneral
from lens.nnx.nn.normalization import LayerNorm
from lens.typing import Shape

Array = Any


_default_kernel_init = initializers.default_kernel_init


_zeros = initializers.zeros_init()


_LAYOUT = (
    "\nquery, key and value are [batch..., length, heads, depth]; key and value "
    "share a length, and their heads divide the query's."
)


def _check_shapes(query: Array, key: Array, value: Array | None, fast: bool) -> None:
    """flax.nnx's errors for query/key(/value) shapes that do not fit together."""
    arrays = (query, key) if value is None else (query, key, value)
    names = "q, k" if value is None else "q, k, v"
    if len({a.ndim for a in arrays}) > 1:
        ranks = ", ".join(str(a.ndim) for a in arrays)
        raise ValueError(f"{names} must have same rank, but got {ranks}." + _LAYOUT)
    if len({a.shape[:-3] for a in arrays}) > 1:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(
            f"{names} batch dims must match, but got shapes {shapes}." + _LAYOUT
        )
    if value is not None and key.shape[-3] != value.shape[-3]:
        raise ValueError(
            f"k, v lengths must match, but got {key.shape[-3]} and "
            f"{value.shape[-3]}." + _LAYOUT
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"q, k depths must match, but got {query.shape[-1]} and "
            f"{key.shape[-1]}." + _LAYOUT
        )
    q_heads, kv_heads = query.shape[-2], key.shape[-2]
    if q_heads % kv_heads:
        first = (  # the fast path's error is jax.nn.dot_product_attention's
            "The number of query heads must be a multiple of key/value heads, but "
            f"got {q_heads} vs {kv_heads}"
            if fast
            else f"Query heads ({q_heads}) must be multiple of Key heads "
            f"({kv_heads}) for Grouped Query Attention."
        )
        raise ValueError(first + _LAYOUT)


def dot_product_attention_weights(
    query: Array,
    key: Array,
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
    """Attention weights ``softmax(q k^T / sqrt(depth) + bias)`` of ``query``
    ``[batch..., q_len, heads, depth]`` over ``key`` ``[batch..., kv_len,
    kv_heads, depth]``: ``[batch..., heads, q_len, kv_len]``.

    ``kv_heads`` may divide ``heads`` (grouped-query attention); ``mask`` is
    False where attention is not allowed and ``is_causal`` adds the causal mask;
    ``module`` sows the weights (before dropout) as ``attention_weights`` in
    ``nnx.Intermediate``; ``promote_dtype`` casts ``(query, key)`` to ``dtype``.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens.nnx.nn.attention import dot_product_attention_weights
        >>> q = jnp.ones((2, 5, 4, 8))
        >>> dot_product_attention_weights(q, q[..., :2, :]).shape
        (2, 4, 5, 5)
    """
    query, key = promote_dtype((query, key), dtype=dtype)
    dtype = query.dtype
    _check_shapes(query, key, None, fast=False)
    q_heads, kv_heads = query.shape[-2], key.shape[-2]
    query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
    if q_heads != kv_heads:  # grouped: each key head serves q_heads // kv_heads
        grouped = query.reshape(
            query.shape[:-2] + (kv_heads, q_heads // kv_heads, query.shape[-1])
        )
        weights = jnp.einsum(
            "...qhgd,...khd->...hgqk", grouped, key, precision=precision
        )
        weights = weights.reshape(weights.shape[:-4] + (q_heads,) + weights.shape[-2:])
    else:
        weights = jnp.einsum("...qhd,...khd->...hqk", query, key, precision=precision)
    if bias is not None:
        weights = weights + bias
    if mask is not None or is_causal:
        masks = [] if mask is None else [mask]
        if is_causal:
            causal = jnp.tril(jnp.ones(weights.shape[-2:], dtype=dtype))
            target = mask.shape if mask is not None else weights.shape
            masks.append(jnp.broadcast_to(causal, target))
        combined = combine_masks(*masks, dtype=dtype)
        assert combined is not None  # masks is not empty
        weights = jnp.where(combined, weights, jnp.finfo(dtype).min)
    weights = jax.nn.softmax(weights).astype(dtype)
    if module is not None:
        module.sow(Intermediate, "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        if dropout_rng is None:
            raise TypeError(
                "unexpected PRNG key type <class 'NoneType'>\nAttention dropout "
                f"(dropout_rate={dropout_rate}) needs a key: pass dropout_rng, or "
                "deterministic=True."
            )
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:  # one mask for all batch dims and heads
            shape = (1,) * (key.ndim - 2) + weights.shape[-2:]
        else:
            shape = weights.shape
        keep = bernoulli(dropout_rng, keep_prob, shape)
        weights = weights * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return weights


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
    fast = dropout_rate == 0.0 and module is None
    _check_shapes(query, key, value, fast)
    q_heads, kv_heads = query.shape[-2], key.shape[-2]
    if fast:
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
        module,
        promote_dtype,
        is_causal,
    )
    if q_heads == kv_heads:
        return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)
    grouped = weights.reshape(
        weights.shape[:-3] + (kv_heads, q_heads // kv_heads) + weights.shape[-2:]
    )
    out = jnp.einsum("...hgqk,...khd->...qhgd", grouped, value, precision=precision)
    return out.reshape(out.shape[:-3] + (q_heads, out.shape[-1]))


def _feature_sizes(
    num_heads: int,
    in_features: int,
    qkv_features: int | None,
    out_features: int | None,
    num_kv_heads: int | None,
    in_kv_features: int | None,
) -> tuple[int, int, int, int]:
    """``(qkv_features, out_features, in_kv_features, num_kv_heads)`` with their
    defaults, checked."""
    qkv = qkv_features if qkv_features is not None else in_features
    kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
    if num_heads % kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be divisible by num_kv_heads "
            f"({kv_heads}).\nPick num_kv_heads among the divisors of num_heads."
        )
    if qkv % num_heads:
        raise ValueError(
            f"Memory dimension ({qkv}) must be divisible by 'num_heads' heads "
            f"({num_heads}).\nPick qkv_features as a multiple of num_heads."
        )
    out = out_features if out_features is not None else in_features
    in_kv = in_kv_features if in_kv_features is not None else in_features
    return qkv, out, in_kv, kv_heads


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
        sizes = _feature_sizes(
            num_heads, in_features, qkv_features, out_features, num_kv_heads,
            in_kv_features,
        )  # fmt: skip
        self.num_heads, self.in_features = num_heads, in_features
        self.qkv_features, self.out_features = sizes[0], sizes[1]
        self.in_kv_features, self.num_kv_heads = sizes[2], sizes[3]
        self.dtype, self.param_dtype = dtype, param_dtype
        self.broadcast_dropout, self.dropout_rate = broadcast_dropout, dropout_rate
        self.deterministic, self.precision = deterministic, precision
        self.use_bias, self.attention_fn = use_bias, attention_fn
        self.decode, self.normalize_qk = decode, normalize_qk
        self.qkv_promote_dtype = qkv_promote_dtype
        self.out_promote_dtype = out_promote_dtype
        self.ln_promote_dtype = ln_promote_dtype
        self.qkv_dot_general, self.out_dot_general = qkv_dot_general, out_dot_general
        self.qkv_dot_general_cls = qkv_dot_general_cls
        self.out_dot_general_cls = out_dot_general_cls
        self.head_dim = self.qkv_features // num_heads
        self._build_layers(
            rngs,
            (kernel_init, out_kernel_init or kernel_init),
            (bias_init, out_bias_init or bias_init),
            {
                "kernel": kernel_metadata,
                "bias": bias_metadata,
                "out_kernel": out_kernel_metadata or kernel_metadata,
                "out_bias": out_bias_metadata or bias_metadata,
                "query_ln": query_ln_scale_metadata,
                "key_ln": key_ln_scale_metadata,
            },
        )
        self.rngs = rngs["dropout"].fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key: Cache | None = None
        self.cached_value: Cache | None = None
        self.cache_index: Cache | None = None

    def _build_layers(
        self,
        rngs: Rngs,
        kernel_inits: tuple[Callable[..., Array], Callable[..., Array]],
        bias_inits: tuple[Callable[..., Array], Callable[..., Array]],
        metadata: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """The query/key/value projections, the optional query/key LayerNorms and
        the output projection (flax.nnx's names and creation order)."""
        dtypes = {"dtype": self.dtype, "param_dtype": self.param_dtype}

        def proj(n_in: int, heads: int) -> LinearGeneral:
            return LinearGeneral(
                n_in, (heads, self.head_dim), **dtypes,
                kernel_init=kernel_inits[0], bias_init=bias_inits[0],
                use_bias=self.use_bias, precision=self.precision,
                promote_dtype=self.qkv_promote_dtype,
                dot_general=self.qkv_dot_general,
                dot_general_cls=self.qkv_dot_general_cls, rngs=rngs,
                kernel_metadata=metadata["kernel"], bias_metadata=metadata["bias"],
            )  # fmt: skip

        self.query = proj(self.in_features, self.num_heads)
        self.key = proj(self.in_kv_features, self.num_kv_heads)
        self.value = proj(self.in_kv_features, self.num_kv_heads)
        self.query_ln: LayerNorm | None = None
        self.key_ln: LayerNorm | None = None
        if self.normalize_qk:
            for name in ("query_ln", "key_ln"):
                ln = LayerNorm(
                    self.head_dim, use_bias=False, **dtypes,
                    promote_dtype=self.ln_promote_dtype, rngs=rngs,
                    scale_metadata=metadata[name],
                )  # fmt: skip
                setattr(self, name, ln)
        self.out = LinearGeneral(
            (self.num_heads, self.head_dim), self.out_features, axis=(-2, -1),
            kernel_init=kernel_inits[1], bias_init=bias_inits[1],
            use_bias=self.use_bias, **dtypes, precision=self.precision,
            promote_dtype=self.out_promote_dtype, dot_general=self.out_dot_general,
            dot_general_cls=self.out_dot_general_cls, rngs=rngs,
            kernel_metadata=metadata["out_kernel"], bias_metadata=metadata["out_bias"],
        )  # fmt: skip

    def init_cache(self, input_shape: Shape, dtype: Any = jnp.float32) -> None:
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
        batch_size: int | Shape | None = None,
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

    def _project(
        self, inputs_q: Array, inputs_k: Any, inputs_v: Any, sharding: Any
    ) -> tuple[Array, Array, Array]:
        inputs_k = inputs_q if inputs_k is None else inputs_k
        inputs_v = inputs_k if inputs_v is None else inputs_v
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(
                f"Incompatible input dimension, got {inputs_q.shape[-1]} but module "
                f"expects {self.in_features}.\nGive inputs_q a last axis of "
                f"{self.in_features} (in_features)."
            )
        q = self.query(inputs_q, out_sharding=sharding)
        k = self.key(inputs_k, out_sharding=sharding)
        v = self.value(inputs_v, out_sharding=sharding)
        if self.normalize_qk:
            assert self.query_ln is not None and self.key_ln is not None
            q, k = self.query_ln(q), self.key_ln(k)
        return q, k, v

    def _decode_step(
        self, k: Array, v: Array, mask: Array | None
    ) -> tuple[Array, Array, Array]:
        """Writes this step's key and value into the cache; attends over the
        cache up to it."""
        if (
            self.cached_key is None
            or self.cached_value is None
            or self.cache_index is None
        ):
            raise ValueError(
                "Autoregressive cache not initialized, call ``init_cache`` first."
                "\nMultiHeadAttention(decode=True) needs init_cache(input_shape)."
            )
        *batch, max_len, heads, depth = self.cached_key.value.shape
        expected = tuple(batch) + (1, heads, depth)
        if expected != k.shape:
            raise ValueError(
                "Autoregressive cache shape error, expected key shape "
                f"{expected} instead got {k.shape}.\nDecode one step at a time."
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
        return k, v, combine_masks(mask, step_mask)

    def _dropout(
        self, deterministic: bool | None, rngs: Rngs | RngStream | None
    ) -> tuple[bool, Array | None]:
        """Whether this call is deterministic, and the dropout key if not."""
        if self.dropout_rate <= 0.0:
            return True, None
        det = self.deterministic if deterministic is None else deterministic
        if det is None:
            raise ValueError(
                "No `deterministic` argument was provided to MultiHeadAttention "
                "as either a __call__ argument, class attribute, or nnx.flag."
                "\nPass deterministic=True/False to the call or the constructor."
            )
        if det:
            return True, None
        stream = rngs if rngs is not None else self.rngs
        if stream is None:
            raise ValueError(
                "'rngs' must be provided to __call__ method if "
                "MultiHeadAttention instance is defined with keep_rngs=False."
                "\nPass rngs= to the call."
            )
        return False, stream["dropout"]() if isinstance(stream, Rngs) else stream()

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
        """Attends ``inputs_q`` over ``inputs_k``/``inputs_v`` (both default to
        ``inputs_q``: self-attention); ``decode`` steps through the cache."""
        q, k, v = self._project(inputs_q, inputs_k, inputs_v, qkv_sharding)
        decode = self.decode if decode is None else decode
        if decode is None:
            raise ValueError(
                "No `decode` argument was provided to MultiHeadAttention as "
                "either a __call__ argument, class attribute, or nnx.flag."
                "\nPass decode=False (or True, after init_cache) to the call or "
                "the constructor."
            )
        if decode:
            k, v, mask = self._decode_step(k, v, mask)
        det, dropout_rng = self._dropout(deterministic, rngs)
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
