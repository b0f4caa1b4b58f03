"""FP8 arithmetic behind ``lens.nn.fp8_ops``: the max-accumulating float32, the fp8
meta dtype, quantize/dequantize with delayed scaling, and the custom-gradient dot
products. Pure functions of arrays (no modules); ``lens.nn.fp8_ops`` re-exports them
under Flax's names and adds the layers.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from functools import partial
from typing import Any, cast

import numpy as np
from jax import custom_jvp, custom_vjp, lax
from jax import numpy as jnp
from jax._src import core, dtypes
from jax.typing import DTypeLike

try:  # the array type of extended dtypes outside jit (JAX internals)
    from jax._src import earray as _earray
    from jax._src.interpreters import pxla as _pxla

    del _earray, _pxla
    CAN_USE_EARRAY = True
except (ModuleNotFoundError, ImportError):  # pragma: no cover - older JAX
    CAN_USE_EARRAY = False


DType = Any


# ------------------------------------------------------ max-accumulating float32


class Fp8MetaTyRules:
    """JAX rules of the ``fp8_meta`` dtypes: a float whose cotangents add by max."""

    @staticmethod
    def physical_element_aval(dtype: Any) -> core.ShapedArray:
        return core.ShapedArray((), dtype.float_dtype)

    @staticmethod
    def convert_from(meta_dtype: Any, other_dtype: Any) -> bool:
        return meta_dtype.float_dtype == other_dtype

    @staticmethod
    def convert_to(other_dtype: Any, meta_dtype: Any) -> bool:
        return meta_dtype.float_dtype == other_dtype

    @staticmethod
    def add(dt: Any, x: Any, y: Any) -> Any:
        to_float = partial(lax.convert_element_type, new_dtype=dt.float_dtype)
        return lax.convert_element_type(lax.max(to_float(x), to_float(y)), dt)

    @staticmethod
    def zero(dt: Any) -> Any:
        low = (
            -np.inf
            if dtypes.supports_inf(dt.float_dtype)
            else dtypes.finfo(dt.float_dtype).min
        )
        return lax.convert_element_type(np.array(low, dt.float_dtype), dt)

    @staticmethod
    def tangent_dtype(dtype: Any) -> Any:
        return dtype

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any) -> Any:
        fill = lax.convert_element_type(fill_value, dtype.float_dtype)
        return lax.convert_element_type(lax.full(shape, fill, dtype.float_dtype), dtype)

    @staticmethod
    def global_sharded_result_handler(
        aval: Any, out_sharding: Any, committed: Any
    ) -> Any:
        if not CAN_USE_EARRAY:
            raise NotImplementedError(
                "fp8_meta arrays cannot leave jit with this JAX version: convert them "
                "to float32 inside the jitted function."
            )
        from jax._src import earray
        from jax._src.interpreters import pxla

        phys_aval = core.physical_aval(aval)
        handler = pxla.global_result_handlers[core.ShapedArray](
            phys_aval, out_sharding, committed
        )
        return lambda bufs: earray.EArray(aval, handler(bufs))


class fp8_meta_dtype(dtypes.extended):  # noqa: N801 - Flax's name
    """The scalar type of the ``fp8_meta`` dtypes."""


@dataclasses.dataclass(frozen=True)
class fp8_meta_dtype_wrapper(dtypes.ExtendedDType):  # noqa: N801 - Flax's name
    """A float dtype whose autodiff accumulation is ``max`` (``fp8_meta32``)."""

    float_dtype: Any
    _rules: type = Fp8MetaTyRules
    type: type = fp8_meta_dtype  # pyright: ignore[reportIncompatibleMethodOverride] - a field, as ExtendedDType subclasses in JAX declare it

    def __repr__(self) -> str:
        return f"fp8_meta{dtypes.finfo(self.float_dtype).bits}"

    name = property(__repr__)


fm32 = fp8_meta_dtype_wrapper(jnp.float32)
fp32_max_grad = fp8_meta_dtype_wrapper(jnp.float32)


def _to_f32(value: Any) -> Any:
    """A ``fp8_meta`` value as float32 (other values unchanged)."""
    if value.dtype == fm32:
        return lax.convert_element_type(value, jnp.float32)
    return value


# --------------------------------------------------------------- quantization


def get_fp8_max(fp8_dtype: Any, out_dtype: Any) -> Any:
    """The largest finite value of ``fp8_dtype``, as ``out_dtype``."""
    assert fp8_dtype in (
        jnp.float8_e4m3fn,
        jnp.float8_e5m2,
        jnp.float8_e4m3fnuz,
        jnp.float8_e5m2fnuz,
    ), f"not an FP8 dtype: {fp8_dtype}"
    return jnp.finfo(fp8_dtype).max.astype(out_dtype)


def quantize(x: Any, q_dtype: Any, scale: Any, compute_dtype: Any) -> Any:
    """``x / scale``, clipped to ``q_dtype``'s range and cast to it."""
    top = get_fp8_max(q_dtype, compute_dtype)
    scaled = x / jnp.broadcast_to(scale.astype(compute_dtype), x.shape)
    return jnp.clip(scaled, -top, top).astype(q_dtype)


