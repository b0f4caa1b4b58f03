"""Attention: dot-product attention, masks, MultiHeadDotProductAttention, SelfAttention.

Submodule names (``query``, ``key``, ``value``, ``out``) and the decode cache
(``cache``: ``cached_key``, ``cached_value``, ``cache_index``) follow Flax Linen.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens._facades import show_at_flax_paths
from lens._hot_jit import hot_jit
from lens._kernels.dtypes import merge_param, promote_dtype
from lens._kernels.intercept import intercepted
from lens._kernels.linear import static
from lens._kernels.random import bernoulli
from lens.core.nn import initializers
from lens.core.nn.initializers import default_kernel_init
from lens.nn._hyperparameters import RATE, SIZE
from lens.nn._linear import DenseGeneral
from lens.nn._module import Module
from lens.nn._module_support import compact
from lens.nn._normalization import LayerNorm
from lens.typing import Array, DotGeneralT, Dtype, Initializer, PrecisionLike, PRNGKey


def _default_einsum(precision: Any, einsum_dot_general: Any) -> Callable[..., Array]:
    return functools.partial(
        jnp.einsum,
        precision=precision,
        _dot_general=einsum_dot_general or lax.dot_general,
    )


def dot_product_attention_weights(
    query: Array,
    key: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: PRNGKey | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: PrecisionLike = None,
    module: Module | None = None,
    force_fp32_for_softmax: bool = False,
    einsum_dot_general: Callable[..., Array] | None = None,
    einsum: Callable[..., Array] | None = None,
) -> Array:
    """Attention weights ``softmax(q k^T / sqrt(depth) + bias)``: ``[..., heads, q, k]``.

    Args:
      query, key: ``[batch..., length, heads, depth]``.
      bias: added to the logits (broadcastable to ``[batch..., heads, q, k]``).
      mask: False/0 where attention is not allowed (same broadcast).
      broadcast_dropout: one dropout mask for all batch dims and heads.
      dropout_rng, dropout_rate, deterministic: attention-weight dropout.
      dtype: the computation dtype (default: inferred from query and key).
      precision: the einsum's ``lax`` precision.
      module: if given, the weights are sown into its ``intermediates``
        collection as ``attention_weights``.
      force_fp32_for_softmax: compute the softmax in float32.
      einsum_dot_general: the ``dot_general`` of the default einsum.
      einsum: the einsum to use (instead of ``precision``/``einsum_dot_general``).
    """
    if (precision or einsum_dot_general) and einsum:
        raise ValueError(
            "precision/einsum_dot_general and einsum are mutually exclusive. Please "
            "specify only one of them."
        )
    if not einsum:
        einsum = _default_einsum(precision, einsum_dot_general)
    query, key = promote_dtype(query, key, dtype=dtype)
    dtype = query.dtype
    assert query.ndim == key.ndim, "q, k must have same rank."
    assert query.shape[:-3] == key.shape[:-3], "q, k batch dims must match."
    assert query.shape[-2] == key.shape[-2], "q, k num_heads must match."
    assert query.shape[-1] == key.shape[-1], "q, k depths must match."
    query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
    weights = einsum("...qhd,...khd->...hqk", query, key)
    if bias is not None:
        weights = weights + bias
    if mask is not None:
        big_neg = jnp.finfo(dtype).min
        weights = jnp.where(mask, weights, big_neg)
    if force_fp32_for_softmax and dtype != jnp.float32:
        weights = jax.nn.softmax(weights.astype(jnp.float32))
    else:
        weights = jax.nn.softmax(weights).astype(dtype)
    if module:
        module.sow("intermediates", "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        if dropout_rng is None:
            raise TypeError(
                "unexpected PRNG key type <class 'NoneType'>\nAttention dropout "
                f"(dropout_rate={dropout_rate}) needs a key: pass dropout_rng, or "
                "deterministic=True."
            )
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            shape = (1,) * (key.ndim - 2) + weights.shape[-2:]
            keep = bernoulli(dropout_rng, keep_prob, shape)
        else:
            keep = bernoulli(dropout_rng, keep_prob, weights.shape)
        weights = weights * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return weights


def dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None = None,
    mask: Array | None = None,
    broadcast_dropout: bool = True,
    dropout_rng: PRNGKey | None = None,
    dropout_rate: float = 0.0,
    deterministic: bool = False,
    dtype: Dtype | None = None,
    precision: PrecisionLike = None,
    module: Module | None = None,
    force_fp32_for_softmax: bool = False,
    einsum_dot_general: Callable[..., Array] | None = None,
    qk_attn_weights_einsum: Callable[..., Array] | None = None,
    attn_weights_value_einsum: Callable[..., Array] | None = None,
) -> Array:
    """Multi-head dot-product attention on ``[batch..., length, heads, depth]``.

    Returns ``[batch..., q_length, heads, v_depth]``. Arguments as in
    :func:`dot_product_attention_weights`; ``qk_attn_weights_einsum`` and
    ``attn_weights_value_einsum`` (given together) replace the two einsums.

    Example:
        >>> import jax.numpy as jnp
        >>> q = k = v = jnp.ones((2, 5, 4, 8))
        >>> dot_product_attention(q, k, v).shape
        (2, 5, 4, 8)
    """
    if bool(qk_attn_weights_einsum) != bool(attn_weights_value_einsum):
        raise ValueError(
            "qk_attn_weights_einsum and attn_weights_value_einsum must be specified "
            "together."
        )
    if (precision or einsum_dot_general) and (
        qk_attn_weights_einsum or attn_weights_value_einsum
    ):
        raise ValueError(
            "precision/einsum_dot_general and "
            "qk_attn_weights_einsum/attn_weights_value_einsum are mutually exclusive. "
            "Please specify only one of them."
        )
    query, key, value = promote_dtype(query, key, value, dtype=dtype)
    dtype = query.dtype
    assert key.ndim == query.ndim == value.ndim, "q, k, v must have same rank."
    assert query.shape[:-3] == key.shape[:-3] == value.shape[:-3], (
        "q, k, v batch dims must match."
    )
    assert query.shape[-2] == key.shape[-2] == value.shape[-2], (
        "q, k, v num_heads must match."
    )
    assert key.shape[-3] == value.shape[-3], "k, v lengths must match."
    if _plain(
        bias,
        mask,
        dropout=not deterministic and dropout_rate > 0.0,
        custom=module is not None
        or einsum_dot_general is not None
        or qk_attn_weights_einsum is not None,
        precision=precision,
    ):
        return _plain_attention_jit(
            query, key, value, bias, mask, dtype, static(precision),
            force_fp32_for_softmax,
        )  # fmt: skip
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
        force_fp32_for_softmax,
        einsum_dot_general=einsum_dot_general,
        einsum=qk_attn_weights_einsum,
    )
    if not attn_weights_value_einsum:
        attn_weights_value_einsum = _default_einsum(precision, einsum_dot_general)
    return attn_weights_value_einsum("...hqk,...khd->...qhd", weights, value)


def _plain_attention(
    query: Array,
    key: Array,
    value: Array,
    bias: Array | None,
    mask: Array | None,
    dtype: Any,
    precision: PrecisionLike,
    force_fp32_for_softmax: bool,
) -> Array:
    """:func:`dot_product_attention` without dropout, sowing or custom einsums."""
    weights = dot_product_attention_weights(
        query,
        key,
        bias,
        mask,
        deterministic=True,
        dtype=dtype,
        precision=precision,
        force_fp32_for_softmax=force_fp32_for_softmax,
    )
    return _default_einsum(precision, None)("...hqk,...khd->...qhd", weights, value)


# The common case as one jitted function (as Dense's and LayerNorm's arithmetic,
# lens/_kernels): traced once per shape, so every further attention layer of a
# model, and its derivatives, come from JAX's caches instead of being traced,
# linearized and transposed op by op again. Inside an outer jit XLA inlines it:
# same program. Static arguments by position (a keyword call is slower).
_plain_attention_jit = hot_jit(_plain_attention, static_argnums=(5, 6, 7))


def _plain(
    bias: Any, mask: Any, *, dropout: bool, custom: bool, precision: Any
) -> bool:
    """Whether :func:`dot_product_attention` can run as ``_plain_attention_jit``:
    no dropout (it draws from a key), nothing sown or swapped in (each must run in
    the caller's trace, every call), array (or no) bias and mask, a hashable
    precision, and no library patching what the kernel calls (``intercepted``)."""
    if dropout or custom:
        return False
    if not all(
        x is None or isinstance(x, jax.Array | np.ndarray) for x in (bias, mask)
    ):
        return False
    try:
        hash(static(precision))
    except TypeError:
        return False
    return not intercepted()


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
        # AssertionError, as in Flax.
        raise AssertionError(
            f"masks must have same rank: {tuple(m.ndim for m in present)}\n"
            "Expand the masks to one rank, e.g. [batch, heads, q, k]."
        )
    out = present[0]
    for m in present[1:]:
        out = jnp.logical_and(out, m)
    return out.astype(dtype)


class MultiHeadDotProductAttention(Module):
    """Multi-head dot-product attention.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = MultiHeadDotProductAttention(num_heads=8, qkv_features=16)
        >>> q = jnp.ones((4, 3, 5))
        >>> variables = layer.init(jax.random.key(0), q)
        >>> sorted(variables["params"])
        ['key', 'out', 'query', 'value']
        >>> layer.apply(variables, q).shape
        (4, 3, 5)

    Attributes:
      num_heads: number of heads; ``qkv_features`` must be divisible by it.
      dtype: the computation dtype (default: inferred from inputs and params).
      param_dtype: the dtype passed to parameter initializers.
      qkv_features: the size of the query/key/value projections (default: the
        query's features).
      out_features: the output size (default: the query's features).
      broadcast_dropout: one dropout mask for the batch dims and heads.
      dropout_rate: attention-weight dropout rate.
      deterministic: no dropout (may be given at call time instead).
      precision: the ``lax`` precision of the projections and einsums.
      kernel_init, bias_init: initializers of the projections.
      out_kernel_init, out_bias_init: of the output projection (default: the
        above).
      use_bias: whether the projections have biases.
      attention_fn: ``dot_product_attention`` or one with its signature; only
        the keyword arguments it accepts are passed.
      decode: autoregressive decoding with a ``cache`` collection
        (``cached_key``, ``cached_value``, ``cache_index``).
      normalize_qk: LayerNorm (no bias) on queries and keys.
      force_fp32_for_softmax: compute the softmax in float32.
      qkv_dot_general, out_dot_general, qkv_dot_general_cls,
        out_dot_general_cls: the ``dot_general`` of the projections.
      qk_attn_weights_einsum_cls, attn_weights_value_einsum_cls: factories of
        the two einsums of the attention.
    """

    # qkv_features and out_features: 0 or None means the input's features, and
    # anything else is checked at the call, in Flax's words (the projections'
    # DenseGeneral checks the sizes)
    _hyperparameters = {"num_heads": SIZE, "dropout_rate": RATE}

    num_heads: int
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    qkv_features: int | None = None
    out_features: int | None = None
    broadcast_dropout: bool = True
    dropout_rate: float = 0.0
    deterministic: bool | None = None
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    out_kernel_init: Initializer | None = None
    bias_init: Initializer = initializers.zeros_init()
    out_bias_init: Initializer | None = None
    use_bias: bool = True
    attention_fn: Callable[..., Array] = dot_product_attention
    decode: bool = False
    normalize_qk: bool = False
    force_fp32_for_softmax: bool = False
    qkv_dot_general: DotGeneralT | None = None
    out_dot_general: DotGeneralT | None = None
    qkv_dot_general_cls: Any = None
    out_dot_general_cls: Any = None
    qk_attn_weights_einsum_cls: Callable[..., Callable[..., Array]] | None = None
    attn_weights_value_einsum_cls: Callable[..., Callable[..., Array]] | None = None

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
        dropout_rng: PRNGKey | None = None,
        sow_weights: bool = False,
    ) -> Array:
        """Attends from ``inputs_q`` to ``inputs_k``/``inputs_v``.

        ``inputs_k`` defaults to ``inputs_q`` (self-attention) and ``inputs_v``
        to ``inputs_k``. ``mask``: ``[batch..., heads, q, k]``, False where
        attention is not allowed. ``sow_weights`` sows the attention weights
        into ``intermediates``.
        """
        inputs_k, inputs_v = _resolve_kv(inputs_q, inputs_k, inputs_v, inputs_kv)
        features = self.out_features or inputs_q.shape[-1]
        qkv_features = self.qkv_features or inputs_q.shape[-1]
        assert qkv_features % self.num_heads == 0, (
            f"Memory dimension ({qkv_features}) must be divisible by number of heads "
            f"({self.num_heads})."
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
            dot_general=self.qkv_dot_general,
            dot_general_cls=self.qkv_dot_general_cls,
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
            key, value, mask = _decode_step(self, query, key, value, mask)
        attn_kwargs = _attention_kwargs(self, mask, deterministic, dropout_rng)
        if sow_weights:
            attn_kwargs["module"] = self
        x = self.attention_fn(query, key, value, **attn_kwargs)
        return DenseGeneral(
            features=features,
            axis=(-2, -1),
            kernel_init=self.out_kernel_init or self.kernel_init,
            bias_init=self.out_bias_init or self.bias_init,
            use_bias=self.use_bias,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            precision=self.precision,
            dot_general=self.out_dot_general,
            dot_general_cls=self.out_dot_general_cls,
            name="out",
        )(x)


def _resolve_kv(
    inputs_q: Array,
    inputs_k: Array | None,
    inputs_v: Array | None,
    inputs_kv: Array | None,
) -> tuple[Array, Array]:
    """``inputs_k``/``inputs_v`` from the call's arguments, as Flax resolves them."""
    if inputs_kv is not None:
        if inputs_k is not None or inputs_v is not None:
            raise ValueError(
                "If either `inputs_k` or `inputs_v` is not None, `inputs_kv` must "
                "be None. If `inputs_kv` is not None, both `inputs_k` and "
                "`inputs_v` must be None. We recommend using `inputs_k` and "
                "`inputs_v` args, since `inputs_kv` will be deprecated soon."
            )
        inputs_k = inputs_v = inputs_kv
        warnings.warn(
            "The inputs_kv arg will be deprecated soon. Use inputs_k and inputs_v "
            "instead.",
            DeprecationWarning,
            stacklevel=3,
        )
    else:
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError(
                    "`inputs_k` cannot be None if `inputs_v` is not None. To have "
                    "both `inputs_k` and `inputs_v` be the same value, pass in the "
                    "value to `inputs_k` and leave `inputs_v` as None."
                )
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        elif inputs_v.shape[-1] == inputs_v.shape[-2]:
            warnings.warn(
                f"You are passing an array of shape {inputs_v.shape} to the "
                "`inputs_v` arg, when you may have intended to pass it to the "
                "`mask` arg. As in Flax since 0.7.4, the function signature of "
                "MultiHeadDotProductAttention's `__call__` method has changed to "
                "`__call__(inputs_q, inputs_k=None, inputs_v=None, *, "
                "inputs_kv=None, mask=None, deterministic=None)`. Use the kwarg "
                "`mask` instead.",
                DeprecationWarning,
                stacklevel=3,
            )
    assert inputs_k is not None and inputs_v is not None
    return inputs_k, inputs_v


def _decode_step(
    module: Module, query: Array, key: Array, value: Array, mask: Array | None
) -> tuple[Array, Array, Array | None]:
    """With ``decode=True``: writes this step into the cache, masks what is unwritten.

    The first call (the full length) creates the cache; later calls take one step.
    """
    initialized = module.has_variable("cache", "cached_key")
    cached_key = module.variable("cache", "cached_key", jnp.zeros, key.shape, key.dtype)
    cached_value = module.variable(
        "cache", "cached_value", jnp.zeros, value.shape, value.dtype
    )
    cache_index = module.variable(
        "cache", "cache_index", lambda: jnp.array(0, dtype=jnp.int32)
    )
    if initialized:
        *batch_dims, max_length, num_heads, depth = cached_key.value.shape
        expected = tuple(batch_dims) + (1, num_heads, depth)
        if expected != query.shape:
            raise ValueError(
                "Autoregressive cache shape error, expected query shape "
                f"{expected} instead got {query.shape}.\nWith decode=True, "
                "apply one step (length 1) at a time after initializing the "
                "cache with the full length."
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
    return key, value, mask


def _attention_kwargs(
    module: MultiHeadDotProductAttention,
    mask: Array | None,
    deterministic: bool | None,
    dropout_rng: Any,
) -> dict[str, Any]:
    """The keyword arguments of ``attention_fn`` that it accepts."""
    if module.dropout_rate > 0.0:  # `deterministic` is needed only with dropout
        m_deterministic = merge_param(
            "deterministic", module.deterministic, deterministic
        )
        if not m_deterministic and dropout_rng is None:
            dropout_rng = module.make_rng("dropout")
    else:
        m_deterministic = True
    attn_kwargs = dict(
        mask=mask,
        dropout_rng=dropout_rng,
        dropout_rate=module.dropout_rate,
        broadcast_dropout=module.broadcast_dropout,
        deterministic=m_deterministic,
        dtype=module.dtype,
        precision=module.precision,
        force_fp32_for_softmax=module.force_fp32_for_softmax,
        qk_attn_weights_einsum=(
            module.qk_attn_weights_einsum_cls()
            if module.qk_attn_weights_einsum_cls
            else None
        ),
        attn_weights_value_einsum=(
            module.attn_weights_value_einsum_cls()
            if module.attn_weights_value_einsum_cls
            else None
        ),
    )
    accepted = _parameters(module.attention_fn)
    attn_kwargs = {k: v for k, v in attn_kwargs.items() if k in accepted}
    return attn_kwargs


def _parameters(fn: Callable[..., Any]) -> frozenset[str]:
    """The parameter names of ``fn`` (an attention_fn gets only those it takes)."""
    try:
        return frozenset(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return frozenset()


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
        """Attends ``inputs_q`` to itself (deprecated in Flax: use the base class)."""
        warnings.warn(
            "SelfAttention will be deprecated soon. Use "
            "`MultiHeadDotProductAttention.__call__(inputs_q)` instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return super().__call__(
            inputs_q,
            mask=mask,
            deterministic=deterministic,
            dropout_rng=dropout_rng,
            sow_weights=sow_weights,
        )


show_at_flax_paths(__name__)
