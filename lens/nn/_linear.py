"""Linear layers: Dense, DenseGeneral, Einsum, Conv, ConvLocal, ConvTranspose, Embed.

Fields (names, order, defaults), parameter names, shapes and initialisation follow
Flax Linen, so the same key gives the same parameters and a model ports by changing
its import.

The common case (default ``promote_dtype`` and ``dot_general``) runs the layer's
arithmetic as one small jitted function, traced once per shape: every further layer
of that shape (a deep stack, a re-run cell, a fresh train step) and its derivatives
come from JAX's caches, and an un-jitted call runs one executable instead of
dispatching op by op. Inside an outer ``jit`` XLA inlines it: same program.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from opt_einsum.parser import parse_einsum_input

from lens.core import _meta
from lens.core.nn import initializers
from lens.core.nn.initializers import default_embed_init, default_kernel_init
from lens.nn._dtypes import merge_param, promote_dtype
from lens.nn._module import Module
from lens.nn._module_support import compact
from lens.typing import (
    Array,
    ConvGeneralDilatedT,
    DotGeneralT,
    Dtype,
    Initializer,
    LaxPadding,
    PaddingLike,
    PrecisionLike,
    PromoteDtypeFn,
)

__all__ = [
    "Conv",
    "ConvLocal",
    "ConvTranspose",
    "Dense",
    "DenseGeneral",
    "Einsum",
    "Embed",
    "canonicalize_padding",
    "default_embed_init",
    "default_kernel_init",
]


def _normalize_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return tuple(sorted(a if a >= 0 else ndim + a for a in axes))


def _canonicalize_tuple(x: Sequence[int] | int) -> tuple[int, ...]:
    return tuple(x) if isinstance(x, Iterable) else (x,)


def _static(precision: Any) -> Any:
    """``precision`` as a hashable value (a list of two precisions becomes a tuple)."""
    return tuple(precision) if isinstance(precision, list) else precision


def _pick(
    module: Any, fn_field: str, cls_field: str, default: Callable[..., Any]
) -> Any:
    """The op a layer uses: an instance of ``<op>_cls``, else ``<op>``, else ``default``."""
    cls = getattr(module, cls_field)
    if cls is not None:
        return cls()
    fn = getattr(module, fn_field)
    return fn if fn is not None else default


# --------------------------------------------------------------------- arithmetic


def _dense(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    dtype: Any = None,
    precision: Any = None,
    dot_general: Callable[..., Array] = lax.dot_general,
    promote: Callable[..., Any] = promote_dtype,
) -> Array:
    inputs, kernel, bias = promote(inputs, kernel, bias, dtype=dtype)
    y = dot_general(
        inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=precision
    )
    if bias is not None:
        y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
    return y


def _dense_general(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    axis: tuple[int, ...],
    batch_dims: tuple[int, ...],
    dtype: Any = None,
    precision: Any = None,
    dot_general: Callable[..., Array] = lax.dot_general,
    promote: Callable[..., Any] = promote_dtype,
) -> Array:
    """Contracts ``axis`` of ``inputs`` with the kernel's leading (non-batch) axes."""
    inputs, kernel, bias = promote(inputs, kernel, bias, dtype=dtype)
    n_batch = len(batch_dims)
    contract = tuple(range(n_batch, n_batch + len(axis)))
    y = dot_general(
        inputs,
        kernel,
        ((axis, contract), (batch_dims, tuple(range(n_batch)))),
        precision=precision,
    )
    if bias is not None:
        # y's axes: batch dims, the free input axes, then the features.
        n_free = inputs.ndim - n_batch - len(axis)
        dims = tuple(range(n_batch)) + tuple(range(n_batch + n_free, y.ndim))
        y += lax.broadcast_in_dim(bias, y.shape, dims)
    return y


# Static arguments by position: a call with keywords takes JAX's slower path.
_dense_jit = jax.jit(_dense, static_argnums=(3, 4))
_dense_general_jit = jax.jit(
    _dense_general, static_argnames=("axis", "batch_dims", "dtype", "precision")
)


# ------------------------------------------------------------------------- dense


