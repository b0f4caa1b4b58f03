"""Linear layers: Dense, DenseGeneral, Einsum and Embed (convolutions: ``_conv``).

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

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax
from opt_einsum.parser import parse_einsum_input

from lens._facades import show_at_flax_paths
from lens._kernels import linear as ops
from lens._kernels.dtypes import merge_param, promote_dtype
from lens.core import meta as _meta
from lens.core.nn import initializers
from lens.core.nn.initializers import default_embed_init, default_kernel_init
from lens.nn._hyperparameters import SIZE, SIZES
from lens.nn._module import Module
from lens.nn._module_support import compact
from lens.typing import (
    Array,
    DotGeneralT,
    Dtype,
    Initializer,
    PrecisionLike,
    PromoteDtypeFn,
)

__all__ = [
    "Dense",
    "DenseGeneral",
    "Einsum",
    "Embed",
    "default_embed_init",
    "default_kernel_init",
]


# ------------------------------------------------------------------------- dense


@dataclasses.dataclass(frozen=True)
class _FlatInit:
    """DenseGeneral's initializer wrapper: calls ``init`` with the flattened shape
    (``(batch * in, batch * out)`` for a kernel, ``(batch * out,)`` for a bias, as
    Flax does, so the same key gives the same values) and reshapes the result.

    A value, not a closure made per call: two layers with the same initializer and
    rank split compare equal, so the expected-shape check of a stored parameter
    (``lens.core._variable.expected_shapes``, an ``eval_shape`` per parameter per
    apply) is traced once per (wrapper, shape), not once per layer per trace.
    """

    init: Any
    n_batch: int
    n_axis: int | None  # None: the bias, whose flat shape has no input axes
    n_feat: int

    def __call__(self, rng: Any, shape: tuple, dtype: Any = jnp.float32) -> Array:
        n_batch, n_feat = self.n_batch, self.n_feat
        if self.n_axis is None:
            flat: tuple[int, ...] = (
                int(np.prod(shape[:n_batch]) * np.prod(shape[-n_feat:])),
            )
        else:
            flat = (
                int(
                    np.prod(shape[:n_batch])
                    * np.prod(shape[n_batch : n_batch + self.n_axis])
                ),
                int(np.prod(shape[-n_feat:])),
            )
        k = self.init(rng, flat, dtype)
        if isinstance(k, _meta.AxisMetadata):
            # The box's names describe the final shape: reshape the raw value
            # (unboxing would constrain the flat value to them).
            return _meta.replace_boxed(k, jnp.reshape(_meta.raw_value(k), shape))
        return jnp.reshape(k, shape)


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

    _hyperparameters = {"features": SIZES}

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
        features = ops.canonicalize_tuple(self.features)
        axis = ops.normalize_axes(ops.canonicalize_tuple(self.axis), inputs.ndim)
        batch_dims = ops.canonicalize_tuple(self.batch_dims)
        if batch_dims:  # as given, before negative dims are normalised (Flax's rule)
            max_dim = np.max(batch_dims)
            if set(batch_dims) != set(range(max_dim + 1)):
                raise ValueError(
                    f"batch_dims {str(batch_dims)} must be consecutive leading "
                    "dimensions starting from 0.\nDenseGeneral: list them from 0, "
                    "e.g. batch_dims=(0,) or (0, 1); negative dims are not batch "
                    "dims."
                )
        batch_dims = ops.normalize_axes(batch_dims, inputs.ndim)
        n_batch, n_axis, n_feat = len(batch_dims), len(axis), len(features)
        batch_shape = tuple(inputs.shape[a] for a in batch_dims)
        kernel_shape = batch_shape + tuple(inputs.shape[a] for a in axis) + features

        kernel_init = _FlatInit(self.kernel_init, n_batch, n_axis, n_feat)
        kernel = self.param("kernel", kernel_init, kernel_shape, self.param_dtype)
        bias = None
        if self.use_bias:
            bias_init = _FlatInit(self.bias_init, n_batch, None, n_feat)
            bias = self.param(
                "bias", bias_init, batch_shape + features, self.param_dtype
            )
        dot_general = ops.pick_op(
            self, "dot_general", "dot_general_cls", lax.dot_general
        )
        if dot_general is lax.dot_general and self.promote_dtype is promote_dtype:
            return ops.dense_general_jit(
                inputs,
                kernel,
                bias,
                axis=axis,
                batch_dims=batch_dims,
                dtype=self.dtype,
                precision=ops.static(self.precision),
            )
        return ops.dense_general(
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

    _hyperparameters = {"features": SIZE}

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
        dot_general = ops.pick_op(
            self, "dot_general", "dot_general_cls", lax.dot_general
        )
        if dot_general is lax.dot_general and self.promote_dtype is promote_dtype:
            return ops.dense_jit(
                inputs,
                kernel,
                bias,
                self.dtype,
                ops.static(self.precision),
            )
        return ops.dense(
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

    _hyperparameters = {"shape": SIZES}

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

    _hyperparameters = {"num_embeddings": SIZE, "features": SIZE}

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

        An id outside ``[0, num_embeddings)`` gives NaNs (``jnp.take``'s fill),
        except with ``num_embeddings=1``, whose one row every id gets (as Flax).
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
            # As Flax (and lens.nnx.Embed): the one row for every id.
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Array) -> Array:
        """``query @ embedding.T``: logits over the vocabulary (weight tying)."""
        query, embedding = self.promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, embedding.T)


show_at_flax_paths(__name__)
