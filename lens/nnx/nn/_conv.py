"""Convolutions (flax.nnx's ``nn.linear`` keeps them, and re-exports them from
here): ``Conv`` and ``ConvTranspose``, with flax.nnx's constructors, variable names
and initial values; the arithmetic is lens/_kernels/conv's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._kernels import conv as kernels
from lens.core.nn import initializers
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx.nn._parameters import (
    NO_META,
    as_tuple,
    check_size,
    dot_kwargs,
    make_optional_param,
    make_param,
)
from lens.nnx.nn.dtypes import promote_dtype

Array = Any

_default_kernel_init = initializers.default_kernel_init
_zeros = initializers.zeros_init()


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
        kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        for field, value in (
            ("in_features", in_features),
            ("out_features", out_features),
            ("kernel_size", kernel_size),
            ("feature_group_count", feature_group_count),
        ):
            check_size("Conv", field, value, "3, 16, kernel_size=3")
        # flax.nnx's attributes in its order (its repr and vars() show them so)
        kernel_size = as_tuple(kernel_size)
        self.kernel_shape = kernel_size + (
            in_features // feature_group_count,
            out_features,
        )
        self.kernel = make_param(
            kernel_init, rngs, self.kernel_shape, param_dtype, kernel_metadata
        )
        if in_features % feature_group_count:  # after the kernel: a float
            # size fails first in JAX's shape check, as in flax
            raise ValueError(
                f"Conv: in_features ({in_features}) must be divisible by "
                f"feature_group_count ({feature_group_count})."
            )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, (out_features,), param_dtype, bias_metadata
        )
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
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

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
        win = kernels.window(
            self.kernel_size,
            self.strides,
            self.input_dilation,
            self.kernel_dilation,
            self.padding,
        )
        kernel, bias = _masked_params(self)
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, bias), dtype=self.dtype
        )
        return kernels.conv(
            inputs,
            kernel,
            bias,
            win,
            feature_group_count=self.feature_group_count,
            precision=self.precision,
            conv_op=self.conv_general_dilated,
            op_kwargs=dot_kwargs(out_sharding, self.preferred_element_type),
        )


def _masked_params(layer: Any) -> tuple[Array, Array | None]:
    """The layer's kernel (times its ``mask``, when set) and bias."""
    kernel = layer.kernel.value
    if layer.mask is not None:
        if layer.mask.shape != kernel.shape:
            raise ValueError(
                "Mask needs to have the same shape as weights. Shapes are: "
                f"{layer.mask.shape}, {kernel.shape}\nGive {type(layer).__name__} "
                f"a mask of the kernel's shape {kernel.shape}."
            )
        kernel = kernel * layer.mask
    return kernel, layer.bias.value if layer.bias is not None else None


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
        kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        self.kernel_size = as_tuple(kernel_size)
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
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        io = (
            (out_features, in_features)
            if transpose_kernel
            else (in_features, out_features)
        )
        self.kernel_shape = self.kernel_size + io
        self.kernel = make_param(
            kernel_init, rngs, self.kernel_shape, param_dtype, kernel_metadata
        )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, (out_features,), param_dtype, bias_metadata
        )

    def __call__(self, inputs: Array) -> Array:
        win = kernels.window(
            self.kernel_size, self.strides, 1, self.kernel_dilation, self.padding
        )
        kernel, bias = _masked_params(self)
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, bias), dtype=self.dtype
        )
        return kernels.conv_transpose(
            inputs,
            kernel,
            bias,
            win,
            transpose_kernel=self.transpose_kernel,
            precision=self.precision,
            preferred_element_type=self.preferred_element_type,
        )