class DenseGeneral(Module):
    """A linear transformation with flexible axes.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = DenseGeneral(features=(4, 5), axis=(1, -1))
        >>> params = layer.init(jax.random.key(0), jnp.ones((1, 3, 6, 7)))
        >>> jax.tree_util.tree_map(jnp.shape, params)
        {'params': {'bias': (4, 5), 'kernel': (3, 7, 4, 5)}}

    Attributes:
      features: int or tuple with number of output features.
      axis: int or tuple with axes to apply the transformation on.
      batch_dims: tuple with batch axes (leading, consecutive).
      use_bias: whether to add a bias to the output (default: True).
      dtype: the dtype of the computation (default: infer from input and params).
      param_dtype: the dtype passed to parameter initializers (default: float32).
      kernel_init: initializer of the kernel; it is called with the flattened
        ``(in, out)`` shape and the result reshaped, so fan-in/fan-out are those
        of the whole contraction.
      bias_init: initializer function for the bias.
      precision: numerical precision of the computation (``jax.lax.Precision``).
      promote_dtype: ``fn(inputs, kernel, bias, dtype=)`` casting to the
        computation dtype.
      dot_general: the ``lax.dot_general`` to use (deprecated in Flax).
      dot_general_cls: a class whose instances are the ``dot_general`` to use.
    """

    features: int | Sequence[int]
    axis: int | Sequence[int] = -1
    batch_dims: Sequence[int] = ()
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    precision: PrecisionLike = None
    promote_dtype: PromoteDtypeFn = promote_dtype
    dot_general: DotGeneralT | None = None
    dot_general_cls: Any = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies a linear transformation to the inputs along multiple dimensions."""
        features = _canonicalize_tuple(self.features)
        axis = _normalize_axes(_canonicalize_tuple(self.axis), inputs.ndim)
        batch_dims = _normalize_axes(_canonicalize_tuple(self.batch_dims), inputs.ndim)
        if batch_dims:
            max_dim = np.max(batch_dims)
            if set(batch_dims) != set(range(max_dim + 1)):
                raise ValueError(
                    f"batch_dims {str(batch_dims)} must be consecutive leading dimensions starting "
                    "from 0."
                )
        n_batch, n_axis, n_feat = len(batch_dims), len(axis), len(features)
        batch_shape = tuple(inputs.shape[a] for a in batch_dims)
        kernel_shape = batch_shape + tuple(inputs.shape[a] for a in axis) + features

        def kernel_init_wrap(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
            flat = (
                int(
                    np.prod(shape[:n_batch])
                    * np.prod(shape[n_batch : n_batch + n_axis])
                ),
                int(np.prod(shape[-n_feat:])),
            )
            k = self.kernel_init(rng, flat, dtype)
            if isinstance(k, _meta.AxisMetadata):
                # The box's names describe the final shape: reshape the raw value
                # (unboxing would constrain the flat value to them).
                return _meta.replace_boxed(k, jnp.reshape(_meta.raw_value(k), shape))
            return jnp.reshape(k, shape)

        kernel = self.param("kernel", kernel_init_wrap, kernel_shape, self.param_dtype)
        bias = None
        if self.use_bias:

            def bias_init_wrap(
                rng: Any, shape: tuple, dtype: Any = jnp.float32
            ) -> Array:
                flat = (int(np.prod(shape[:n_batch]) * np.prod(shape[-n_feat:])),)
                b = self.bias_init(rng, flat, dtype)
                if isinstance(b, _meta.AxisMetadata):
                    return _meta.replace_boxed(
                        b, jnp.reshape(_meta.raw_value(b), shape)
                    )
                return jnp.reshape(b, shape)

            bias = self.param(
                "bias", bias_init_wrap, batch_shape + features, self.param_dtype
            )
        dot_general = _pick(self, "dot_general", "dot_general_cls", lax.dot_general)
        if dot_general is lax.dot_general and self.promote_dtype is promote_dtype:
            return _dense_general_jit(
                inputs,
                kernel,
                bias,
                axis=axis,
                batch_dims=batch_dims,
                dtype=self.dtype,
                precision=_static(self.precision),
            )
        return _dense_general(
            inputs,
            kernel,
            bias,
            axis,
            batch_dims,
            self.dtype,
            self.precision,
            dot_general,
            self.promote_dtype,
        )


class Dense(Module):
    """A linear transformation applied over the last dimension of the input.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = Dense(features=4)
        >>> params = layer.init(jax.random.key(0), jnp.ones((1, 3)))
        >>> jax.tree_util.tree_map(jnp.shape, params)
        {'params': {'bias': (4,), 'kernel': (3, 4)}}

    Attributes:
      features: the number of output features.
      use_bias: whether to add a bias to the output (default: True).
      dtype: the dtype of the computation (default: infer from input and params).
      param_dtype: the dtype passed to parameter initializers (default: float32).
      precision: numerical precision of the computation (``jax.lax.Precision``).
      kernel_init: initializer of ``kernel``, shape ``(in_features, features)``.
      bias_init: initializer of ``bias``, shape ``(features,)``.
      promote_dtype: ``fn(inputs, kernel, bias, dtype=)`` casting to the
        computation dtype.
      dot_general: the ``lax.dot_general`` to use.
      dot_general_cls: a class whose instances are the ``dot_general`` to use.
    """

    features: int
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    promote_dtype: PromoteDtypeFn = promote_dtype
    dot_general: DotGeneralT | None = None
    dot_general_cls: Any = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies a linear transformation to the inputs along the last dimension."""
        kernel = self.param(
            "kernel",
            self.kernel_init,
            (jnp.shape(inputs)[-1], self.features),
            self.param_dtype,
        )
        bias = (
            self.param("bias", self.bias_init, (self.features,), self.param_dtype)
            if self.use_bias
            else None
        )
        dot_general = _pick(self, "dot_general", "dot_general_cls", lax.dot_general)
        if dot_general is lax.dot_general and self.promote_dtype is promote_dtype:
            return _dense_jit(
                inputs,
                kernel,
                bias,
                self.dtype,
                _static(self.precision),
            )
        return _dense(
            inputs,
            kernel,
            bias,
            self.dtype,
            self.precision,
            dot_general,
            self.promote_dtype,
        )


