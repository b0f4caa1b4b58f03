"""Linear layers: Dense, DenseGeneral, Einsum, Conv, ConvTranspose and Embed.

Parameter names, shapes and initialisation follow Flax Linen, so the same key gives
the same parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens.core import _meta
from lens.nn import initializers
from lens.nn._dtypes import promote_dtype
from lens.nn._module import Module, compact

Array = Any
Dtype = Any
Initializer = Callable[..., Array]
PaddingLike = str | int | Sequence[int | tuple[int, int]]


def _canonicalize_tuple(x: int | Sequence[int]) -> tuple[int, ...]:
    return (x,) if isinstance(x, int) else tuple(x)


def _normalize_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return tuple(sorted(a if a >= 0 else ndim + a for a in axes))


def _static(precision: Any) -> Any:
    """``precision`` as a hashable value (a list of two precisions becomes a tuple)."""
    return tuple(precision) if isinstance(precision, list) else precision


def _dense(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    dtype: Any = None,
    precision: Any = None,
    dot_general: Callable[..., Array] = lax.dot_general,
) -> Array:
    """``inputs @ kernel + bias`` over the last axis, in the promoted dtype."""
    inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=dtype)
    y = dot_general(
        inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=precision
    )
    if bias is not None:
        y = y + lax.broadcast_in_dim(bias, y.shape, (y.ndim - 1,))
    return y


def _dense_general(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    axis: tuple[int, ...],
    batch_dims: tuple[int, ...],
    dtype: Any = None,
    precision: Any = None,
) -> Array:
    """Contracts ``axis`` of ``inputs`` with the kernel's leading (non-batch) axes."""
    inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=dtype)
    n_batch = len(batch_dims)
    contract = tuple(range(n_batch, n_batch + len(axis)))
    y = lax.dot_general(
        inputs,
        kernel,
        ((axis, contract), (batch_dims, tuple(range(n_batch)))),
        precision=precision,
    )
    if bias is not None:
        # y's axes: batch dims, the free input axes, then the features.
        n_free = inputs.ndim - n_batch - len(axis)
        dims = tuple(range(n_batch)) + tuple(range(n_batch + n_free, y.ndim))
        y = y + lax.broadcast_in_dim(bias, y.shape, dims)
    return y


# The arithmetic of a layer as one jitted function: traced once per shape, so every
# further layer of that shape (a deep stack, a re-run cell, a fresh train step) and
# its derivatives come from JAX's caches, and an un-jitted call runs one executable
# rather than dispatching op by op. The compiled program is the same: XLA inlines it.
_dense_jit = jax.jit(_dense, static_argnames=("dtype", "precision"))
_dense_general_jit = jax.jit(
    _dense_general, static_argnames=("axis", "batch_dims", "dtype", "precision")
)


