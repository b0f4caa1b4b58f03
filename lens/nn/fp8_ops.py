"""FP8 matmuls with delayed scaling (``lens.nn.fp8_ops``, like ``flax.linen.fp8_ops``).

A ``Dense``/``DenseGeneral``/``Einsum`` given ``dot_general_cls=nn.Fp8DotGeneral``
(or an ``Fp8Einsum``) quantizes its input and kernel to ``float8_e4m3`` and the
output gradient to ``float8_e5m2``. Each tensor's scale comes from a history of
its absolute maxima (delayed scaling, as in NVIDIA's Transformer Engine): the
scale used at step ``t`` is computed from the maxima of earlier steps.

The scales and histories are variables in the ``_overwrite_with_gradient``
collection. Their "gradient" is their updated value: a training step replaces
them by their gradient instead of applying the optimizer (see
``lens.training.train_state``).

Within one step a variable used several times (a layer under ``scan``) gets
several updates; to combine them by maximum instead of sum, the variables may be
cast to :data:`fp32_max_grad`, a float32 whose autodiff accumulation is ``max``.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

from jax import lax, random
from jax import numpy as jnp
from jax.typing import DTypeLike

from lens._kernels.fp8 import CAN_USE_EARRAY as CAN_USE_EARRAY
from lens._kernels.fp8 import Fp8MetaTyRules as Fp8MetaTyRules
from lens._kernels.fp8 import _parse_dot_inputs as _parse_dot_inputs
from lens._kernels.fp8 import compute_amax_history as compute_amax_history
from lens._kernels.fp8 import compute_scale as compute_scale
from lens._kernels.fp8 import dequantize as dequantize
from lens._kernels.fp8 import dot_general_transpose_lhs as dot_general_transpose_lhs
from lens._kernels.fp8 import dot_general_transpose_rhs as dot_general_transpose_rhs
from lens._kernels.fp8 import dot_general_with_precision as dot_general_with_precision
from lens._kernels.fp8 import (
    dot_general_with_precision_jvp as dot_general_with_precision_jvp,
)
from lens._kernels.fp8 import fm32 as fm32
from lens._kernels.fp8 import fp8_meta_dtype as fp8_meta_dtype
from lens._kernels.fp8 import fp8_meta_dtype_wrapper as fp8_meta_dtype_wrapper
from lens._kernels.fp8 import fp8_scaled_dot_general as fp8_scaled_dot_general
from lens._kernels.fp8 import fp32_max_grad as fp32_max_grad
from lens._kernels.fp8 import get_fp8_max as get_fp8_max
from lens._kernels.fp8 import in_q as in_q
from lens._kernels.fp8 import in_q_bwd as in_q_bwd
from lens._kernels.fp8 import in_q_fwd as in_q_fwd
from lens._kernels.fp8 import in_qdq as in_qdq
from lens._kernels.fp8 import in_qdq_bwd as in_qdq_bwd
from lens._kernels.fp8 import in_qdq_fwd as in_qdq_fwd
from lens._kernels.fp8 import out_dq as out_dq
from lens._kernels.fp8 import out_dq_bwd as out_dq_bwd
from lens._kernels.fp8 import out_dq_fwd as out_dq_fwd
from lens._kernels.fp8 import out_qdq as out_qdq
from lens._kernels.fp8 import out_qdq_bwd as out_qdq_bwd
from lens._kernels.fp8 import out_qdq_fwd as out_qdq_fwd
from lens._kernels.fp8 import qdq as qdq
from lens._kernels.fp8 import quantize as quantize
from lens._kernels.fp8 import quantize_dequantize_update as quantize_dequantize_update
from lens._kernels.fp8 import quantized_dot as quantized_dot
from lens._kernels.fp8 import quantized_dot_bwd as quantized_dot_bwd
from lens._kernels.fp8 import quantized_dot_fwd as quantized_dot_fwd
from lens._kernels.fp8 import update_fp8_meta as update_fp8_meta
from lens.core.nn import initializers
from lens.nn._module import Module

DType = Any

OVERWRITE_WITH_GRADIENT = "_overwrite_with_gradient"
"""The collection of FP8 scales and amax histories (replaced by their gradient)."""

__all__ = [
    "CAN_USE_EARRAY",
    "OVERWRITE_WITH_GRADIENT",
    "Fp8DirectDotGeneralOp",
    "Fp8DotGeneral",
    "Fp8DotGeneralBase",
    "Fp8DotGeneralOp",
    "Fp8Einsum",
    "NANOOFp8DotGeneralOp",
    "compute_amax_history",
    "compute_scale",
    "dequantize",
    "dot_general_with_precision",
    "fm32",
    "fp32_max_grad",
    "fp8_scaled_dot_general",
    "get_fp8_max",
    "in_q",
    "in_qdq",
    "out_dq",
    "out_qdq",
    "qdq",
    "quantize",
    "quantize_dequantize_update",
    "quantized_dot",
    "update_fp8_meta",
]


class Fp8DotGeneralBase(Module):
    """The FP8 meta variables: scales (``(1,)``, ones) and amax histories (zeros).

    Attributes:
      amax_history_length: how many steps of maxima the scales look back.
      e4m3_dtype: the FP8 type of inputs and kernels.
      e5m2_dtype: the FP8 type of output gradients.
    """

    amax_history_length: int = 1024
    e4m3_dtype: DType = jnp.float8_e4m3fn
    e5m2_dtype: DType = jnp.float8_e5m2

    def setup(self) -> None:
        # Fixed keys: these initializers are deterministic (ones, zeros).
        scale_args = (initializers.ones_init(), random.PRNGKey(0), (1,), jnp.float32)
        hist_args = (
            initializers.zeros_init(),
            random.PRNGKey(0),
            (self.amax_history_length,),
            jnp.float32,
        )
        col = OVERWRITE_WITH_GRADIENT
        self.input_amax_history = self.variable(col, "input_amax_history", *hist_args)
        self.kernel_amax_history = self.variable(col, "kernel_amax_history", *hist_args)
        self.output_grad_amax_history = self.variable(
            col, "output_grad_amax_history", *hist_args
        )
        self.input_scale = self.variable(col, "input_scale", *scale_args)
        self.kernel_scale = self.variable(col, "kernel_scale", *scale_args)
        self.output_grad_scale = self.variable(col, "output_grad_scale", *scale_args)


class Fp8DotGeneralOp(Fp8DotGeneralBase):
    """FP8 by quantize-dequantize around a high-precision matmul (deprecated in Flax)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if type(self) is Fp8DotGeneralOp:
            warnings.warn(
                "The Fp8DotGeneralOp is deprecated. Use Fp8DirectDotGeneralOp or "
                "Fp8Einsum instead.",
                DeprecationWarning,
                stacklevel=2,
            )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``dot_general(lhs, rhs, dimension_numbers)`` with FP8 rounding."""
        x, k, dimension_numbers, comp_dtype = _parse_dot_inputs(*args, **kwargs)
        x_qdq = in_qdq(
            comp_dtype,
            self.e4m3_dtype,
            x,
            self.input_scale.value,
            self.input_amax_history.value,
        )
        k_qdq = in_qdq(
            comp_dtype,
            self.e4m3_dtype,
            k,
            self.kernel_scale.value,
            self.kernel_amax_history.value,
        )
        y = dot_general_with_precision(x_qdq, k_qdq, dimension_numbers)
        return out_qdq(
            comp_dtype,
            self.e5m2_dtype,
            y,
            self.output_grad_scale.value,
            self.output_grad_amax_history.value,
        )


class Fp8DirectDotGeneralOp(Fp8DotGeneralBase):
    """FP8 by a matmul on FP8 operands (:func:`fp8_scaled_dot_general`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``dot_general(lhs, rhs, dimension_numbers)`` on FP8 operands."""
        x, k, dimension_numbers, comp_dtype = _parse_dot_inputs(*args, **kwargs)
        return fp8_scaled_dot_general(
            x,
            k,
            dimension_numbers,
            precision=None,
            preferred_element_type=x.dtype,
            lhs_scale=self.input_scale.value,
            rhs_scale=self.kernel_scale.value,
            grad_scale=self.output_grad_scale.value,
            lhs_amax_history=self.input_amax_history.value,
            rhs_amax_history=self.kernel_amax_history.value,
            grad_amax_history=self.output_grad_amax_history.value,
            quantize_compute_type=comp_dtype,
        )


class NANOOFp8DotGeneralOp(Fp8DotGeneralOp):
    """:class:`Fp8DotGeneralOp` with the ``fnuz`` FP8 types (AMD hardware)."""

    e4m3_dtype: DType = jnp.float8_e4m3fnuz
    e5m2_dtype: DType = jnp.float8_e5m2fnuz


class Fp8Einsum(Fp8DotGeneralBase):
    """An einsum whose contraction is :func:`fp8_scaled_dot_general`.

    Pass the class as ``nn.Einsum``'s or attention's einsum factory.
    """

    def __call__(
        self,
        eqn: str,
        lhs: Any,
        rhs: Any,
        precision: lax.Precision | None = None,
        preferred_element_type: DTypeLike | None = None,
    ) -> Any:
        """``jnp.einsum(eqn, lhs, rhs)`` in FP8 (lhs cast to rhs's dtype)."""
        compute_dtype = rhs.dtype
        lhs = lhs.astype(compute_dtype)
        dot_general = partial(
            fp8_scaled_dot_general,
            lhs_scale=self.input_scale.value,
            rhs_scale=self.kernel_scale.value,
            grad_scale=self.output_grad_scale.value,
            lhs_amax_history=self.input_amax_history.value,
            rhs_amax_history=self.kernel_amax_history.value,
            grad_amax_history=self.output_grad_amax_history.value,
            quantize_compute_type=compute_dtype,
        )
        return jnp.einsum(
            eqn,
            lhs,
            rhs,
            precision=precision,
            preferred_element_type=preferred_element_type,
            _dot_general=dot_general,
        )


Fp8DotGeneral = Fp8DirectDotGeneralOp
"""The recommended FP8 ``dot_general_cls``."""
