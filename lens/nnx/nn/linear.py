"""Linear layers (flax.nnx's ``nn.linear``): ``Linear``, ``LinearGeneral``,
``Einsum``, ``Conv``, ``ConvTranspose`` and ``Embed``, with flax.nnx's constructors,
variable names and initial values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from opt_einsum import parser as einsum_parser

from lens._frozen_dict import FrozenDict
from lens._kernels import linear as ops
from lens._kernels.linear import canonicalize_padding as canonicalize_padding
from lens.core.nn import initializers
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables.variable import Param
from lens.nnx.nn._conv import Conv as Conv
from lens.nnx.nn._conv import ConvTranspose as ConvTranspose
from lens.nnx.nn._parameters import (
    NO_META,
    as_tuple,
    check_size,
    dot_kwargs,
    init_reshaped,
    make_param,
)
from lens.nnx.nn.dtypes import promote_dtype

# Flax's private helpers, which projects import from flax.nnx.nn.linear
_canonicalize_tuple = ops.canonicalize_tuple
_normalize_axes = ops.normalize_axes
_conv_dimension_numbers = ops.conv_dimension_numbers


class Linear(Module):
    """``inputs @ kernel + bias`` with ``kernel`` of shape ``(in_features, out_features)``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        use_bias: bool = True,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        precision: Any = None,
        kernel_init: Callable[..., Array] = initializers.default_kernel_init,
        bias_init: Callable[..., Array] = initializers.zeros_init(),
        dot_general: Callable[..., Array] = lax.dot_general,
        promote_dtype: Callable[..., Any] = promote_dtype,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        check_size(
            "Linear", "in_features", in_features, "in_features=4, out_features=16"
        )
        check_size("Linear", "out_features", out_features, "4, out_features=16")
        if use_bias != bool(use_bias):  # flax.nnx asserts it at the first call
            raise AssertionError(
                f"Linear: use_bias={use_bias!r} is not a bool.\nBuild the layer "
                "with use_bias=True or use_bias=False."
            )
        self.kernel = make_param(
            kernel_init, rngs, (in_features, out_features), param_dtype, kernel_metadata
        )
        self.bias = (
            make_param(bias_init, rngs, (out_features,), param_dtype, bias_metadata)
            if use_bias
            else None
        )
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
        kernel = self.kernel.value
        bias = self.bias.value if self.bias is not None else None
        if (
            out_sharding is None
            and self.preferred_element_type is None
            and self.dot_general is lax.dot_general
            and self.promote_dtype is promote_dtype
        ):
            return ops.dense_jit(
                inputs, kernel, bias, self.dtype, ops.static(self.precision)
            )
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, bias), dtype=self.dtype
        )
        y = self.dot_general(
            inputs,
            kernel,
            (((inputs.ndim - 1,), (0,)), ((), ())),
            precision=self.precision,
            **dot_kwargs(out_sharding, self.preferred_element_type),
        )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


Array = Any
Axis = int
Size = int


default_kernel_init = initializers.default_kernel_init
default_bias_init = initializers.zeros_init()
default_embed_init = initializers.default_embed_init
_default_kernel_init = default_kernel_init


_zeros = initializers.zeros_init()


_ones = initializers.ones


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
        embedding_init: Callable[..., Array] = default_embed_init,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        embedding_metadata: Mapping[str, Any] = NO_META,
    ):
        self.embedding = make_param(
            embedding_init,
            rngs,
            (num_embeddings, features),
            param_dtype,
            embedding_metadata,
        )
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype or self.embedding.value.dtype  # as flax.nnx
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
        kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        einsum_str = einsum_str.replace(" ", "")
        self._check(einsum_str)
        self.kernel = make_param(
            kernel_init, rngs, kernel_shape, param_dtype, kernel_metadata
        )
        self.bias = (
            make_param(bias_init, rngs, bias_shape, param_dtype, bias_metadata)
            if bias_shape is not None
            else None
        )
        self.einsum_str = einsum_str
        self.kernel_shape = kernel_shape
        self.bias_shape = bias_shape
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type

    @staticmethod
    def _check(einsum_str: str) -> None:
        if "->" not in einsum_str:
            raise ValueError(
                '`einsum_str` equation must be explicit and include "->".\n'
                f"Got {einsum_str!r}: give two operands and the output, e.g. "
                "'btd,dk->btk'."
            )
        if einsum_str.count(",") != 1:
            raise ValueError(
                "`einsum_str` equation must have exactly two operands and "
                "therefore, exactly one comma character, instead of "
                f"{einsum_str.count(',')}\nGot {einsum_str!r}: Einsum contracts "
                "the inputs with its kernel, e.g. 'btd,dk->btk'."
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
        kw = dot_kwargs(out_sharding, self.preferred_element_type)
        y = self.einsum_op(spec, inputs, kernel, precision=self.precision, **kw)
        if bias is not None:
            y = y + jnp.reshape(bias, _bias_shape(spec, inputs, kernel))
        return y


def _bias_shape(spec: str, lhs: Array, rhs: Array) -> list[int]:
    """The bias's shape broadcast against the output: each output axis that comes
    from the kernel keeps the kernel's size, the others are 1 (ellipses expanded)."""
    operands, result, _ = einsum_parser.parse_einsum_input((spec, lhs, rhs))
    kernel_axes = {c: i for i, c in enumerate(operands.split(",")[1])}
    return [rhs.shape[kernel_axes[c]] if c in kernel_axes else 1 for c in result]


class _AxisError(np.exceptions.AxisError, TypeError):
    """An axis past either end of the input: NumPy's AxisError, and the TypeError
    that ``dot_general`` (flax.nnx's LinearGeneral) raises for it."""


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
        kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        self.in_features = as_tuple(in_features)
        self.out_features = as_tuple(out_features)
        self.axis = as_tuple(axis)
        self.batch_axis = FrozenDict(batch_axis)
        if len(self.axis) != len(self.in_features):
            raise ValueError(
                "in_features and axis must have the same length. "
                f"Got {self.in_features} and {self.axis}.\nLinearGeneral: give "
                "one input axis per in_features entry, e.g. in_features=(2, 3), "
                "axis=(-2, -1)."
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
        self.dot_general = dot_general
        self.dot_general_cls = dot_general_cls
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        batch = tuple(self.batch_axis.values())
        n_in = int(np.prod(batch)) * int(np.prod(self.in_features))
        n_out = int(np.prod(self.out_features))
        shape = batch + self.in_features + self.out_features
        self.kernel = Param(
            init_reshaped(
                kernel_init, rngs.params(), (n_in, n_out), shape, param_dtype
            ),
            **dict(kernel_metadata),
        )
        self.bias = None
        if use_bias:
            bshape = batch + self.out_features
            self.bias = Param(
                init_reshaped(
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
        for a in (*self.axis, *self.batch_axis.keys()):  # no wrapping around
            if not -ndim <= a < ndim:
                raise _AxisError(a, ndim, f"LinearGeneral(axis={self.axis})")
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
            **dot_kwargs(out_sharding, self.preferred_element_type),
        )
        if bias is not None:
            y = y + jnp.reshape(bias, expanded_batch + self.out_features)
        return y