def dequantize(x: Any, dq_dtype: Any, scale: Any) -> Any:
    """``x * scale`` in ``dq_dtype``."""
    return x.astype(dq_dtype) * jnp.broadcast_to(scale.astype(dq_dtype), x.shape)


def qdq(x: Any, q_dtype: Any, scale: Any, compute_dtype: Any) -> Any:
    """Quantize then dequantize: ``x`` rounded to ``q_dtype`` at ``scale``."""
    return dequantize(quantize(x, q_dtype, scale, compute_dtype), x.dtype, scale)


def compute_scale(amax: Any, scale: Any, fp8_max: Any, margin: int = 0) -> Any:
    """The new scale ``amax / fp8_max * 2**margin``; the old one if amax is 0 or inf.

    (Transformer Engine's ``update_fp8_metas``, whose scale is our reciprocal.)
    """
    inv_old = 1.0 / scale
    inv = (fp8_max / amax) / (2**margin)
    inv = jnp.where(amax > 0.0, inv, inv_old)
    inv = jnp.where(jnp.isfinite(amax), inv, inv_old)
    return 1.0 / inv


def compute_amax_history(x: Any, amax_history: Any) -> Any:
    """The history rolled by one, with ``max |x|`` as its first entry."""
    amax = jnp.max(jnp.abs(x)).astype(amax_history.dtype)
    return jnp.roll(amax_history, shift=-1, axis=0).at[0].set(amax)


def update_fp8_meta(x: Any, q_dtype: Any, scale: Any, amax_history: Any) -> Any:
    """``(new scale from the history, history with max |x| added)``.

    ``fp8_meta`` inputs give ``fp32_max_grad`` outputs.
    """
    is_meta = scale.dtype == fm32 and amax_history.dtype == fm32
    if is_meta:
        amax_history = lax.convert_element_type(amax_history, jnp.float32)
        scale = lax.convert_element_type(scale, jnp.float32)
    fp8_max = get_fp8_max(q_dtype, jnp.float32)
    new_scale = compute_scale(jnp.max(amax_history, axis=0), scale, fp8_max)
    new_history = compute_amax_history(x, amax_history)
    if is_meta:
        new_history = lax.convert_element_type(new_history, fp32_max_grad)
        new_scale = lax.convert_element_type(new_scale, fp32_max_grad)
    return new_scale, new_history


def quantize_dequantize_update(
    x: Any, q_dtype: Any, scale: Any, amax_history: Any, compute_dtype: Any
) -> Any:
    """``(qdq(x) at the updated scale, updated scale, updated history)``."""
    new_scale, new_history = update_fp8_meta(x, q_dtype, scale, amax_history)
    return qdq(x, q_dtype, _to_f32(new_scale), compute_dtype), new_scale, new_history