class Einsum(Module):
    """An einsum transformation with learnable kernel and bias.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = Einsum((5, 6, 7), "abc,cde->abde")
        >>> variables = layer.init(jax.random.key(0), jnp.ones((3, 4, 5)))
        >>> jax.tree_util.tree_map(jnp.shape, variables)
        {'params': {'bias': (6, 7), 'kernel': (5, 6, 7)}}

    Attributes:
      shape: the shape of the kernel.
      einsum_str: the einsum equation (two operands: inputs, kernel); may be
        given at call time instead.
      use_bias: whether to add a bias over the kernel axes kept in the output.
      dtype, param_dtype, precision, kernel_init, bias_init, promote_dtype: as in
        :class:`Dense`.
      preferred_element_type: the accumulation dtype of ``jnp.einsum``.
    """

    shape: Sequence[int]
    einsum_str: str | None = None
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    promote_dtype: PromoteDtypeFn = promote_dtype
    preferred_element_type: Dtype | None = None

    @compact
    def __call__(self, inputs: Array, einsum_str: str | None = None) -> Array:
        """Applies the einsum (a call-time ``einsum_str`` overrides none set)."""
        merged: str = merge_param("einsum_str", self.einsum_str, einsum_str)
        einsum_str = merged.replace(" ", "")
        if "->" not in einsum_str:
            raise ValueError(
                '`einsum_str` equation must be explicit and include "->".\n'
                f'Got "{einsum_str}"; write e.g. "abc,cde->abde".'
            )
        if einsum_str.count(",") != 1:
            raise ValueError(
                "`einsum_str` equation must have exactly two operands and therefore, "
                f"exactly one comma character, instead of {einsum_str.count(',')}\n"
                "The operands are the inputs and the kernel."
            )
        kernel = self.param("kernel", self.kernel_init, self.shape, self.param_dtype)
        bias, broadcast_shape = None, ()
        if self.use_bias:
            bias_shape, broadcast_shape = self._get_bias_shape(
                einsum_str, inputs, kernel
            )
            bias = self.param("bias", self.bias_init, bias_shape, self.param_dtype)
        inputs, kernel, bias = self.promote_dtype(
            inputs, kernel, bias, dtype=self.dtype
        )
        y = jnp.einsum(
            einsum_str,
            inputs,
            kernel,
            precision=self.precision,
            preferred_element_type=self.preferred_element_type,
        )
        if bias is not None:
            y += jnp.reshape(bias, broadcast_shape)
        return y

    def _get_bias_shape(
        self, einsum_str: str, lhs: Array, rhs: Array
    ) -> tuple[list[int], list[int]]:
        """(bias shape, its broadcast shape in the output): the kernel axes kept."""
        operands, result, _ = parse_einsum_input((einsum_str, lhs, rhs))
        rhs_axes = {c: i for i, c in enumerate(operands.split(",")[1])}
        broadcast = [1] * len(result)
        bias_shape = []
        for i, c in enumerate(result):
            if c in rhs_axes:
                broadcast[i] = self.shape[rhs_axes[c]]
                bias_shape.append(self.shape[rhs_axes[c]])
        return bias_shape, broadcast


