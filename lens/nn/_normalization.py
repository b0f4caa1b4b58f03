"""Normalization layers: LayerNorm, RMSNorm, BatchNorm, GroupNorm, InstanceNorm,
and the weight wrappers SpectralNorm and WeightNorm.

Parameter and variable names (``scale``, ``bias``; ``batch_stats`` ``mean``/``var``)
follow Flax Linen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from lens.core.nn import initializers
from lens.nn._dtypes import canonicalize_dtype, merge_param
from lens.nn._module import Module
from lens.nn._module_support import compact

Array = Any
Dtype = Any
Initializer = Callable[..., Array]
Axes = int | Sequence[int]


def _axes(axes: Axes, ndim: int) -> tuple[int, ...]:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted(a % ndim for a in axes))


def _abs_sq(x: Array) -> Array:
    """``|x|^2`` elementwise (real for complex ``x``)."""
    if jnp.iscomplexobj(x):
        return lax.square(lax.real(x)) + lax.square(lax.imag(x))
    return lax.square(x)


def _stats_dtype(x: Array, dtype: Any, force_float32_reductions: bool) -> Any:
    """The dtype statistics are computed in: ``dtype`` (or x's), at least float32."""
    dtype = jnp.result_type(x) if dtype is None else dtype
    if force_float32_reductions:
        dtype = jnp.promote_types(dtype, jnp.float32)
    return jnp.dtype(dtype)


def _stats(
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
    x = jnp.asarray(x, stats_dtype)
    if mask is not None:
        mask = jnp.asarray(mask, bool)

    def pmean(v: Any) -> Any:
        if axis_name is None:
            return v
        return lax.pmean(v, axis_name, axis_index_groups=axis_index_groups)

    if not use_mean:
        mean2 = pmean(jnp.mean(_abs_sq(x), axes, keepdims=keepdims, where=mask))
        return jnp.zeros_like(mean2), mean2
    if fast_variance:
        mean, mean2 = pmean(
            (
                jnp.mean(x, axes, keepdims=keepdims, where=mask),
                jnp.mean(_abs_sq(x), axes, keepdims=keepdims, where=mask),
            )
        )
        return mean, jnp.maximum(0.0, mean2 - _abs_sq(mean))
    mean = pmean(jnp.mean(x, axes, keepdims=True, where=mask))
    var = pmean(jnp.mean(_abs_sq(x - mean), axes, keepdims=keepdims, where=mask))
    return (mean if keepdims else jnp.squeeze(mean, axes)), var


def _norm_params(
    mdl: Module,
    x: Array,
    feature_axes: tuple[int, ...],
    param_dtype: Any,
    use_bias: bool,
    use_scale: bool,
    bias_init: Initializer,
    scale_init: Initializer,
) -> tuple[Array | None, Array | None]:
    """The ``scale`` and ``bias`` params, shaped like the feature axes of ``x``."""
    shape = tuple(x.shape[a] for a in feature_axes)
    scale = mdl.param("scale", scale_init, shape, param_dtype) if use_scale else None
    bias = mdl.param("bias", bias_init, shape, param_dtype) if use_bias else None
    return scale, bias


def _normalize(
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


def _layer_norm(
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
    mean, var = _stats(
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
    return _normalize(
        x, mean, var, scale, bias, reduction, feature_axes, dtype, epsilon, params_dtype
    )


def _group_norm(
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
    gmask = mask.reshape(g.shape) if mask is not None else None
    mean, var = _stats(
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
    return _normalize(
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
_DT = ("dtype", "stats_dtype", "params_dtype")
_STATIC = ("reduction", "feature_axes", "use_mean", "epsilon", "fast_variance") + _DT
_layer_norm_jit = jax.jit(_layer_norm, static_argnames=_STATIC)
_group_norm_jit = jax.jit(
    _group_norm,
    static_argnames=("num_groups", "reduction", "epsilon", "fast_variance") + _DT,
)
_normalize_jit = jax.jit(
    _normalize,
    static_argnames=("reduction", "feature_axes", "dtype", "epsilon", "params_dtype"),
)


def _param_cast(force_float32_reductions: bool, param_dtype: Any) -> Any:
    """The dtype scale and bias are cast to (None: left as stored)."""
    return None if force_float32_reductions else jnp.dtype(param_dtype)


class LayerNorm(Module):
    """Layer normalization (https://arxiv.org/abs/1607.06450).

    Normalizes each example over ``reduction_axes`` (mean 0, variance 1), then
    scales and shifts by ``scale`` and ``bias`` of the ``feature_axes`` shape.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (2, 5))
        >>> y, variables = LayerNorm().init_with_output(jax.random.key(1), x)
        >>> jax.tree_util.tree_map(jnp.shape, variables)
        {'params': {'bias': (5,), 'scale': (5,)}}

    Attributes:
      epsilon: a small float added to the variance to avoid dividing by zero.
      dtype: the dtype of the result (default: infer from input and params).
      param_dtype: the dtype passed to parameter initializers (default: float32).
      use_bias: if True, add ``bias``.
      use_scale: if True, multiply by ``scale``.
      bias_init, scale_init: initializers of ``bias`` (zeros) and ``scale`` (ones).
      reduction_axes: axes the statistics are computed over.
      feature_axes: axes with a separate scale and bias.
      axis_name: a mapped axis (``pmap``/``shard_map``/``vmap``) to average over.
      axis_index_groups: groups of indices of that axis to average within.
      use_fast_variance: ``E[x^2] - E[x]^2`` in one pass (else two passes).
      force_float32_reductions: compute statistics in at least float32.
    """

    epsilon: float = 1e-6
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    reduction_axes: Axes = -1
    feature_axes: Axes = -1
    axis_name: str | None = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        """Normalizes ``x`` (``mask``: positions that count in the statistics)."""
        feature_axes = _axes(self.feature_axes, x.ndim)
        scale, bias = _norm_params(
            self,
            x,
            feature_axes,
            self.param_dtype,
            self.use_bias,
            self.use_scale,
            self.bias_init,
            self.scale_init,
        )
        return _call_layer_norm(
            x,
            scale,
            bias,
            mask,
            _axes(self.reduction_axes, x.ndim),
            feature_axes,
            True,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            _stats_dtype(x, self.dtype, self.force_float32_reductions),
            _param_cast(self.force_float32_reductions, self.param_dtype),
            self.axis_name,
            self.axis_index_groups,
        )


class RMSNorm(Module):
    """RMS layer normalization (https://arxiv.org/abs/1910.07467).

    Divides by the root mean square over ``reduction_axes`` (no mean is
    subtracted, no bias), then multiplies by ``scale``.

    Attributes: as :class:`LayerNorm` (without ``use_bias``/``bias_init``).
    """

    epsilon: float = 1e-6
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_scale: bool = True
    scale_init: Initializer = initializers.ones
    reduction_axes: Axes = -1
    feature_axes: Axes = -1
    axis_name: str | None = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        """Normalizes ``x`` by its root mean square."""
        feature_axes = _axes(self.feature_axes, x.ndim)
        scale, _ = _norm_params(
            self,
            x,
            feature_axes,
            self.param_dtype,
            False,
            self.use_scale,
            initializers.zeros,
            self.scale_init,
        )
        return _call_layer_norm(
            x,
            scale,
            None,
            mask,
            _axes(self.reduction_axes, x.ndim),
            feature_axes,
            False,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            _stats_dtype(x, self.dtype, self.force_float32_reductions),
            _param_cast(self.force_float32_reductions, self.param_dtype),
            self.axis_name,
            self.axis_index_groups,
        )


class BatchNorm(Module):
    """Batch normalization, with running averages in ``batch_stats``.

    ``use_running_average`` (attribute or call argument) selects the stored
    statistics (inference) or the batch's (training: the averages are updated,
    so ``batch_stats`` must be mutable). While initializing, the averages are not
    updated and ``axis_name`` is not used.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> x = jnp.arange(6.0).reshape(3, 2)
        >>> bn = BatchNorm(use_running_average=False)
        >>> variables = bn.init(jax.random.key(0), x)
        >>> y, updates = bn.apply(variables, x, mutable=["batch_stats"])
        >>> updates["batch_stats"]["mean"]
        Array([0.02, 0.03], dtype=float32)

    Attributes:
      use_running_average: use the stored statistics instead of the batch's.
      axis: the feature axis (or axes).
      momentum: decay of the running averages.
      epsilon, dtype, param_dtype, use_bias, use_scale, bias_init, scale_init,
        axis_name, axis_index_groups, use_fast_variance,
        force_float32_reductions: as in :class:`LayerNorm`; without
        ``force_float32_reductions`` the running averages are ``param_dtype``.
    """

    use_running_average: bool | None = None
    axis: int = -1
    momentum: float = 0.99
    epsilon: float = 1e-5
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    axis_name: str | None = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(
        self,
        x: Array,
        use_running_average: bool | None = None,
        *,
        mask: Array | None = None,
    ) -> Array:
        """Normalizes ``x`` over every axis but ``axis``."""
        use_ra = merge_param(
            "use_running_average", self.use_running_average, use_running_average
        )
        feature_axes = _axes(self.axis, x.ndim)
        reduction = tuple(i for i in range(x.ndim) if i not in feature_axes)
        feature_shape = tuple(x.shape[a] for a in feature_axes)
        force32 = self.force_float32_reductions
        stats_param_dtype = jnp.float32 if force32 else self.param_dtype
        ra_mean = self.variable(
            "batch_stats",
            "mean",
            lambda s: jnp.zeros(s, stats_param_dtype),
            feature_shape,
        )
        ra_var = self.variable(
            "batch_stats",
            "var",
            lambda s: jnp.ones(s, stats_param_dtype),
            feature_shape,
        )
        if use_ra:
            mean, var = ra_mean.value, ra_var.value
            if not force32:
                mean = jnp.asarray(mean, self.param_dtype)
                var = jnp.asarray(var, self.param_dtype)
        else:
            # Like Flax: no cross-device mean while initializing, so init works even
            # where the axis is not bound (e.g. the lifting seed's StatefulMLP).
            axis_name = None if self.is_initializing() else self.axis_name
            mean, var = _stats(
                x,
                reduction,
                True,
                axis_name,
                self.axis_index_groups,
                mask,
                True,
                self.use_fast_variance,
                _stats_dtype(x, self.dtype, force32),
            )
            if not self.is_initializing():
                # raises if batch_stats is immutable, like Flax
                m, v = mean.reshape(feature_shape), var.reshape(feature_shape)
                ra_mean.value = self.momentum * ra_mean.value + (1 - self.momentum) * m
                ra_var.value = self.momentum * ra_var.value + (1 - self.momentum) * v
        scale, bias = _norm_params(
            self,
            x,
            feature_axes,
            self.param_dtype,
            self.use_bias,
            self.use_scale,
            self.bias_init,
            self.scale_init,
        )
        return _normalize_jit(
            x,
            mean,
            var,
            scale,
            bias,
            reduction=reduction,
            feature_axes=feature_axes,
            dtype=self.dtype,
            epsilon=self.epsilon,
            params_dtype=_param_cast(force32, self.param_dtype),
        )


class GroupNorm(Module):
    """Group normalization (https://arxiv.org/abs/1803.08494).

    The channels (last axis) are split into ``num_groups`` groups (or groups of
    ``group_size``); each group of each example is normalized on its own.

    Attributes:
      num_groups: the number of groups (pass None to use ``group_size``).
      group_size: channels per group (exactly one of the two is given).
      reduction_axes: axes the statistics are computed over; must include the
        last (default: every axis but the first).
      other attributes: as :class:`LayerNorm`.
    """

    num_groups: int | None = 32
    group_size: int | None = None
    epsilon: float = 1e-6
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    reduction_axes: Axes | None = None
    axis_name: str | None = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        """Normalizes ``x`` per group of channels."""
        if self.reduction_axes is not None:
            reduction = _axes(self.reduction_axes, x.ndim)
        else:
            reduction = tuple(range(1, x.ndim))
        if reduction[-1] != x.ndim - 1:
            raise ValueError(
                "The reduction axes must include the final dimension as this is "
                f"assumed to be the feature axis.\nGot reduction_axes="
                f"{self.reduction_axes} for an input of rank {x.ndim}."
            )
        if (self.num_groups is None) == (self.group_size is None):
            raise ValueError(
                "Either `num_groups` or `group_size` should be specified. If "
                "`group_size` is to be specified, pass `num_groups=None` as argument "
                "to override the default `num_groups` value of 32."
            )
        channels = x.shape[-1]
        num_groups: int
        if self.group_size is not None:
            if channels % self.group_size:
                raise ValueError(
                    f"Number of channels ({channels}) is not multiple of the group "
                    f"size ({self.group_size})."
                )
            num_groups = channels // self.group_size
        else:
            assert self.num_groups is not None  # exactly one is set (checked above)
            num_groups = self.num_groups
        if num_groups <= 0 or channels % num_groups:
            raise ValueError(
                f"Number of groups ({num_groups}) does not divide the number of "
                f"channels ({channels})."
            )
        if mask is not None:
            mask = jnp.reshape(
                mask, mask.shape[:-1] + (num_groups, channels // num_groups)
            )
        scale, bias = _norm_params(
            self,
            x,
            (x.ndim - 1,),
            self.param_dtype,
            self.use_bias,
            self.use_scale,
            self.bias_init,
            self.scale_init,
        )
        kw: dict[str, Any] = dict(
            num_groups=num_groups,
            reduction=reduction,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.use_fast_variance,
            stats_dtype=_stats_dtype(x, self.dtype, self.force_float32_reductions),
            params_dtype=_param_cast(self.force_float32_reductions, self.param_dtype),
        )
        if self.axis_name is None:
            return _group_norm_jit(x, scale, bias, mask, **kw)
        return _group_norm(
            x,
            scale,
            bias,
            mask,
            **kw,
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
        )


class InstanceNorm(Module):
    """Instance normalization (https://arxiv.org/abs/1607.08022v3).

    Each channel of each example is normalized on its own: the statistics are
    over every axis but the batch (leading) axis and ``feature_axes``. Same as
    ``LayerNorm(reduction_axes=<those axes>, feature_axes=feature_axes)``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4, 5))
        >>> variables = InstanceNorm().init(jax.random.key(1), x)
        >>> jax.tree_util.tree_map(jnp.shape, variables)
        {'params': {'bias': (5,), 'scale': (5,)}}

    Attributes:
      feature_axes: axes with separate scale and bias (not the leading axis).
      other attributes: as :class:`LayerNorm`.
    """

    epsilon: float = 1e-6
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    feature_axes: Axes = -1
    axis_name: str | None = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        """Normalizes ``x`` per example and channel."""
        feature_axes = _axes(self.feature_axes, x.ndim)
        if 0 in feature_axes:
            raise ValueError(
                "The channel axes cannot include the leading dimension as this is "
                "assumed to be the batch axis.\nGive feature_axes without axis 0 "
                f"(got {self.feature_axes})."
            )
        reduction = tuple(i for i in range(1, x.ndim) if i not in feature_axes)
        scale, bias = _norm_params(
            self,
            x,
            feature_axes,
            self.param_dtype,
            self.use_bias,
            self.use_scale,
            self.bias_init,
            self.scale_init,
        )
        return _call_layer_norm(
            x,
            scale,
            bias,
            mask,
            reduction,
            feature_axes,
            True,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            _stats_dtype(x, self.dtype, self.force_float32_reductions),
            _param_cast(self.force_float32_reductions, self.param_dtype),
            self.axis_name,
            self.axis_index_groups,
        )


def _l2_normalize(x: Array, axis: Any = None, eps: float = 1e-12) -> Array:
    """``x / ||x||`` along ``axis`` (all axes for None), stable near 0."""
    return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


def _key_name(entry: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


class SpectralNorm(Module):
    """Spectral normalization of a wrapped layer's weights (arXiv:1802.05957).

    Each weight of ``layer_instance`` (ndim >= 2; higher ranks are flattened to
    ``(-1, last)``) is divided by its largest singular value, estimated by
    ``n_steps`` of power iteration. The iteration's vector ``u`` and ``sigma``
    live in ``collection_name`` (default ``batch_stats``) under
    ``'<layer>/<path>/u'`` and ``'<layer>/<path>/sigma'``; pass
    ``update_stats=True`` (with that collection mutable) while training.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> class Foo(nn.Module):
        ...     @nn.compact
        ...     def __call__(self, x, train):
        ...         return nn.SpectralNorm(nn.Dense(4))(x, update_stats=train)
        >>> v = Foo().init(jax.random.key(0), jnp.ones((1, 2)), train=False)
        >>> jax.tree_util.tree_map(jnp.shape, v["batch_stats"])
        {'SpectralNorm_0': {'Dense_0/kernel/sigma': (), 'Dense_0/kernel/u': (1, 4)}}

    Attributes:
      layer_instance: the wrapped module.
      n_steps: power-iteration steps per call.
      epsilon: added in the l2-normalization to avoid dividing by zero.
      dtype: the dtype of the normalized weights (default: inferred).
      param_dtype: the dtype of ``u`` and ``sigma``.
      error_on_non_matrix: raise for weights of rank > 2 instead of flattening.
      collection_name: the collection of ``u`` and ``sigma``.
    """

    layer_instance: Module
    n_steps: int = 1
    epsilon: float = 1e-12
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    error_on_non_matrix: bool = False
    collection_name: str = "batch_stats"

    @compact
    def __call__(self, *args: Any, update_stats: bool, **kwargs: Any) -> Any:
        """Calls the wrapped layer with spectrally normalized weights."""
        from lens.nn._transforms import map_variables

        def forward(layer: Module) -> Any:
            return layer(*args, **kwargs)

        def normalize_all(vs: Any) -> Any:
            return jax.tree_util.tree_map_with_path(
                lambda path, v: self._spectral_normalize(path, v, update_stats), vs
            )

        return map_variables(
            forward,
            trans_in_fn=normalize_all,
            init=self.is_initializing(),
            mutable=True,
        )(self.layer_instance)

    def _spectral_normalize(self, path: Any, vs: Any, update_stats: bool) -> Array:
        value = jnp.asarray(vs)
        value_shape = value.shape
        if value.ndim <= 1 or self.n_steps < 1:
            return value
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(
                    f"Input is {value.ndim}D but error_on_non_matrix is True\n"
                    f"Variable {'/'.join(_key_name(k) for k in path)} of "
                    f"{self.layer_instance.name} has shape {value_shape}."
                )
            value = jnp.reshape(value, (-1, value.shape[-1]))
        prefix = f"{self.layer_instance.name}/" + "/".join(
            _key_name(k) for k in path[1:]
        )
        u_name, sigma_name = prefix + "/u", prefix + "/sigma"
        # The rng is drawn only when u is created (as in Flax).
        rng = (
            self.make_rng("params")
            if not self.has_variable(self.collection_name, u_name)
            else None
        )
        u_var = self.variable(
            self.collection_name,
            u_name,
            jax.random.normal,
            rng,
            (1, value.shape[-1]),
            self.param_dtype,
        )
        sigma_var = self.variable(
            self.collection_name, sigma_name, jnp.ones, (), self.param_dtype
        )
        u0 = v0 = u_var.value  # n_steps >= 1 (checked above): both are set below
        for _ in range(self.n_steps):
            v0 = _l2_normalize(
                jnp.matmul(u0, value.transpose([1, 0])), eps=self.epsilon
            )
            u0 = _l2_normalize(jnp.matmul(v0, value), eps=self.epsilon)
        u0 = lax.stop_gradient(u0)
        v0 = lax.stop_gradient(v0)
        sigma = jnp.matmul(jnp.matmul(v0, value), jnp.transpose(u0))[0, 0]
        value /= jnp.where(sigma != 0, sigma, 1)
        if update_stats:
            u_var.value = u0
            sigma_var.value = sigma
        dtype = canonicalize_dtype(vs, u0, v0, sigma, dtype=self.dtype)
        return jnp.asarray(value.reshape(value_shape), dtype)


class WeightNorm(Module):
    """L2 weight normalization of a wrapped layer (https://arxiv.org/abs/1602.07868).

    Each selected weight of ``layer_instance`` is divided by its l2-norm over the
    non-feature axes and (``use_scale``) multiplied by a learned ``scale`` of the
    ``feature_axes`` shape, a param named ``'<layer>/<path>/scale'``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> class Foo(nn.Module):
        ...     @nn.compact
        ...     def __call__(self, x):
        ...         return nn.WeightNorm(nn.Dense(4))(x)
        >>> v = Foo().init(jax.random.key(0), jnp.ones((1, 2)))
        >>> jax.tree_util.tree_map(jnp.shape, v["params"]["WeightNorm_0"])
        {'Dense_0/kernel/scale': (4,)}

    Attributes:
      layer_instance: the wrapped module.
      epsilon: added in the l2-normalization to avoid dividing by zero.
      dtype: the dtype of the normalized weights (default: inferred).
      param_dtype: the dtype of ``scale``.
      use_scale: learn a ``scale`` per feature.
      scale_init: initializer of ``scale`` (ones).
      feature_axes: axes with their own norm and scale (None: one norm).
      variable_filter: normalize only variables whose ``'/'``-joined path
        contains one of these strings (default ``{'kernel'}``; None: all).
    """

    layer_instance: Module
    epsilon: float = 1e-12
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    use_scale: bool = True
    scale_init: Initializer = initializers.ones
    feature_axes: Axes | None = -1
    variable_filter: Iterable[str] | None = dataclasses.field(
        default_factory=lambda: {"kernel"}
    )

    @compact
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the wrapped layer with l2-normalized weights."""
        from lens.nn._transforms import map_variables

        def forward(layer: Module) -> Any:
            return layer(*args, **kwargs)

        return map_variables(
            forward,
            trans_in_fn=lambda vs: jax.tree_util.tree_map_with_path(
                self._l2_normalize, vs
            ),
            init=self.is_initializing(),
        )(self.layer_instance)

    def _l2_normalize(self, path: Any, vs: Any) -> Array:
        value = jnp.asarray(vs)
        str_path = f"{self.layer_instance.name}/" + "/".join(
            _key_name(k) for k in path[1:]
        )
        if self.variable_filter and not any(
            f in str_path for f in self.variable_filter
        ):
            return value
        if self.feature_axes is None:
            feature_axes: tuple[int, ...] = ()
            reduction = tuple(range(value.ndim))
        else:
            feature_axes = _axes(self.feature_axes, value.ndim)
            reduction = tuple(i for i in range(value.ndim) if i not in feature_axes)
        feature_shape = [1] * value.ndim
        reduced_shape = []
        for a in feature_axes:
            feature_shape[a] = value.shape[a]
            reduced_shape.append(value.shape[a])
        value_bar = _l2_normalize(value, axis=reduction, eps=self.epsilon)
        args = [vs]
        if self.use_scale:
            scale = self.param(
                str_path + "/scale", self.scale_init, reduced_shape, self.param_dtype
            ).reshape(feature_shape)
            value_bar *= scale
            args.append(scale)
        return jnp.asarray(value_bar, canonicalize_dtype(*args, dtype=self.dtype))


def _call_layer_norm(
    x: Array,
    scale: Array | None,
    bias: Array | None,
    mask: Array | None,
    reduction: tuple[int, ...],
    feature_axes: tuple[int, ...],
    use_mean: bool,
    epsilon: float,
    dtype: Any,
    fast_variance: bool,
    stats_dtype: Any,
    params_dtype: Any,
    axis_name: str | None,
    axis_index_groups: Any,
) -> Array:
    kw: dict[str, Any] = dict(
        reduction=reduction,
        feature_axes=feature_axes,
        use_mean=use_mean,
        epsilon=epsilon,
        dtype=dtype,
        fast_variance=fast_variance,
        stats_dtype=stats_dtype,
        params_dtype=params_dtype,
    )
    if axis_name is None:
        return _layer_norm_jit(x, scale, bias, mask, **kw)
    return _layer_norm(
        x,
        scale,
        bias,
        mask,
        **kw,
        axis_name=axis_name,
        axis_index_groups=axis_index_groups,
    )