# -------------------------------------------------- dot_general transposes


def _remaining(dims: Any, *removed: Any) -> list[int]:
    gone = set(itertools.chain(*removed))
    return [i for i in dims if i not in gone]


def _consecutive_ranges(*groups: Any) -> Any:
    start = 0
    for g in groups:
        yield range(start, start + len(g))
        start += len(g)


def dot_general_transpose_lhs(
    g: Any,
    x: Any,
    y: Any,
    *,
    dimension_numbers: Any,
    precision: Any,
    preferred_element_type: DTypeLike | None,
    swap_ans: bool = False,
) -> Any:
    """The cotangent of ``x`` in ``dot_general(x, y)`` given the output's ``g``."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(np.ndim(x)), x_contract, x_batch)
    y_kept = _remaining(range(np.ndim(y)), y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _consecutive_ranges(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _consecutive_ranges(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_by_y = list(np.take(x_contract, np.argsort(y_contract)))
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
    product = lax.dot_general(
        g, y, dims, precision=precision, preferred_element_type=preferred_element_type
    )
    return lax.transpose(product, tuple(int(a) for a in out_axes))


def dot_general_transpose_rhs(
    g: Any,
    x: Any,
    y: Any,
    *,
    dimension_numbers: Any,
    precision: Any,
    preferred_element_type: DTypeLike | None,
) -> Any:
    """The cotangent of ``y`` in ``dot_general(x, y)`` given the output's ``g``."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return dot_general_transpose_lhs(
        g,
        y,
        x,
        dimension_numbers=swapped,
        precision=precision,
        preferred_element_type=preferred_element_type,
        swap_ans=True,
    )


# ------------------------------------------- custom-gradient quantization ops
# The "gradient" of a scale or history is its updated value.


@partial(custom_vjp, nondiff_argnums=(0, 1))
def in_qdq(
    compute_dtype: Any, q_dtype: Any, inp: Any, scale: Any, amax_history: Any
) -> Any:
    """``inp`` rounded to ``q_dtype`` (forward); the updated meta as its gradient."""
    return quantize_dequantize_update(inp, q_dtype, scale, amax_history, compute_dtype)[
        0
    ]


def in_qdq_fwd(
    compute_dtype: Any, q_dtype: Any, inp: Any, scale: Any, amax_history: Any
) -> Any:
    q, new_scale, new_hist = quantize_dequantize_update(
        inp, q_dtype, scale, amax_history, compute_dtype
    )
    return q, (new_scale, new_hist)


def in_qdq_bwd(compute_dtype: Any, q_dtype: Any, res: Any, g: Any) -> Any:
    new_scale, new_hist = res
    return g, new_scale, new_hist


in_qdq.defvjp(in_qdq_fwd, in_qdq_bwd)


@partial(custom_vjp, nondiff_argnums=(0, 1))
def out_qdq(
    compute_dtype: Any, q_dtype: Any, out: Any, scale: Any, amax_history: Any
) -> Any:
    """Identity forward; the gradient is rounded to ``q_dtype`` (and meta updated)."""
    return out


def out_qdq_fwd(
    compute_dtype: Any, q_dtype: Any, out: Any, scale: Any, amax_history: Any
) -> Any:
    return out, (scale, amax_history)


def out_qdq_bwd(compute_dtype: Any, q_dtype: Any, res: Any, g: Any) -> Any:
    scale, hist = res
    return quantize_dequantize_update(g, q_dtype, scale, hist, compute_dtype)


out_qdq.defvjp(out_qdq_fwd, out_qdq_bwd)


@partial(custom_vjp, nondiff_argnums=(0, 1))
def in_q(
    compute_dtype: Any, q_dtype: Any, inp: Any, scale: Any, amax_history: Any
) -> tuple[Any, Any]:
    """``(inp quantized to q_dtype, the scale used)``; gradient: the updated meta."""
    new_scale, _ = update_fp8_meta(inp, q_dtype, scale, amax_history)
    return quantize(inp, q_dtype, _to_f32(new_scale), compute_dtype), new_scale


