"""Convolutions: Conv, ConvLocal and ConvTranspose over channel-last inputs.

Fields, parameter names, shapes and initialisation follow Flax Linen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens._facades import show_at_flax_paths
from lens._kernels import conv as kconv
from lens._kernels import linear as ops
from lens._kernels.dtypes import promote_dtype
from lens.core.nn import initializers
from lens.core.nn.initializers import default_kernel_init
from lens.nn._hyperparameters import SIZE, SIZES
from lens.nn._module import Module
from lens.nn._module_support import compact
from lens.typing import (
    Array,
    ConvGeneralDilatedT,
    Dtype,
    Initializer,
    PaddingLike,
    PrecisionLike,
    PromoteDtypeFn,
)

# -------------------------------------------------------------------------- conv


class _Conv(Module):
    """Convolution over channel-last inputs ``(*batch, *spatial, features)``.

    Attributes:
      features: number of convolution filters.
      kernel_size: shape of the convolutional kernel (an int is a 1D kernel).
      strides: an int or sequence of ``n`` ints, the inter-window strides.
      padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'`` (periodic),
        ``'REFLECT'``, ``'CAUSAL'`` (1D only), an int or ``n`` ints/pairs.
      input_dilation: an int or ``n`` ints, dilation of the inputs.
      kernel_dilation: an int or ``n`` ints, dilation of the kernel (atrous).
      feature_group_count: if given, divides the input features into groups.
      use_bias: whether to add a bias to the output.
      mask: optional mask multiplied into the weights (same shape as the kernel).
      dtype, param_dtype, precision, kernel_init, bias_init, promote_dtype: as in
        :class:`Dense`.
      conv_general_dilated: the ``lax.conv_general_dilated`` to use.
      conv_general_dilated_cls: a class whose instances are that function.
    """

    _hyperparameters = {
        "features": SIZE,
        "kernel_size": SIZES,
        "strides": SIZES,
        "input_dilation": SIZES,
        "kernel_dilation": SIZES,
        "feature_group_count": SIZE,
    }

    features: int
    kernel_size: int | Sequence[int]
    strides: None | int | Sequence[int] = 1
    padding: PaddingLike = "SAME"
    input_dilation: None | int | Sequence[int] = 1
    kernel_dilation: None | int | Sequence[int] = 1
    feature_group_count: int = 1
    use_bias: bool = True
    mask: Array | None = None
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    promote_dtype: PromoteDtypeFn = promote_dtype
    conv_general_dilated: ConvGeneralDilatedT | None = None
    conv_general_dilated_cls: Any = None

    @property
    def shared_weights(self) -> bool:
        """True for a convolution; False for a locally connected layer."""
        raise NotImplementedError

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the (possibly unshared) convolution.

        More than one batch axis is flattened for the convolution and restored;
        a missing batch axis is added and removed again.
        """
        kernel_size = ops.canonicalize_tuple(self.kernel_size)
        win = kconv.window(
            kernel_size,
            self.strides,
            self.input_dilation,
            self.kernel_dilation,
            self.padding,
        )
        inputs, batch_shape = ops.flatten_batch(inputs, len(kernel_size))
        inputs, padding = kconv.pad_inputs(inputs, win)
        dimension_numbers = ops.conv_dimension_numbers(inputs.shape)
        conv = ops.pick_op(
            self,
            "conv_general_dilated",
            "conv_general_dilated_cls",
            lax.conv_general_dilated,
        )
        kernel_shape = _kernel_shape(self, conv, inputs, win, padding)
        if self.mask is not None and self.mask.shape != kernel_shape:
            raise ValueError(
                "Mask needs to have the same shape as weights. Shapes are: "
                f"{self.mask.shape}, {kernel_shape}"
            )
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel *= self.mask
        bias = None
        if self.use_bias:
            # unshared: one bias per output position (kernel_shape[:-2] of them)
            bias_shape = (
                (self.features,)
                if self.shared_weights
                else kernel_shape[:-2] + (self.features,)
            )
            bias = self.param("bias", self.bias_init, bias_shape, self.param_dtype)

        inputs, kernel, bias = self.promote_dtype(
            inputs, kernel, bias, dtype=self.dtype
        )
        if self.shared_weights:
            y = conv(
                inputs,
                kernel,
                win.strides,
                padding,
                lhs_dilation=win.input_dilation,
                rhs_dilation=win.kernel_dilation,
                dimension_numbers=dimension_numbers,
                feature_group_count=self.feature_group_count,
                precision=self.precision,
            )
        else:
            y = lax.conv_general_dilated_local(
                lhs=inputs,
                rhs=kernel,
                window_strides=win.strides,
                padding=padding,
                filter_shape=kernel_size,
                lhs_dilation=win.input_dilation,
                rhs_dilation=win.kernel_dilation,
                dimension_numbers=dimension_numbers,
                precision=self.precision,
            )
        return kconv.restore_batch(kconv.add_bias(y, bias), batch_shape)


def _kernel_shape(
    self: _Conv, conv: Any, inputs: Array, win: Any, padding: Any
) -> tuple:
    """The kernel's shape: one shared window, or one per output position.

    A function, not a method: tabulate lists every method call of a module."""
    kernel_size, in_features = win.kernel_size, jnp.shape(inputs)[-1]
    if self.shared_weights:
        if in_features % self.feature_group_count:
            raise ValueError(
                f"{type(self).__name__}: {in_features} input features are not "
                f"divisible by feature_group_count={self.feature_group_count}."
            )
        return kernel_size + (
            in_features // self.feature_group_count,
            self.features,
        )
    if self.feature_group_count != 1:
        raise NotImplementedError(
            "`lax.conv_general_dilated_local` does not support "
            f"`feature_group_count != 1`, got `{self.feature_group_count}`."
        )
    out_shape = jax.eval_shape(
        lambda lhs, rhs: conv(
            lhs=lhs,
            rhs=rhs,
            window_strides=win.strides,
            padding=padding,
            dimension_numbers=ops.conv_dimension_numbers(inputs.shape),
            lhs_dilation=win.input_dilation,
            rhs_dilation=win.kernel_dilation,
        ),
        inputs,
        jax.ShapeDtypeStruct(kernel_size + (in_features, self.features), inputs.dtype),
    ).shape
    return out_shape[1:-1] + (
        int(np.prod(kernel_size)) * in_features,
        self.features,
    )


