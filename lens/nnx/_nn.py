"""More eager layers: convolutions, embeddings, einsum, RMS/group norms, attention.

Each keeps flax.nnx's constructor (sizes up front, ``rngs`` to initialise from),
variable names and key order, so the same ``Rngs`` gives the same parameters. The
arithmetic is lens.nn's (the Linen layer of the same name, applied to this layer's
variables), so an eager layer computes exactly what its Linen twin computes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import nn as linen
from lens.core.nn import initializers
from lens.nn import combine_masks, dot_product_attention
from lens.nnx._graph import Cache, Param
from lens.nnx._layers import LayerNorm, Module
from lens.nnx._rngs import Rngs

Array = Any
_default_kernel_init = initializers.default_kernel_init
_zeros = initializers.zeros_init()
_ones = initializers.ones


def _tuple(x: int | Sequence[int], n: int | None = None) -> tuple[int, ...]:
    if isinstance(x, int):
        return (x,) * (n or 1)
    return tuple(x)


def _tuple_or_none(x: int | Sequence[int] | None, n: int) -> tuple[int, ...] | None:
    return None if x is None else _tuple(x, n)


def _params(**vs: Param | None) -> dict[str, Any]:
    return {"params": {k: v.value for k, v in vs.items() if v is not None}}


def _param(init: Callable[..., Array], rngs: Rngs, shape: Any, dtype: Any, meta: Any):
    return Param(init(rngs.params(), shape, dtype), **dict(meta or {}))


class Conv(Module):
    """N-d convolution; ``kernel`` of shape ``kernel_size + (in // groups, out)``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel_size: int | Sequence[int],
        strides: None | int | Sequence[int] = 1,
        *,
        padding: Any = "SAME",
        input_dilation: None | int | Sequence[int] = 1,
        kernel_dilation: None | int | Sequence[int] = 1,
        feature_group_count: int = 1,
        use_bias: bool = True,
        mask: Array | None = None,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        precision: Any = None,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        bias_init: Callable[..., Array] = _zeros,
        conv_general_dilated: Callable[..., Array] = jax.lax.conv_general_dilated,
        promote_dtype: Any = None,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = {},  # noqa: B006 - Flax's default
        bias_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        if in_features % feature_group_count:
            raise ValueError(
                f"Conv: in_features ({in_features}) must be divisible by "
                f"feature_group_count ({feature_group_count})."
            )
        self.kernel_size = _tuple(kernel_size)
        self.in_features = in_features
        self.out_features = out_features
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.conv_general_dilated = conv_general_dilated
        shape = self.kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = _param(kernel_init, rngs, shape, param_dtype, kernel_metadata)
        self.bias = (
            _param(bias_init, rngs, (out_features,), param_dtype, bias_metadata)
            if use_bias
            else None
        )

    def __call__(self, inputs: Array) -> Array:
        layer = linen.Conv(
            self.out_features,
            self.kernel_size,
            strides=self.strides,
            padding=self.padding,
            input_dilation=self.input_dilation,
            kernel_dilation=self.kernel_dilation,
            feature_group_count=self.feature_group_count,
            use_bias=self.use_bias,
            mask=self.mask,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            precision=self.precision,
            conv_general_dilated=self.conv_general_dilated,
        )
        return layer.apply(_params(kernel=self.kernel, bias=self.bias), inputs)


class ConvTranspose(Module):
    """Transposed convolution; ``kernel`` of shape ``kernel_size + (in, out)``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] | None = None,
        *,
        padding: Any = "SAME",
        kernel_dilation: int | Sequence[int] | None = None,
        use_bias: bool = True,
        mask: Array | None = None,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        precision: Any = None,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        bias_init: Callable[..., Array] = _zeros,
        transpose_kernel: bool = False,
        promote_dtype: Any = None,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = {},  # noqa: B006
        bias_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        self.kernel_size = _tuple(kernel_size)
        self.in_features = in_features
        self.out_features = out_features
        self.strides = strides
        self.padding = padding
        self.kernel_dilation = kernel_dilation
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.transpose_kernel = transpose_kernel
        self.preferred_element_type = preferred_element_type
        io = (
            (out_features, in_features)
            if transpose_kernel
            else (in_features, out_features)
        )
        shape = self.kernel_size + io
        self.kernel = _param(kernel_init, rngs, shape, param_dtype, kernel_metadata)
        self.bias = (
            _param(bias_init, rngs, (out_features,), param_dtype, bias_metadata)
            if use_bias
            else None
        )

    def __call__(self, inputs: Array) -> Array:
        layer = linen.ConvTranspose(
            self.out_features,
            self.kernel_size,
            strides=_tuple_or_none(self.strides, len(self.kernel_size)),
            padding=self.padding,
            kernel_dilation=_tuple_or_none(self.kernel_dilation, len(self.kernel_size)),
            use_bias=self.use_bias,
            mask=self.mask,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            precision=self.precision,
            transpose_kernel=self.transpose_kernel,
            preferred_element_type=self.preferred_element_type,
        )
        return layer.apply(_params(kernel=self.kernel, bias=self.bias), inputs)


class Embed(Module):
    """A lookup table ``embedding`` of shape ``(num_embeddings, features)``;
    ``attend`` is the transposed map (logits over the table)."""

    def __init__(
        self,
        num_embeddings: int,
        features: int,
        *,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        embedding_init: Callable[..., Array] = linen.linear.default_embed_init,
        promote_dtype: Any = None,
        rngs: Rngs,
        embedding_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.embedding = _param(
            embedding_init,
            rngs,
            (num_embeddings, features),
            param_dtype,
            embedding_metadata,
        )

    def _linen(self) -> Any:
        return linen.Embed(
            self.num_embeddings,
            self.features,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )

    def __call__(self, inputs: Array) -> Array:
        return self._linen().apply(_params(embedding=self.embedding), inputs)

    def attend(self, query: Array, out_sharding: Any = None) -> Array:
        return self._linen().apply(
            _params(embedding=self.embedding), query, method="attend"
        )


class Einsum(Module):
    """``einsum(einsum_str, inputs, kernel) + bias`` with a kernel of
    ``kernel_shape`` (and a bias of ``bias_shape`` when given)."""

    def __init__(
        self,
        einsum_str: str,
        kernel_shape: Sequence[int],
        bias_shape: Sequence[int] | None = None,
        *,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        precision: Any = None,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        bias_init: Callable[..., Array] = _zeros,
        promote_dtype: Any = None,
        einsum_op: Callable[..., Array] = jnp.einsum,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = {},  # noqa: B006
        bias_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        if "->" not in einsum_str or einsum_str.count(",") != 1:
            raise ValueError(
                f"Einsum: einsum_str {einsum_str!r} must name two operands and an "
                "output, e.g. 'btd,dk->btk'."
            )
        self.einsum_str = einsum_str.replace(" ", "")
        self.kernel_shape = tuple(kernel_shape)
        self.bias_shape = tuple(bias_shape) if bias_shape is not None else None
        self.dtype = dtype
        self.precision = precision
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type
        self.kernel = _param(
            kernel_init, rngs, self.kernel_shape, param_dtype, kernel_metadata
        )
        self.bias = (
            _param(bias_init, rngs, self.bias_shape, param_dtype, bias_metadata)
            if bias_shape is not None
            else None
        )

    def __call__(self, inputs: Array, einsum_str: str | None = None) -> Array:
        spec = (einsum_str or self.einsum_str).replace(" ", "")
        kernel = self.kernel.value
        dtype = self.dtype or jnp.result_type(inputs, kernel)
        y = self.einsum_op(
            spec,
            jnp.asarray(inputs, dtype),
            jnp.asarray(kernel, dtype),
            precision=self.precision,
            preferred_element_type=self.preferred_element_type,
        )
        if self.bias is not None:
            b = jnp.asarray(self.bias.value, dtype)
            y = y + b.reshape((1,) * (y.ndim - b.ndim) + b.shape)
        return y


class RMSNorm(Module):
    """Root-mean-square normalisation with a ``scale``."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_scale: bool = True,
        scale_init: Callable[..., Array] = _ones,
        reduction_axes: int | Sequence[int] = -1,
        feature_axes: int | Sequence[int] = -1,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Any = None,
        rngs: Rngs,
        scale_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.scale = (
            _param(scale_init, rngs, (num_features,), param_dtype, scale_metadata)
            if use_scale
            else None
        )

    def __call__(self, x: Array, mask: Array | None = None) -> Array:
        layer = linen.RMSNorm(
            epsilon=self.epsilon,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            use_scale=self.use_scale,
            reduction_axes=self.reduction_axes,
            feature_axes=self.feature_axes,
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
            use_fast_variance=self.use_fast_variance,
        )
        return layer.apply(_params(scale=self.scale), x, mask=mask)


class GroupNorm(Module):
    """Group normalisation (``num_groups`` groups of channels, or ``group_size``)."""

    def __init__(
        self,
        num_features: int,
        num_groups: int | None = 32,
        group_size: int | None = None,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = _zeros,
        scale_init: Callable[..., Array] = _ones,
        reduction_axes: int | Sequence[int] | None = None,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Any = None,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = {},  # noqa: B006
        scale_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        if (num_groups is None) == (group_size is None):
            raise ValueError(
                "GroupNorm: give exactly one of num_groups and group_size "
                f"(got num_groups={num_groups}, group_size={group_size})."
            )
        if num_groups is None:
            assert group_size is not None  # exactly one was given
            if num_features % group_size:
                raise ValueError(
                    f"GroupNorm: num_features ({num_features}) must be a multiple "
                    f"of group_size ({group_size})."
                )
            num_groups = num_features // group_size
        elif num_features % num_groups:
            raise ValueError(
                f"GroupNorm: num_features ({num_features}) must be a multiple of "
                f"num_groups ({num_groups})."
            )
        self.num_features = num_features
        self.num_groups = num_groups
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        shape = (num_features,)
        self.scale = (
            _param(scale_init, rngs, shape, param_dtype, scale_metadata)
            if use_scale
            else None
        )
        self.bias = (
            _param(bias_init, rngs, shape, param_dtype, bias_metadata)
            if use_bias
            else None
        )

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        layer = linen.GroupNorm(
            num_groups=self.num_groups,
            epsilon=self.epsilon,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            use_bias=self.use_bias,
            use_scale=self.use_scale,
            reduction_axes=self.reduction_axes,
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
            use_fast_variance=self.use_fast_variance,
        )
        return layer.apply(_params(scale=self.scale, bias=self.bias), x, mask=mask)


class LinearGeneral(Module):
    """A linear map over several axes: ``in_features`` (on ``axis``) to
    ``out_features``; ``kernel`` of shape ``in_features + out_features``."""

    def __init__(
        self,
        in_features: int | Sequence[int],
        out_features: int | Sequence[int],
        *,
        axis: int | Sequence[int] = -1,
        batch_axis: Mapping[int, int] = {},  # noqa: B006
        use_bias: bool = True,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        bias_init: Callable[..., Array] = _zeros,
        precision: Any = None,
        promote_dtype: Any = None,
        dot_general: Any = None,
        dot_general_cls: Any = None,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = {},  # noqa: B006
        bias_metadata: Mapping[str, Any] = {},  # noqa: B006
    ):
        if batch_axis:
            raise NotImplementedError(
                "LinearGeneral(batch_axis=...) is not supported by lens.nnx yet; "
                "vmap the layer over the batch axis instead."
            )
        self.in_features = _tuple(in_features)
        self.out_features = _tuple(out_features)
        self.axis = _tuple(axis)
        if len(self.axis) != len(self.in_features):
            raise ValueError(
                f"LinearGeneral: axis {self.axis} and in_features "
                f"{self.in_features} must have the same length."
            )
        self.use_bias = use_bias
        self.dtype = dtype
        self.precision = precision
        # drawn as a 2-D (fan_in, fan_out) matrix, then shaped: the fans of a
        # multi-axis kernel are the products of its input and output sizes
        flat = (int(np.prod(self.in_features)), int(np.prod(self.out_features)))
        kernel = kernel_init(rngs.params(), flat, param_dtype)
        shape = self.in_features + self.out_features
        self.kernel = Param(jnp.reshape(kernel, shape), **dict(kernel_metadata))
        self.bias = None
        if use_bias:
            bias = bias_init(rngs.params(), (flat[1],), param_dtype)
            self.bias = Param(
                jnp.reshape(bias, self.out_features), **dict(bias_metadata)
            )

    def __call__(self, inputs: Array) -> Array:
        axis = tuple(a % inputs.ndim for a in self.axis)
        kernel = self.kernel.value
        dtype = self.dtype or jnp.result_type(inputs, kernel)
        x = jnp.asarray(inputs, dtype)
        dims = ((axis, tuple(range(len(axis)))), ((), ()))
        y = jax.lax.dot_general(
            x, jnp.asarray(kernel, dtype), dims, precision=self.precision
        )
        if self.bias is not None:
            y = y + jnp.asarray(self.bias.value, dtype)
        return y


class MultiHeadAttention(Module):
    """Multi-head dot-product attention: ``query``/``key``/``value`` projections
    to ``(num_heads, head_dim)`` and ``out`` back; ``decode=True`` with
    :meth:`init_cache` attends one step at a time over a ``Cache``."""

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
        rngs: Rngs,
        keep_rngs: bool = True,
        **unsupported: Any,
    ):
        if unsupported:
            raise TypeError(
                "MultiHeadAttention: lens.nnx does not support "
                f"{sorted(unsupported)} yet."
            )
        qkv_features = qkv_features or in_features
        out_features = out_features or in_features
        if qkv_features % num_heads:
            raise ValueError(
                f"MultiHeadAttention: qkv_features ({qkv_features}) must be "
                f"divisible by num_heads ({num_heads})."
            )
        if num_kv_heads not in (None, num_heads):
            raise NotImplementedError(
                "MultiHeadAttention(num_kv_heads=...) (grouped-query attention) is "
                "not supported by lens.nnx yet."
            )
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features
        self.out_features = out_features
        self.in_kv_features = in_kv_features or in_features
        self.head_dim = qkv_features // num_heads
        self.dtype = dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.precision = precision
        self.attention_fn = attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        heads = (num_heads, self.head_dim)

        def proj(n_in: int) -> LinearGeneral:
            return LinearGeneral(
                n_in,
                heads,
                dtype=dtype,
                param_dtype=param_dtype,
                kernel_init=kernel_init,
                bias_init=bias_init,
                use_bias=use_bias,
                precision=precision,
                rngs=rngs,
            )

        self.query = proj(in_features)
        self.key = proj(self.in_kv_features)
        self.value = proj(self.in_kv_features)
        self.query_ln: LayerNorm | None = None
        self.key_ln: LayerNorm | None = None
        if normalize_qk:
            self.query_ln = LayerNorm(self.head_dim, use_bias=False, rngs=rngs)
            self.key_ln = LayerNorm(self.head_dim, use_bias=False, rngs=rngs)
        self.out = LinearGeneral(
            heads,
            out_features,
            axis=(-2, -1),
            dtype=dtype,
            param_dtype=param_dtype,
            kernel_init=out_kernel_init or kernel_init,
            bias_init=out_bias_init or bias_init,
            use_bias=use_bias,
            precision=precision,
            rngs=rngs,
        )
        self.rngs = rngs["dropout"].fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key: Cache | None = None
        self.cached_value: Cache | None = None
        self.cache_index: Cache | None = None

    def init_cache(self, input_shape: Sequence[int], dtype: Any = jnp.float32) -> None:
        """Creates the decode cache for inputs of ``input_shape`` (batch..., length,
        features): ``cached_key``/``cached_value`` and ``cache_index``."""
        shape = tuple(input_shape[:-1]) + (self.num_heads, self.head_dim)
        self.cached_key = Cache(jnp.zeros(shape, dtype))
        self.cached_value = Cache(jnp.zeros(shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))

    def __call__(
        self,
        inputs_q: Array,
        inputs_k: Array | None = None,
        inputs_v: Array | None = None,
        *,
        mask: Array | None = None,
        deterministic: bool | None = None,
        rngs: Rngs | None = None,
        sow_weights: bool = False,
        decode: bool | None = None,
    ) -> Array:
        inputs_k = inputs_q if inputs_k is None else inputs_k
        inputs_v = inputs_k if inputs_v is None else inputs_v
        q, k, v = self.query(inputs_q), self.key(inputs_k), self.value(inputs_v)
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
                    "MultiHeadAttention(decode=True) needs a cache: call "
                    "init_cache(input_shape) first."
                )
            *batch, max_len, heads, depth = self.cached_key.value.shape
            if q.shape[-3] != 1:
                raise ValueError(
                    "MultiHeadAttention(decode=True) takes one step at a time; got "
                    f"a query of length {q.shape[-3]}."
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
        det = self.deterministic if deterministic is None else deterministic
        dropout_rng = None
        if self.dropout_rate > 0.0 and not det:
            if rngs is not None:
                dropout_rng = rngs["dropout"]()
            elif self.rngs is not None:
                dropout_rng = self.rngs()
            else:
                raise ValueError(
                    "MultiHeadAttention with dropout needs keys: give rngs to the "
                    "constructor or the call, or deterministic=True."
                )
            det = False
        else:
            det = True
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
        )
        return self.out(x)


__all__ = [
    "Conv",
    "ConvTranspose",
    "Einsum",
    "Embed",
    "GroupNorm",
    "LinearGeneral",
    "MultiHeadAttention",
    "RMSNorm",
]