def in_q_fwd(
    compute_dtype: Any, q_dtype: Any, inp: Any, scale: Any, amax_history: Any
) -> Any:
    new_scale, new_hist = update_fp8_meta(inp, q_dtype, scale, amax_history)
    q = quantize(inp, q_dtype, _to_f32(new_scale), compute_dtype)
    return (q, new_scale), (new_scale, new_hist)


def in_q_bwd(compute_dtype: Any, q_dtype: Any, res: Any, _: Any) -> Any:
    new_scale, new_hist = res
    return None, new_scale, new_hist


in_q.defvjp(in_q_fwd, in_q_bwd)


def _in_q(*args: Any) -> tuple[Any, Any]:  # in_q, typed (custom_vjp hides it)
    return cast(tuple[Any, Any], in_q(*args))


@partial(custom_vjp, nondiff_argnums=(0,))
def out_dq(dq_type: Any, lhs_scale: Any, rhs_scale: Any, out: Any) -> Any:
    """``out * lhs_scale * rhs_scale`` in ``dq_type``; the gradient passes to ``out``."""
    return dequantize(out, dq_type, _to_f32(lhs_scale) * _to_f32(rhs_scale))


def out_dq_fwd(dq_type: Any, lhs_scale: Any, rhs_scale: Any, out: Any) -> Any:
    return out_dq(dq_type, lhs_scale, rhs_scale, out), None


def out_dq_bwd(dq_type: Any, _: Any, g: Any) -> Any:
    return None, None, g


out_dq.defvjp(out_dq_fwd, out_dq_bwd)


@partial(custom_vjp, nondiff_argnums=(8, 9))
def quantized_dot(
    lhs: Any,
    q_lhs: Any,
    lhs_scale: Any,
    rhs: Any,
    q_rhs: Any,
    rhs_scale: Any,
    out_grad_scale: Any,
    out_grad_amax_history: Any,
    dimension_numbers: Any,
    preferred_element_type: Any = None,
) -> Any:
    """``dot_general(q_lhs, q_rhs)``; the backward pass is FP8 too (e5m2 gradient)."""
    return lax.dot_general(
        q_lhs,
        q_rhs,
        dimension_numbers,
        preferred_element_type=preferred_element_type,
        precision=lax.Precision.DEFAULT,
    )


def quantized_dot_fwd(
    lhs: Any,
    q_lhs: Any,
    lhs_scale: Any,
    rhs: Any,
    q_rhs: Any,
    rhs_scale: Any,
    out_grad_scale: Any,
    out_grad_amax_history: Any,
    dimension_numbers: Any,
    preferred_element_type: Any,
) -> Any:
    out = lax.dot_general(
        q_lhs,
        q_rhs,
        dimension_numbers,
        preferred_element_type=preferred_element_type,
        precision=lax.Precision.DEFAULT,
    )
    res = (
        lhs,
        q_lhs,
        lhs_scale,
        rhs,
        q_rhs,
        rhs_scale,
        out_grad_scale,
        out_grad_amax_history,
    )
    return out, res


