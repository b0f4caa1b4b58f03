"""Normalization arithmetic shared by lens.nn's and lens.nnx's norm layers: statistics
(mean and variance over the reduction axes, with Flax's dtype rules and fast variance),
normalizing with scale and bias, and each as one jitted function.

Where every array is float32 (or every one float64) with a static shape, the
arithmetic is written with ``lax`` directly: the same primitives ``jnp`` would emit
(a sum and a division for a mean, size-1 axes broadcast by the primitives
themselves), so the same floats, traced ~3x faster. ``jnp``'s dispatch (argument
checks, dtype promotion, a nested jit per mean) was most of a BatchNorm's trace,
which every train step pays on its first call and after ``jax.clear_caches()``.
Anything else (mixed dtypes, half precision, a mask, symbolic shapes) takes the
``jnp`` path.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer

from lens._hot_jit import hot_jit
from lens._kernels.dtypes import canonicalize_dtype

Array = Any
Axes = int | Sequence[int]


def axes(axes: Axes, ndim: int) -> tuple[int, ...]:
    """``axes`` of an array of rank ``ndim``, non-negative and sorted.

    Raises:
      numpy.exceptions.AxisError: (an IndexError and a ValueError) for an axis
        past either end, which would otherwise wrap around to another axis.
    """
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
    return tuple(sorted(a % ndim for a in axes))


def canonicalize_axes(rank: int, axes: Axes) -> tuple[int, ...]:
    """``axes`` of an array of rank ``rank``, non-negative, each once, sorted.

    Flax's ``_canonicalize_axes`` (projects import it from
    ``flax.linen.normalization``); :func:`axes` also checks the range.
    """
    axes = tuple(axes) if isinstance(axes, Iterable) else (axes,)
    return tuple(sorted({rank + a if a < 0 else a for a in axes}))


def abs_sq(x: Array) -> Array:
    """``|x|^2`` elementwise (real for complex ``x``)."""
    if jnp.iscomplexobj(x):
        return lax.square(lax.real(x)) + lax.square(lax.imag(x))
    return lax.square(x)


# the dtypes whose jnp arithmetic lens writes with lax in a trace
LEAN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def lean_dtype(*arrays: Array) -> np.dtype | None:
    """The one dtype of ``arrays`` (None entries skipped) when it is float32 or
    float64 and every shape is static: where ``lax`` can do ``jnp``'s work."""
    found = None
    for a in arrays:
        if a is None:
            continue
        dtype, shape = getattr(a, "dtype", None), getattr(a, "shape", None)
        if dtype is None or shape is None or (found is not None and dtype != found):
            return None
        if not all(type(d) is int for d in shape):
            return None
        if getattr(getattr(a, "aval", None), "weak_type", False):
            return None  # (jnp would make it strong: the result's type would differ)
        found = dtype
    return found if found in LEAN_DTYPES else None