# -------------------------------------------------------------------------- conv


def _conv_dimension_numbers(input_shape: Sequence[int]) -> lax.ConvDimensionNumbers:
    """Channel-last dimension numbers for ``lax.conv_general_dilated``."""
    ndim = len(input_shape)
    lhs_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
    rhs_spec = (ndim - 1, ndim - 2) + tuple(range(0, ndim - 2))
    return lax.ConvDimensionNumbers(lhs_spec, rhs_spec, lhs_spec)


def canonicalize_padding(padding: PaddingLike, rank: int) -> LaxPadding:
    """Conv padding in a form ``jax.lax`` takes: a string or ``rank`` pairs.

    Example:
        >>> canonicalize_padding(1, 2)
        [(1, 1), (1, 1)]
        >>> canonicalize_padding([(0, 1), 2], 2)
        [(0, 1), (2, 2)]
    """
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, Sequence) and len(padding) == rank:
        pads = []
        for p in padding:
            if isinstance(p, int):
                pads.append((p, p))
            elif isinstance(p, tuple) and len(p) == 2:
                pads.append(p)
            else:
                break
        if len(pads) == rank:
            return pads
    raise ValueError(
        f"Invalid padding format: {padding}, should be str, int, or a sequence of "
        f"len {rank} where each element is an int or pair of ints."
    )


def _broadcast_window(x: int | Sequence[int] | None, n: int) -> tuple[int, ...]:
    if x is None:
        x = 1
    if isinstance(x, int):
        return (x,) * n
    return tuple(x)