class Conv(_Conv):
    """Convolution wrapping ``lax.conv_general_dilated`` (channel-last).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = Conv(features=4, kernel_size=(3,), padding="VALID")
        >>> out, variables = layer.init_with_output(jax.random.key(0), jnp.ones((1, 8, 3)))
        >>> jax.tree_util.tree_map(jnp.shape, variables)
        {'params': {'bias': (4,), 'kernel': (3, 3, 4)}}
        >>> out.shape
        (1, 6, 4)

    Kernel ``(*kernel_size, in_features // feature_group_count, features)``;
    bias ``(features,)``. See :class:`_Conv` for the attributes.
    """

    @property
    def shared_weights(self) -> bool:
        return True


class ConvLocal(_Conv):
    """A locally connected layer: ``lax.conv_general_dilated_local``.

    Like :class:`Conv` but with separate weights at each output position:
    kernel ``(*out_spatial, prod(kernel_size) * in_features, features)``, bias
    ``(*out_spatial, features)``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = ConvLocal(features=4, kernel_size=(3,), padding="VALID")
        >>> variables = layer.init(jax.random.key(0), jnp.ones((1, 8, 3)))
        >>> jax.tree_util.tree_map(jnp.shape, variables)
        {'params': {'bias': (6, 4), 'kernel': (6, 9, 4)}}
    """

    @property
    def shared_weights(self) -> bool:
        return False


class ConvTranspose(Module):
    """Transposed convolution wrapping ``lax.conv_transpose`` (channel-last).

    Attributes:
      features: number of convolution filters.
      kernel_size: shape of the kernel (an int is a 1D kernel).
      strides: ``n`` ints, the inter-window strides (default 1).
      padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, or ``n`` ints/pairs.
      kernel_dilation: ``n`` ints, dilation of the kernel.
      use_bias, mask, dtype, param_dtype, precision, kernel_init, bias_init,
        promote_dtype: as in :class:`Conv`.
      transpose_kernel: flip the kernel's spatial axes and swap its feature
        axes (the gradient of a ``Conv``): kernel ``(..., features, in)``.
      preferred_element_type: the accumulation dtype.
    """

    _hyperparameters = {
        "features": SIZE,
        "kernel_size": SIZES,
        "strides": SIZES,
        "kernel_dilation": SIZES,
    }

    features: int
    kernel_size: int | Sequence[int]
    strides: Sequence[int] | None = None
    padding: PaddingLike = "SAME"
    kernel_dilation: Sequence[int] | None = None
    use_bias: bool = True
    mask: Array | None = None
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    transpose_kernel: bool = False
    promote_dtype: PromoteDtypeFn = promote_dtype
    preferred_element_type: Dtype | None = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the transposed convolution (batch axes as in :class:`Conv`)."""
        kernel_size = ops.canonicalize_tuple(self.kernel_size)
        nd = len(kernel_size)
        inputs, batch_shape = ops.flatten_batch(inputs, nd)
        strides = ops.broadcast_window(self.strides, nd)
        kernel_dilation = ops.broadcast_window(self.kernel_dilation, nd)
        in_features = jnp.shape(inputs)[-1]
        kernel_shape = kernel_size + (
            (self.features, in_features)
            if self.transpose_kernel
            else (in_features, self.features)
        )
        if self.mask is not None and self.mask.shape != kernel_shape:
            raise ValueError(
                "Mask needs to have the same shape as weights. Shapes are: "
                f"{self.mask.shape}, {kernel_shape}"
            )
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel *= self.mask
        padding = ops.canonicalize_padding(self.padding, nd)
        if padding == "CIRCULAR":
            padding = "VALID"
        bias = (
            self.param("bias", self.bias_init, (self.features,), self.param_dtype)
            if self.use_bias
            else None
        )
        inputs, kernel, bias = self.promote_dtype(
            inputs, kernel, bias, dtype=self.dtype
        )
        y = lax.conv_transpose(
            inputs,
            kernel,
            strides,
            padding,
            rhs_dilation=kernel_dilation,
            transpose_kernel=self.transpose_kernel,
            precision=self.precision,
            preferred_element_type=self.preferred_element_type,
        )
        if self.padding == "CIRCULAR":
            # Wrap the full ("VALID") output around the strided input size: the
            # periodic transpose of a periodic convolution.
            scaled = [d * s for d, s in zip(jnp.shape(inputs)[1:-1], strides)]
            diffs = [-(yd - xd) % (2 * xd) for yd, xd in zip(y.shape[1:-1], scaled)]
            if self.transpose_kernel:
                pads = [(d // 2, (d + 1) // 2) for d in diffs]
            else:
                pads = [((d + 1) // 2, d // 2) for d in diffs]
            y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
            for i in range(1, y.ndim - 1):
                y = y.reshape(y.shape[:i] + (-1, scaled[i - 1]) + y.shape[i + 1 :])
                y = y.sum(axis=i)
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if batch_shape is not None:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


# ------------------------------------------------------------------------- embed

show_at_flax_paths(__name__)