class Dense(Module):
    """A linear transformation over the last axis: ``inputs @ kernel + bias``.

    Attributes:
      features: the number of output features.
      use_bias: whether to add a bias.
      dtype: the computation dtype (default: inferred from inputs and params).
      param_dtype: the dtype of the parameters.
      precision: the ``lax`` precision of the matmul.
      kernel_init: initializer of ``kernel``, shape ``(in_features, features)``.
      bias_init: initializer of ``bias``, shape ``(features,)``.
    """

    features: int
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = initializers.default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    dot_general: Callable[..., Array] | None = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the layer to the last axis of ``inputs``."""
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
        if self.dot_general is None:
            return _dense_jit(
                inputs,
                kernel,
                bias,
                dtype=self.dtype,
                precision=_static(self.precision),
            )
        return _dense(
            inputs, kernel, bias, self.dtype, self.precision, self.dot_general
        )


class DenseGeneral(Module):
    """A linear transformation contracting ``axis`` of the inputs to ``features``.

    Attributes:
      features: output feature shape (int or tuple).
      axis: the input axes to contract (int or tuple).
      batch_dims: input axes treated as batch dimensions of the kernel.
      use_bias, dtype, param_dtype, kernel_init, bias_init, precision: as in Dense.
    """

    features: int | Sequence[int]
    axis: int | Sequence[int] = -1
    batch_dims: Sequence[int] = ()
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    kernel_init: Initializer = initializers.default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    precision: Any = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the layer."""
        features = _canonicalize_tuple(self.features)
        axis = _normalize_axes(_canonicalize_tuple(self.axis), inputs.ndim)
        batch_dims = _normalize_axes(_canonicalize_tuple(self.batch_dims), inputs.ndim)
        if batch_dims:
            max_dim = np.max(batch_dims)
            if set(batch_dims) != set(range(max_dim + 1)):
                raise ValueError(
                    f"DenseGeneral: batch_dims {self.batch_dims} must be consecutive leading axes."
                )
        n_batch, n_axis, n_feat = len(batch_dims), len(axis), len(features)
        batch_shape = tuple(inputs.shape[a] for a in batch_dims)
        kernel_shape = batch_shape + tuple(inputs.shape[a] for a in axis) + features

        def kernel_init(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
            flat = (
                int(
                    np.prod(shape[:n_batch])
                    * np.prod(shape[n_batch : n_batch + n_axis])
                ),
                int(np.prod(shape[-n_feat:])),
            )
            k = self.kernel_init(rng, flat, dtype)
            if isinstance(k, _meta.AxisMetadata):
                return _meta.replace_boxed(k, jnp.reshape(_meta.unbox(k), shape))
            return jnp.reshape(k, shape)

        kernel = self.param("kernel", kernel_init, kernel_shape, self.param_dtype)
        bias = None
        if self.use_bias:

            def bias_init(rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
                flat = (int(np.prod(shape[:n_batch]) * np.prod(shape[-n_feat:])),)
                b = self.bias_init(rng, flat, dtype)
                if isinstance(b, _meta.AxisMetadata):
                    return _meta.replace_boxed(b, jnp.reshape(_meta.unbox(b), shape))
                return jnp.reshape(b, shape)

            bias = self.param(
                "bias", bias_init, batch_shape + features, self.param_dtype
            )
        return _dense_general_jit(
            inputs,
            kernel,
            bias,
            axis=axis,
            batch_dims=batch_dims,
            dtype=self.dtype,
            precision=_static(self.precision),
        )


class Einsum(Module):
    """``jnp.einsum(einsum_str, inputs, kernel) + bias`` with a learned kernel.

    Attributes:
      shape: the kernel shape.
      einsum_str: e.g. ``"abc,cde->abde"`` (or pass it at call time).
      use_bias: add a bias over the kernel axes that appear in the output.
    """

    shape: Sequence[int]
    einsum_str: str | None = None
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = initializers.default_kernel_init
    bias_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(self, inputs: Array, einsum_str: str | None = None) -> Array:
        """Applies the einsum."""
        from lens.nn._dtypes import merge_param

        einsum_str = merge_param("einsum_str", self.einsum_str, einsum_str).replace(
            " ", ""
        )
        if "->" not in einsum_str or einsum_str.count(",") != 1:
            raise ValueError(
                f'Einsum: einsum_str must look like "ab,bc->ac", got "{einsum_str}".'
            )
        kernel = self.param(
            "kernel", self.kernel_init, tuple(self.shape), self.param_dtype
        )
        bias = None
        if self.use_bias:
            lhs, out = einsum_str.split("->")
            _, k_str = lhs.split(",")
            bias_shape = tuple(s for c, s in zip(k_str, self.shape) if c in out)
            bias = self.param("bias", self.bias_init, bias_shape, self.param_dtype)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = jnp.einsum(einsum_str, inputs, kernel, precision=self.precision)
        if bias is not None:
            lhs, out = einsum_str.split("->")
            _, k_str = lhs.split(",")
            bias_axes = [c for c in out if c in k_str]
            shape = [s if c in bias_axes else 1 for c, s in zip(out, y.shape)]
            y += jnp.reshape(bias, shape)
        return y


def _conv_padding(padding: PaddingLike, nd: int) -> Any:
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * nd
    return [(p, p) if isinstance(p, int) else tuple(p) for p in padding]


def _dims(nd: int) -> tuple[str, str, str]:
    if not 1 <= nd <= 3:
        raise ValueError(f"Conv supports 1 to 3 spatial dimensions, got {nd}.")
    letters = "DHW"[-nd:]
    return ("N" + letters + "C", letters + "IO", "N" + letters + "C")


class Conv(Module):
    """A convolution over channel-last inputs ``(batch, *spatial, features)``.

    Attributes:
      features: the number of output channels.
      kernel_size: the window size (int or tuple, one per spatial axis).
      strides, padding, input_dilation, kernel_dilation, feature_group_count: as
        in ``lax.conv_general_dilated`` (padding ``'SAME'``, ``'VALID'``,
        ``'CIRCULAR'``, ``'CAUSAL'``, an int or pairs).
      kernel ``(*kernel_size, in // groups, features)``; bias ``(features,)``.
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
    precision: Any = None
    kernel_init: Initializer = initializers.default_kernel_init
    bias_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the convolution."""
        kernel_size = _canonicalize_tuple(self.kernel_size)
        nd = len(kernel_size)
        unbatched = inputs.ndim == nd + 1
        if unbatched:
            inputs = jnp.expand_dims(inputs, 0)
        batch_shape = inputs.shape[: -(nd + 1)]
        if len(batch_shape) > 1:
            inputs = jnp.reshape(inputs, (-1,) + inputs.shape[-(nd + 1) :])

        def tup(x: Any) -> tuple[int, ...]:
            return (
                (1,) * nd
                if x is None
                else ((x,) * nd if isinstance(x, int) else tuple(x))
            )

        strides, in_dil, k_dil = (
            tup(self.strides),
            tup(self.input_dilation),
            tup(self.kernel_dilation),
        )
        padding = self.padding
        if padding == "CIRCULAR":
            k_eff = [(k - 1) * d + 1 for k, d in zip(kernel_size, k_dil)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in k_eff] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode="wrap")
            padding = "VALID"
        elif padding == "CAUSAL":
            if nd != 1:
                raise ValueError(
                    "Causal padding is only implemented for 1D convolutions."
                )
            left = k_dil[0] * (kernel_size[0] - 1)
            inputs = jnp.pad(inputs, [(0, 0), (left, 0), (0, 0)])
            padding = "VALID"
        in_features = jnp.shape(inputs)[-1]
        if in_features % self.feature_group_count:
            raise ValueError(
                f"Conv: {in_features} input features are not divisible by "
                f"feature_group_count={self.feature_group_count}."
            )
        kernel_shape = kernel_size + (
            in_features // self.feature_group_count,
            self.features,
        )
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (
            self.param("bias", self.bias_init, (self.features,), self.param_dtype)
            if self.use_bias
            else None
        )
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        dn = lax.conv_dimension_numbers(inputs.shape, kernel.shape, _dims(nd))
        y = lax.conv_general_dilated(
            inputs,
            kernel,
            strides,
            _conv_padding(padding, nd),
            lhs_dilation=in_dil,
            rhs_dilation=k_dil,
            dimension_numbers=dn,
            feature_group_count=self.feature_group_count,
            precision=self.precision,
        )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if unbatched:
            y = jnp.squeeze(y, axis=0)
        elif len(batch_shape) > 1:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


class ConvTranspose(Module):
    """A transposed convolution (``lax.conv_transpose``) over channel-last inputs.

    kernel ``(*kernel_size, in, features)`` (``(..., features, in)`` with
    ``transpose_kernel=True``); bias ``(features,)``.
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
    precision: Any = None
    kernel_init: Initializer = initializers.default_kernel_init
    bias_init: Initializer = initializers.zeros_init()
    transpose_kernel: bool = False

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the transposed convolution."""
        kernel_size = _canonicalize_tuple(self.kernel_size)
        nd = len(kernel_size)
        unbatched = inputs.ndim == nd + 1
        if unbatched:
            inputs = jnp.expand_dims(inputs, 0)
        strides = tuple(self.strides) if self.strides is not None else (1,) * nd
        in_features = jnp.shape(inputs)[-1]
        kernel_shape = kernel_size + (
            (self.features, in_features)
            if self.transpose_kernel
            else (in_features, self.features)
        )
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (
            self.param("bias", self.bias_init, (self.features,), self.param_dtype)
            if self.use_bias
            else None
        )
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        padding = self.padding
        if padding == "CIRCULAR":
            raise NotImplementedError(
                "ConvTranspose: CIRCULAR padding is not supported in lens yet; use SAME/VALID or explicit pairs."
            )
        y = lax.conv_transpose(
            inputs,
            kernel,
            strides,
            _conv_padding(padding, nd),
            rhs_dilation=self.kernel_dilation,
            transpose_kernel=self.transpose_kernel,
            precision=self.precision,
        )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if unbatched:
            y = jnp.squeeze(y, axis=0)
        return y


class Embed(Module):
    """An embedding table: integer ids -> vectors; ``attend`` for tied output layers.

    Attributes:
      num_embeddings: the vocabulary size.
      features: the embedding size; the table ``embedding`` is
        ``(num_embeddings, features)``.
    """

    num_embeddings: int
    features: int
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    embedding_init: Initializer = initializers.default_embed_init

    def setup(self) -> None:
        """Creates the ``embedding`` table."""
        self.embedding = self.param(
            "embedding",
            self.embedding_init,
            (self.num_embeddings, self.features),
            self.param_dtype,
        )

    def __call__(self, inputs: Array) -> Array:
        """Looks up the embeddings of integer ``inputs``."""
        if not jnp.issubdtype(jnp.asarray(inputs).dtype, jnp.integer):
            raise ValueError(
                f"Embed: inputs must be integer ids, got dtype {jnp.asarray(inputs).dtype}."
            )
        (embedding,) = promote_dtype(self.embedding, dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.where(
                jnp.broadcast_to(inputs[..., None], inputs.shape + (self.features,))
                == 0,
                embedding,
                jnp.nan,
            )
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Array) -> Array:
        """``query @ embedding.T``: logits over the vocabulary (weight tying)."""
        query, embedding = promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, embedding.T)