def _flatten_batch(
    inputs: Array, n_spatial: int
) -> tuple[Array, tuple[int, ...] | None]:
    """Inputs with exactly one batch axis, and the batch shape to restore (or None)."""
    n_batch = inputs.ndim - (n_spatial + 1)
    if n_batch == 1:
        return inputs, None
    batch_shape = inputs.shape[:n_batch]
    return jnp.reshape(inputs, (-1,) + inputs.shape[n_batch:]), batch_shape


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
        kernel_size = _canonicalize_tuple(self.kernel_size)
        nd = len(kernel_size)
        inputs, batch_shape = _flatten_batch(inputs, nd)
        strides = _broadcast_window(self.strides, nd)
        input_dilation = _broadcast_window(self.input_dilation, nd)
        kernel_dilation = _broadcast_window(self.kernel_dilation, nd)

        padding = canonicalize_padding(self.padding, nd)
        if padding in ("CIRCULAR", "REFLECT"):
            dilated = [(k - 1) * d + 1 for k, d in zip(kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            mode = "wrap" if padding == "CIRCULAR" else "reflect"
            inputs = jnp.pad(inputs, pads, mode=mode)
            padding = "VALID"
        elif padding == "CAUSAL":
            if nd != 1:
                raise ValueError(
                    "Causal padding is only implemented for 1D convolutions.\n"
                    f"kernel_size={self.kernel_size} has {nd} spatial axes."
                )
            left = kernel_dilation[0] * (kernel_size[0] - 1)
            inputs = jnp.pad(inputs, [(0, 0), (left, 0), (0, 0)])
            padding = "VALID"

        dimension_numbers = _conv_dimension_numbers(inputs.shape)
        in_features = jnp.shape(inputs)[-1]
        conv = _pick(
            self,
            "conv_general_dilated",
            "conv_general_dilated_cls",
            lax.conv_general_dilated,
        )
        if self.shared_weights:
            if in_features % self.feature_group_count:
                raise ValueError(
                    f"{type(self).__name__}: {in_features} input features are not "
                    f"divisible by feature_group_count={self.feature_group_count}."
                )
            kernel_shape = kernel_size + (
                in_features // self.feature_group_count,
                self.features,
            )
        else:
            if self.feature_group_count != 1:
                raise NotImplementedError(
                    "`lax.conv_general_dilated_local` does not support "
                    f"`feature_group_count != 1`, got `{self.feature_group_count}`."
                )
            out_shape = jax.eval_shape(
                lambda lhs, rhs: conv(
                    lhs=lhs,
                    rhs=rhs,
                    window_strides=strides,
                    padding=padding,
                    dimension_numbers=dimension_numbers,
                    lhs_dilation=input_dilation,
                    rhs_dilation=kernel_dilation,
                ),
                inputs,
                jax.ShapeDtypeStruct(
                    kernel_size + (in_features, self.features), inputs.dtype
                ),
            ).shape
            kernel_shape = out_shape[1:-1] + (
                int(np.prod(kernel_size)) * in_features,
                self.features,
            )

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
                strides,
                padding,
                lhs_dilation=input_dilation,
                rhs_dilation=kernel_dilation,
                dimension_numbers=dimension_numbers,
                feature_group_count=self.feature_group_count,
                precision=self.precision,
            )
        else:
            y = lax.conv_general_dilated_local(
                lhs=inputs,
                rhs=kernel,
                window_strides=strides,
                padding=padding,
                filter_shape=kernel_size,
                lhs_dilation=input_dilation,
                rhs_dilation=kernel_dilation,
                dimension_numbers=dimension_numbers,
                precision=self.precision,
            )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - bias.ndim) + bias.shape)
        if batch_shape is not None:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


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
        kernel_size = _canonicalize_tuple(self.kernel_size)
        nd = len(kernel_size)
        inputs, batch_shape = _flatten_batch(inputs, nd)
        strides = _broadcast_window(self.strides, nd)
        kernel_dilation = _broadcast_window(self.kernel_dilation, nd)
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
        padding = canonicalize_padding(self.padding, nd)
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


class Embed(Module):
    """An embedding table: integer ids to vectors; :meth:`attend` for tied outputs.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layer = Embed(num_embeddings=5, features=3)
        >>> variables = layer.init(jax.random.key(0), jnp.arange(3))
        >>> variables["params"]["embedding"].shape
        (5, 3)

    Attributes:
      num_embeddings: number of embeddings (the vocabulary size).
      features: number of feature dimensions for each embedding.
      dtype: the dtype of the embedding vectors (default: same as embedding).
      param_dtype: the dtype passed to parameter initializers (default: float32).
      embedding_init: embedding initializer.
      promote_dtype: casts the table (and queries of ``attend``) to ``dtype``.
    """

    num_embeddings: int
    features: int
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    embedding_init: Initializer = default_embed_init
    promote_dtype: PromoteDtypeFn = promote_dtype

    def setup(self) -> None:
        self.embedding = self.param(
            "embedding",
            self.embedding_init,
            (self.num_embeddings, self.features),
            self.param_dtype,
        )

    def __call__(self, inputs: Array) -> Array:
        """Embeds integer ``inputs``: the output has a trailing ``features`` axis.

        An id outside ``[0, num_embeddings)`` gives NaNs (``jnp.take``'s fill).
        """
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError(
                "Input type must be an integer or unsigned integer.\n"
                f"Got {inputs.dtype}: Embed looks ids up; cast them, e.g. "
                "x.astype(jnp.int32)."
            )
        (embedding,) = self.promote_dtype(
            self.embedding, dtype=self.dtype, inexact=False
        )
        if self.num_embeddings == 1:
            # Like jnp.take: id 0 gives the one row, other ids NaN (Flax broadcasts
            # the row to every id).
            return jnp.where(
                jnp.broadcast_to(inputs[..., None], inputs.shape + (self.features,))
                == 0,
                embedding,
                jnp.nan,
            )
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Array) -> Array:
        """``query @ embedding.T``: logits over the vocabulary (weight tying)."""
        query, embedding = self.promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, embedding.T)
