"""More eager layers: convolutions, embeddings, einsum, RMS/group norms, attention.

Each keeps flax.nnx's constructor (sizes up front, ``rngs`` to initialise from),
variable names and key order, so the same ``Rngs`` gives the same parameters. The
arithmetic is lens.nn's (the Linen layer of the same name, applied to this layer's
variables), so an eager layer computes exactly what its Linen twin computes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import nn as linen
from lens.core._freeze import FrozenDict
from lens.core.nn import initializers
from lens.core.spmd import shard_value
from lens.nnx._graph import Param
from lens.nnx._layers import (
    _NO_META,
    Module,
    _dot_kwargs,
    _optional_param,
    _param,
    promote_dtype,
)
from lens.nnx._rngs import Rngs
from lens.nnx._variables import VariableMetadata

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


def _sharded(y: Array, out_sharding: Any) -> Array:
    """``y`` laid out as ``out_sharding`` (on the current mesh), when given."""
    return y if out_sharding is None else shard_value(y, out_sharding, None, None)


def _promoted(fn: Any, *arrays: Any, dtype: Any) -> tuple[Any, ...]:
    """A user's ``promote_dtype`` applied (the default one is the layer's own)."""
    return arrays if fn is promote_dtype else tuple(fn(arrays, dtype=dtype))


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
        promote_dtype: Callable[..., Any] = promote_dtype,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = _NO_META,
        bias_metadata: Mapping[str, Any] = _NO_META,
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
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        shape = self.kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = _param(kernel_init, rngs, shape, param_dtype, kernel_metadata)
        self.bias = (
            _param(bias_init, rngs, (out_features,), param_dtype, bias_metadata)
            if use_bias
            else None
        )

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
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
            conv_general_dilated=(
                self.conv_general_dilated
                if self.preferred_element_type is None
                else functools.partial(
                    self.conv_general_dilated,
                    preferred_element_type=self.preferred_element_type,
                )
            ),
        )
        return _sharded(self._apply(layer, inputs), out_sharding)

    def _apply(self, layer: Any, inputs: Array) -> Array:
        kernel = self.kernel.value
        bias = self.bias.value if self.bias is not None else None
        inputs, kernel, bias = _promoted(
            self.promote_dtype, inputs, kernel, bias, dtype=self.dtype
        )
        params = (
            {"kernel": kernel} if bias is None else {"kernel": kernel, "bias": bias}
        )
        return layer.apply({"params": params}, inputs)


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
        promote_dtype: Callable[..., Any] = promote_dtype,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = _NO_META,
        bias_metadata: Mapping[str, Any] = _NO_META,
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
        self.promote_dtype = promote_dtype
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
        return Conv._apply(self, layer, inputs)  # type: ignore[arg-type]


def _take_rows(embedding: Array, ids: Array) -> Array:
    return jnp.take(embedding, ids, axis=0)


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
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        embedding_metadata: Mapping[str, Any] = _NO_META,
    ):
        self.embedding = _param(
            embedding_init,
            rngs,
            (num_embeddings, features),
            param_dtype,
            embedding_metadata,
        )
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError(
                "Input type must be an integer or unsigned integer.\n"
                f"Got {inputs.dtype}: Embed looks ids up; cast them, e.g. "
                "x.astype(jnp.int32)."
            )
        (embedding,) = self.promote_dtype(
            (self.embedding.value,), dtype=self.dtype, inexact=False
        )
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        if out_sharding is not None:
            take = jax.sharding.auto_axes(_take_rows, out_sharding=out_sharding)
            return take(embedding, inputs)  # type: ignore[call-arg]
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Array, out_sharding: Any = None) -> Array:
        """``query @ embedding.T``: logits over the vocabulary (weight tying)."""
        query, embedding = self.promote_dtype(
            (query, self.embedding.value), dtype=self.dtype
        )
        kw = {"out_sharding": out_sharding} if out_sharding is not None else {}
        return jnp.dot(query, embedding.T, **kw)


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
        promote_dtype: Callable[..., Any] = promote_dtype,
        einsum_op: Callable[..., Array] = jnp.einsum,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = _NO_META,
        bias_metadata: Mapping[str, Any] = _NO_META,
    ):
        einsum_str = einsum_str.replace(" ", "")
        self._check(einsum_str)
        self.kernel = _param(
            kernel_init, rngs, tuple(kernel_shape), param_dtype, kernel_metadata
        )
        self.bias = (
            _param(bias_init, rngs, tuple(bias_shape), param_dtype, bias_metadata)
            if bias_shape is not None
            else None
        )
        self.einsum_str = einsum_str
        self.kernel_shape = tuple(kernel_shape)
        self.bias_shape = tuple(bias_shape) if bias_shape is not None else None
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type

    @staticmethod
    def _check(einsum_str: str) -> None:
        if "->" not in einsum_str or einsum_str.count(",") != 1:
            raise ValueError(
                f"Einsum: einsum_str {einsum_str!r} must name two operands and an "
                "output, e.g. 'btd,dk->btk'."
            )

    def __call__(
        self, inputs: Array, einsum_str: str | None = None, out_sharding: Any = None
    ) -> Array:
        spec = (einsum_str or self.einsum_str).replace(" ", "")
        self._check(spec)
        bias = self.bias.value if self.bias is not None else None
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel.value, bias), dtype=self.dtype
        )
        kw = _dot_kwargs(out_sharding, self.preferred_element_type)
        y = self.einsum_op(spec, inputs, kernel, precision=self.precision, **kw)
        if bias is not None:
            y = y + bias.reshape((1,) * (y.ndim - bias.ndim) + bias.shape)
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
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        scale_metadata: Mapping[str, Any] = _NO_META,
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
        self.promote_dtype = promote_dtype
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
        scale = self.scale.value if self.scale is not None else None
        x, scale = _promoted(self.promote_dtype, x, scale, dtype=self.dtype)
        params = {} if scale is None else {"params": {"scale": scale}}
        return layer.apply(params, x, mask=mask)


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
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = _NO_META,
        scale_metadata: Mapping[str, Any] = _NO_META,
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
        self.promote_dtype = promote_dtype
        shape = (num_features,)
        self.scale = _optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = _optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
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
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        x, scale, bias = _promoted(self.promote_dtype, x, scale, bias, dtype=self.dtype)
        params = {k: v for k, v in (("scale", scale), ("bias", bias)) if v is not None}
        return layer.apply({"params": params}, x, mask=mask)


def _reshaped(
    init: Callable[..., Any], key: Any, flat: tuple, shape: tuple, dtype: Any
) -> Any:
    """``init`` drawn at the 2-D ``flat`` shape (so fans are those of the flat
    matrix), reshaped to ``shape`` (through a VariableMetadata box)."""
    out = init(key, flat, dtype)
    if isinstance(out, VariableMetadata):
        out.raw_value = jnp.reshape(out.raw_value, shape)
        return out
    return jnp.reshape(out, shape)


class LinearGeneral(Module):
    """A linear map over several axes: ``in_features`` (on ``axis``) to
    ``out_features``; ``kernel`` of shape ``batch + in_features + out_features``
    (``batch_axis`` maps input axes to kernel batch dimensions)."""

    def __init__(
        self,
        in_features: int | Sequence[int],
        out_features: int | Sequence[int],
        *,
        axis: int | Sequence[int] = -1,
        batch_axis: Mapping[int, int] = FrozenDict({}),
        use_bias: bool = True,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        kernel_init: Callable[..., Array] = _default_kernel_init,
        bias_init: Callable[..., Array] = _zeros,
        precision: Any = None,
        promote_dtype: Callable[..., Any] = promote_dtype,
        dot_general: Callable[..., Array] | None = None,
        dot_general_cls: Any = None,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = _NO_META,
        bias_metadata: Mapping[str, Any] = _NO_META,
    ):
        self.in_features = _tuple(in_features)
        self.out_features = _tuple(out_features)
        self.axis = _tuple(axis)
        self.batch_axis = FrozenDict(batch_axis)
        if len(self.axis) != len(self.in_features):
            raise ValueError(
                f"LinearGeneral: axis {self.axis} and in_features "
                f"{self.in_features} must have the same length."
            )
        if self.batch_axis:
            dims = tuple(self.batch_axis.keys())
            if any(d < 0 for d in dims) or set(dims) != set(range(max(dims) + 1)):
                raise ValueError(
                    f"batch_dims {dims} must be consecutive leading dimensions "
                    "starting from 0."
                )
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.dot_general = dot_general
        self.dot_general_cls = dot_general_cls
        self.preferred_element_type = preferred_element_type
        batch = tuple(self.batch_axis.values())
        n_in = int(np.prod(batch)) * int(np.prod(self.in_features))
        n_out = int(np.prod(self.out_features))
        shape = batch + self.in_features + self.out_features
        self.kernel = Param(
            _reshaped(kernel_init, rngs.params(), (n_in, n_out), shape, param_dtype),
            **dict(kernel_metadata),
        )
        self.bias = None
        if use_bias:
            bshape = batch + self.out_features
            self.bias = Param(
                _reshaped(
                    bias_init,
                    rngs.params(),
                    (int(np.prod(bshape)),),
                    bshape,
                    param_dtype,
                ),
                **dict(bias_metadata),
            )

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
        ndim = inputs.ndim
        axis = tuple(a % ndim for a in self.axis)
        batch_axis = tuple(a % ndim for a in self.batch_axis.keys())
        n_batch = len(batch_axis)
        expanded_batch = tuple(
            inputs.shape[ax] if ax in batch_axis else 1
            for ax in range(ndim)
            if ax not in axis
        )
        bias = self.bias.value if self.bias is not None else None
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel.value, bias), dtype=self.dtype
        )
        if self.dot_general_cls is not None:
            dot_general = self.dot_general_cls()
        else:
            dot_general = self.dot_general or jax.lax.dot_general
        contract = tuple(range(n_batch, n_batch + len(axis)))
        y = dot_general(
            inputs,
            kernel,
            ((axis, contract), (batch_axis, tuple(range(n_batch)))),
            precision=self.precision,
            **_dot_kwargs(out_sharding, self.preferred_element_type),
        )
        if bias is not None:
            y = y + jnp.reshape(bias, expanded_batch + self.out_features)
        return y


__all__ = [
    "Conv",
    "ConvTranspose",
    "Einsum",
    "Embed",
    "GroupNorm",
    "LinearGeneral",
    "RMSNorm",
]