def quantized_dot_bwd(
    dimension_numbers: Any, preferred_element_type: Any, res: Any, g: Any
) -> Any:
    lhs, q_lhs, lhs_scale, rhs, q_rhs, rhs_scale, g_scale, g_hist = res
    new_g_scale, new_g_hist = update_fp8_meta(g, jnp.float8_e5m2, g_scale, g_hist)
    q_g = quantize(g, jnp.float8_e5m2, _to_f32(new_g_scale), preferred_element_type)
    grad_lhs = dot_general_transpose_lhs(
        q_g,
        lhs,
        q_rhs,
        dimension_numbers=dimension_numbers,
        precision=lax.Precision.HIGHEST,
        preferred_element_type=preferred_element_type,
    )
    grad_lhs = dequantize(
        grad_lhs, preferred_element_type, _to_f32(rhs_scale) * _to_f32(new_g_scale)
    )
    grad_rhs = dot_general_transpose_rhs(
        q_g,
        q_lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        precision=lax.Precision.HIGHEST,
        preferred_element_type=preferred_element_type,
    )
    grad_rhs = dequantize(
        grad_rhs, preferred_element_type, _to_f32(lhs_scale) * _to_f32(new_g_scale)
    )
    return grad_lhs, None, None, grad_rhs, None, None, new_g_scale, new_g_hist


quantized_dot.defvjp(quantized_dot_fwd, quantized_dot_bwd)


def fp8_scaled_dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    lhs_scale: Any = None,
    rhs_scale: Any = None,
    grad_scale: Any = None,
    lhs_amax_history: Any = None,
    rhs_amax_history: Any = None,
    grad_amax_history: Any = None,
    quantize_compute_type: Any = jnp.float32,
) -> Any:
    """A ``dot_general`` on FP8 operands (e4m3) with an FP8 (e5m2) backward pass.

    ``precision`` is ignored (with a warning): FP8 matmuls set their own.
    """
    if precision is not None:
        warnings.warn(
            'The function fp8_scaled_dot_general will set the "precision" and '
            'disregard any provided "precision" argument.',
            stacklevel=2,
        )
    q_lhs, new_lhs_scale = _in_q(
        quantize_compute_type, jnp.float8_e4m3fn, lhs, lhs_scale, lhs_amax_history
    )
    q_rhs, new_rhs_scale = _in_q(
        quantize_compute_type, jnp.float8_e4m3fn, rhs, rhs_scale, rhs_amax_history
    )
    y = quantized_dot(
        lhs,
        q_lhs,
        new_lhs_scale,
        rhs,
        q_rhs,
        new_rhs_scale,
        grad_scale,
        grad_amax_history,
        dimension_numbers,
        preferred_element_type,
    )
    return out_dq(
        dq_type=preferred_element_type,
        lhs_scale=new_lhs_scale,
        rhs_scale=new_rhs_scale,
        out=y,
    )


@partial(custom_jvp, nondiff_argnums=(2, 3, 4))
def dot_general_with_precision(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``dot_general`` at DEFAULT precision forward and HIGHEST for derivatives."""
    if precision is not None or preferred_element_type is not None:
        warnings.warn(
            "The function dot_general_with_precision will set the "
            "precision/preferred_element_type and disregard any provided values.",
            stacklevel=2,
        )
    return lax.dot_general(lhs, rhs, dimension_numbers, precision=lax.Precision.DEFAULT)


@dot_general_with_precision.defjvp
def dot_general_with_precision_jvp(
    dimension_numbers: Any,
    precision: Any,
    preferred_element_type: Any,
    primals: Any,
    tangents: Any,
) -> Any:
    lhs, rhs = primals
    lhs_dot, rhs_dot = tangents
    out = lax.dot_general(lhs, rhs, dimension_numbers, precision=lax.Precision.DEFAULT)
    tangent = lax.dot_general(
        lhs_dot, rhs, dimension_numbers, precision=lax.Precision.HIGHEST
    ) + lax.dot_general(
        lhs, rhs_dot, dimension_numbers, precision=lax.Precision.HIGHEST
    )
    return out, tangent


# --------------------------------------------------------------------- modules


def _parse_dot_inputs(*args: Any, **kwargs: Any) -> Any:
    if len(args) != 3:
        raise TypeError(
            "An FP8 dot_general takes (lhs, rhs, dimension_numbers) positionally; "
            f"got {len(args)} positional arguments."
        )
    x, k, dimension_numbers = args
    comp_dtype = k.dtype
    return jnp.asarray(x, comp_dtype), k, dimension_numbers, comp_dtype