def _mean(x: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    """``jnp.mean(x, axes, keepdims=keepdims)`` of a :func:`lean_dtype` array:
    the same sum and division by the count."""
    total = lax.reduce(x, np.array(0, x.dtype), lax.add, axes)
    if keepdims:
        total = lax.expand_dims(total, axes)
    return lax.div(total, np.array(math.prod(x.shape[a] for a in axes), x.dtype))


def stats_dtype(x: Array, dtype: Any, force_float32_reductions: bool) -> Any:
    """The dtype statistics are computed in: ``dtype`` (or x's), at least float32."""
    dtype = jnp.result_type(x) if dtype is None else dtype
    if force_float32_reductions:
        dtype = jnp.promote_types(dtype, jnp.float32)
    return jnp.dtype(dtype)


def stats(
    x: Array,
    axes: tuple[int, ...],
    use_mean: bool,
    axis_name: str | None,
    axis_index_groups: Any = None,
    mask: Array | None = None,
    keepdims: bool = True,
    fast_variance: bool = True,
    stats_dtype: Any = jnp.float32,
) -> tuple[Array, Array]:
    """Mean and variance over ``axes``, in ``stats_dtype``.

    The fast variance is ``E[|x|^2] - |E[x]|^2`` (one pass, both means reduced
    together across devices); otherwise ``E[|x - E[x]|^2]``, like Flax's
    ``use_fast_variance=False``. Negative round-off variances are clipped to 0.

    With ``keepdims`` (the default) the statistics broadcast against ``x`` without a
    reshape: a reshape between the reduction and its uses stops XLA from fusing
    them, which made a 4-block transformer compile ~1.7x slower.
    """

    def pmean(v: Any) -> Any:
        if axis_name is None:
            return v
        return lax.pmean(v, axis_name, axis_index_groups=axis_index_groups)

    # (eagerly, jnp.mean is one dispatch of a compiled program: lax would be three)
    if mask is None and isinstance(x, Tracer) and lean_dtype(x) == stats_dtype:
        return _lean_stats(x, axes, use_mean, keepdims, fast_variance, pmean)
    x = jnp.asarray(x, stats_dtype)
    if mask is not None:
        mask = jnp.asarray(mask, bool)

    if not use_mean:
        mean2 = pmean(jnp.mean(abs_sq(x), axes, keepdims=keepdims, where=mask))
        return jnp.zeros_like(mean2), mean2
    if fast_variance:
        mean, mean2 = pmean(
            (
                jnp.mean(x, axes, keepdims=keepdims, where=mask),
                jnp.mean(abs_sq(x), axes, keepdims=keepdims, where=mask),
            )
        )
        return mean, jnp.maximum(0.0, mean2 - abs_sq(mean))
    mean = pmean(jnp.mean(x, axes, keepdims=True, where=mask))
    var = pmean(jnp.mean(abs_sq(x - mean), axes, keepdims=keepdims, where=mask))
    return (mean if keepdims else jnp.squeeze(mean, axes)), var


def _lean_stats(
    x: Array,
    axes: tuple[int, ...],
    use_mean: bool,
    keepdims: bool,
    fast_variance: bool,
    pmean: Callable[[Any], Any],
) -> tuple[Array, Array]:
    """:func:`stats` of a real :func:`lean_dtype` ``x`` without a mask, in ``lax``."""
    zero = np.array(0, x.dtype)
    if not use_mean:
        mean2 = pmean(_mean(lax.square(x), axes, keepdims))
        return lax.full_like(mean2, 0), mean2
    if fast_variance:
        mean, mean2 = pmean(
            (_mean(x, axes, keepdims), _mean(lax.square(x), axes, keepdims))
        )
        return mean, lax.max(zero, lax.sub(mean2, lax.square(mean)))
    mean = pmean(_mean(x, axes, True))
    var = pmean(_mean(lax.square(lax.sub(x, mean)), axes, keepdims))
    return (mean if keepdims else lax.squeeze(mean, axes)), var


def running_average(average: Array, stat: Array, momentum: Any) -> Array:
    """``momentum * average + (1 - momentum) * stat``: BatchNorm's running statistics
    (in ``lax`` for a Python float ``momentum`` and one :func:`lean_dtype`)."""
    if (
        type(momentum) is float
        and lean_dtype(average, stat) is not None
        and average.shape == stat.shape
    ):
        dtype = average.dtype
        return lax.add(
            lax.mul(np.array(momentum, dtype), average),
            lax.mul(np.array(1 - momentum, dtype), stat),
        )
    return momentum * average + (1 - momentum) * stat


def compute_stats(
    x: Array,
    axes: Axes,
    dtype: Any,
    axis_name: str | None = None,
    axis_index_groups: Any = None,
    use_mean: bool = True,
    use_fast_variance: bool = True,
    mask: Array | None = None,
    force_float32_reductions: bool = True,
) -> tuple[Array, Array]:
    """Mean and variance of ``x`` over ``axes`` (dropped from their shape), in
    ``dtype`` promoted to at least float32 unless ``force_float32_reductions`` is
    off: Flax's ``_compute_stats``, which projects import to write their own norms.
    """
    return stats(
        x,
        canonicalize_axes(jnp.ndim(x), axes),
        use_mean,
        axis_name,
        axis_index_groups,
        mask,
        keepdims=False,
        fast_variance=use_fast_variance,
        stats_dtype=stats_dtype(x, dtype, force_float32_reductions),
    )


def l2_normalize(x: Array, axis: Any = None, eps: float = 1e-12) -> Array:
    """``x / ||x||`` along ``axis`` (all axes for None), stable near 0."""
    return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


def normalize(
    x: Array,
    mean: Array,
    var: Array,
    scale: Array | None,
    bias: Array | None,
    reduction: tuple[int, ...],
    feature_axes: tuple[int, ...],
    dtype: Any,
    epsilon: float,
    params_dtype: Any = None,
) -> Array:
    """``(x - mean) * rsqrt(var + epsilon) * scale + bias`` in the promoted dtype.

    ``params_dtype`` (with ``force_float32_reductions=False``) casts scale and bias.
    """
    if mean.ndim != x.ndim:  # feature-shaped statistics (BatchNorm's running averages)
        stats_shape = list(x.shape)
        for a in reduction:
            stats_shape[a] = 1
        mean = mean.reshape(stats_shape)
        var = var.reshape(stats_shape)
    feature_shape = [1] * x.ndim
    for a in feature_axes:
        feature_shape[a] = x.shape[a]
    size = math.prod(feature_shape)
    if (
        params_dtype is None
        and lean_dtype(x, mean, var, scale, bias) is not None
        and all(p is None or p.size == size for p in (scale, bias))
    ):  # (lax.reshape leaves a wrong size to lowering: jnp's error names it)
        return _lean_normalize(x, mean, var, scale, bias, feature_shape, dtype, epsilon)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if scale is not None:
        s = scale.reshape(feature_shape)
        if params_dtype is not None:
            s = jnp.asarray(s, params_dtype)
        mul *= s
        args.append(s)
    y *= mul
    if bias is not None:
        bias = bias.reshape(feature_shape)
        if params_dtype is not None:
            bias = jnp.asarray(bias, params_dtype)
        y += bias
        args.append(bias)
    return jnp.asarray(y, canonicalize_dtype(*args, dtype=dtype))


def _lean_normalize(
    x: Array,
    mean: Array,
    var: Array,
    scale: Array | None,
    bias: Array | None,
    feature_shape: list[int],
    dtype: Any,
    epsilon: float,
) -> Array:
    """:func:`normalize`'s arithmetic in ``lax`` (every array one :func:`lean_dtype`)."""
    y = lax.sub(x, mean)
    mul = lax.rsqrt(lax.add(var, np.array(epsilon, var.dtype)))
    if scale is not None:
        mul = lax.mul(mul, lax.reshape(scale, feature_shape))
    y = lax.mul(y, mul)
    if bias is not None:
        y = lax.add(y, lax.reshape(bias, feature_shape))
    # as jnp.asarray(y, dtype): a no-op unless the dtype (or a weak type) changes
    out = y.dtype if dtype is None else canonicalize_dtype(dtype=dtype)
    return lax.convert_element_type(y, out)


def layer_norm(
    x: Array,
    scale: Array | None,
    bias: Array | None,
    mask: Array | None,
    *,
    reduction: tuple[int, ...],
    feature_axes: tuple[int, ...],
    use_mean: bool,
    epsilon: float,
    dtype: Any,
    fast_variance: bool,
    stats_dtype: Any,
    params_dtype: Any,
    axis_name: str | None = None,
    axis_index_groups: Any = None,
) -> Array:
    """LayerNorm, RMSNorm (``use_mean=False``) and InstanceNorm given their params."""
    mean, var = stats(
        x,
        reduction,
        use_mean,
        axis_name,
        axis_index_groups,
        mask,
        True,
        fast_variance,
        stats_dtype,
    )
    return normalize(
        x, mean, var, scale, bias, reduction, feature_axes, dtype, epsilon, params_dtype
    )


def group_norm(
    x: Array,
    scale: Array | None,
    bias: Array | None,
    mask: Array | None,
    *,
    num_groups: int,
    reduction: tuple[int, ...],
    epsilon: float,
    dtype: Any,
    fast_variance: bool,
    stats_dtype: Any,
    params_dtype: Any,
    axis_name: str | None = None,
    axis_index_groups: Any = None,
) -> Array:
    """GroupNorm given its params: statistics per group of channels."""
    group_size = x.shape[-1] // num_groups
    g = x.reshape(x.shape[:-1] + (num_groups, group_size))
    g_red = tuple(a if a < x.ndim - 1 else a + 1 for a in reduction if a != x.ndim - 1)
    g_red += (g.ndim - 1,)
    # a mask broadcastable to x (one per channel, say) is spread to every group
    gmask = (
        jnp.broadcast_to(jnp.asarray(mask, bool), x.shape).reshape(g.shape)
        if mask is not None
        else None
    )
    mean, var = stats(
        g,
        g_red,
        True,
        axis_name,
        axis_index_groups,
        gmask,
        False,
        fast_variance,
        stats_dtype,
    )
    mean = jnp.repeat(mean, group_size, axis=-1)
    var = jnp.repeat(var, group_size, axis=-1)
    return normalize(
        x,
        mean,
        var,
        scale,
        bias,
        reduction[:-1],
        (x.ndim - 1,),
        dtype,
        epsilon,
        params_dtype,
    )


# Each layer's arithmetic as one jitted function: traced once per shape, so every
# further layer of that shape (a deep stack, a re-run cell, a fresh train step) and
# its derivatives come from JAX's caches, and un-jitted calls run one executable
# instead of a dozen dispatches. Collectives over ``axis_name`` stay un-jitted.
DT = ("dtype", "stats_dtype", "params_dtype")
STATIC = ("reduction", "feature_axes", "use_mean", "epsilon", "fast_variance") + DT
layer_norm_jit = hot_jit(layer_norm, static_argnames=STATIC)
group_norm_jit = hot_jit(
    group_norm,
    static_argnames=("num_groups", "reduction", "epsilon", "fast_variance") + DT,
)
normalize_jit = hot_jit(
    normalize,
    static_argnames=("reduction", "feature_axes", "dtype", "epsilon", "params_dtype"),
)


def param_cast(force_float32_reductions: bool, param_dtype: Any) -> Any:
    """The dtype scale and bias are cast to (None: left as stored)."""
    return None if force_float32_reductions else jnp.dtype(param_dtype)


@dataclasses.dataclass(frozen=True)
class LayerNormSpec:
    """How LayerNorm, RMSNorm and InstanceNorm normalize: everything but the arrays.

    Attributes:
      reduction: the axes the statistics are taken over (non-negative).
      feature_axes: the axes scale and bias have (non-negative).
      use_mean: subtract the mean (LayerNorm, InstanceNorm); False for RMSNorm.
      epsilon: added to the variance.
      dtype: the output dtype (None: from the inputs).
      fast_variance: ``E[x^2] - E[x]^2`` instead of ``E[(x - E[x])^2]``.
      stats_dtype: the dtype the statistics are computed in (see
        :func:`stats_dtype`).
      params_dtype: the dtype scale and bias are cast to (see :func:`param_cast`).
      axis_name, axis_index_groups: take the statistics across devices too
        (``lax.pmean`` over ``axis_name``).
    """

    reduction: tuple[int, ...]
    feature_axes: tuple[int, ...]
    use_mean: bool
    epsilon: float
    dtype: Any
    fast_variance: bool
    stats_dtype: Any
    params_dtype: Any
    axis_name: str | None = None
    axis_index_groups: Any = None

    def static_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`layer_norm` that ``jax.jit`` keeps static."""
        return dict(
            reduction=self.reduction,
            feature_axes=self.feature_axes,
            use_mean=self.use_mean,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.fast_variance,
            stats_dtype=self.stats_dtype,
            params_dtype=self.params_dtype,
        )


def apply_layer_norm(
    x: Array,
    scale: Array | None,
    bias: Array | None,
    mask: Array | None,
    spec: LayerNormSpec,
) -> Array:
    """LayerNorm, RMSNorm or InstanceNorm of ``x`` as ``spec`` says.

    Jitted (traced once per shape and spec) unless the statistics are taken across
    devices (``spec.axis_name``), where the collective must run in the caller's
    trace.
    """
    if spec.axis_name is None:
        return layer_norm_jit(x, scale, bias, mask, **spec.static_kwargs())
    return layer_norm(
        x,
        scale,
        bias,
        mask,
        **spec.static_kwargs(),
        axis_name=spec.axis_name,
        axis_index_groups=spec.axis_index_groups,
    )
