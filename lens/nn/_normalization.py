"""Normalization layers: LayerNorm, RMSNorm, BatchNorm, GroupNorm, InstanceNorm
(the weight wrappers SpectralNorm and WeightNorm are in ``_weight_norms``).

Parameter and variable names (``scale``, ``bias``; ``batch_stats`` ``mean``/``var``)
follow Flax Linen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._facades import show_at_flax_paths
from lens._kernels import norm
from lens._kernels.dtypes import merge_param
from lens.core.nn import initializers
from lens.nn._hyperparameters import NON_NEGATIVE, RATE
from lens.nn._module import Module
from lens.nn._module_support import compact

Array = Any
Dtype = Any
Initializer = Callable[..., Array]
Axes = int | Sequence[int]


def _array(x: Any) -> Any:
    """``x`` as an array, failing as Flax's statistics do on what is not one: a
    nested list in ``jnp.result_type`` (TypeError), ``None`` in ``jnp.asarray``."""
    if isinstance(x, jax.Array | np.ndarray):
        return x
    jnp.result_type(x)
    return jnp.asarray(x)


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
    mdl: Module,
    x: Array,
    mean: Array,
    var: Array,
    reduction_axes: Axes,
    feature_axes: Axes,
    dtype: Dtype | None,
    param_dtype: Dtype,
    epsilon: float,
    use_bias: bool,
    use_scale: bool,
    bias_init: Initializer,
    scale_init: Initializer,
    force_float32_reductions: bool = True,
) -> Array:
    """``x`` normalized by ``mean`` and ``var`` (reduced over ``reduction_axes``),
    times a ``scale`` and plus a ``bias`` param that ``mdl`` holds, one per entry of
    the feature axes: Flax's ``_normalize``, which projects import (with
    ``_compute_stats``) to write their own norm layers in Linen."""
    reduction = norm.canonicalize_axes(x.ndim, reduction_axes)
    features = norm.canonicalize_axes(x.ndim, feature_axes)
    scale, bias = _norm_params(
        mdl, x, features, param_dtype, use_bias, use_scale, bias_init, scale_init
    )
    params_dtype = None if force_float32_reductions else param_dtype
    return norm.normalize(
        x, mean, var, scale, bias, reduction, features, dtype, epsilon, params_dtype
    )


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

    _hyperparameters = {"epsilon": NON_NEGATIVE}

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
        x = _array(x)
        feature_axes = norm.axes(self.feature_axes, x.ndim)
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
        spec = norm.LayerNormSpec(
            reduction=norm.axes(self.reduction_axes, x.ndim),
            feature_axes=feature_axes,
            use_mean=True,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.use_fast_variance,
            stats_dtype=norm.stats_dtype(x, self.dtype, self.force_float32_reductions),
            params_dtype=norm.param_cast(
                self.force_float32_reductions, self.param_dtype
            ),
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
        )
        return norm.apply_layer_norm(x, scale, bias, mask, spec)


class RMSNorm(Module):
    """RMS layer normalization (https://arxiv.org/abs/1910.07467).

    Divides by the root mean square over ``reduction_axes`` (no mean is
    subtracted, no bias), then multiplies by ``scale``.

    Attributes: as :class:`LayerNorm` (without ``use_bias``/``bias_init``).
    """

    _hyperparameters = {"epsilon": NON_NEGATIVE}

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
        x = _array(x)
        feature_axes = norm.axes(self.feature_axes, x.ndim)
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
        spec = norm.LayerNormSpec(
            reduction=norm.axes(self.reduction_axes, x.ndim),
            feature_axes=feature_axes,
            use_mean=False,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.use_fast_variance,
            stats_dtype=norm.stats_dtype(x, self.dtype, self.force_float32_reductions),
            params_dtype=norm.param_cast(
                self.force_float32_reductions, self.param_dtype
            ),
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
        )
        return norm.apply_layer_norm(x, scale, None, mask, spec)


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

    _hyperparameters = {"momentum": RATE, "epsilon": NON_NEGATIVE}

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
        feature_axes = norm.axes(self.axis, x.ndim)
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
            mean, var = norm.stats(
                x,
                reduction,
                True,
                axis_name,
                self.axis_index_groups,
                mask,
                True,
                self.use_fast_variance,
                norm.stats_dtype(x, self.dtype, force32),
            )
            if not self.is_initializing():
                # raises if batch_stats is immutable, like Flax
                m, v = mean.reshape(feature_shape), var.reshape(feature_shape)
                ra_mean.value = norm.running_average(ra_mean.value, m, self.momentum)
                ra_var.value = norm.running_average(ra_var.value, v, self.momentum)
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
        return norm.normalize_jit(
            x,
            mean,
            var,
            scale,
            bias,
            reduction=reduction,
            feature_axes=feature_axes,
            dtype=self.dtype,
            epsilon=self.epsilon,
            params_dtype=norm.param_cast(force32, self.param_dtype),
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

    # num_groups and group_size are checked at the call, against the channels,
    # in Flax's words and order
    _hyperparameters = {"epsilon": NON_NEGATIVE}

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
            reduction = norm.axes(self.reduction_axes, x.ndim)
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
        if not isinstance(num_groups, int):  # Flax asserts it
            raise AssertionError(
                f"GroupNorm: num_groups={num_groups!r} is not an int.\nGive a "
                "number of groups that divides the channels, e.g. num_groups=32."
            )
        if num_groups <= 0 or channels % num_groups:
            divides = max(
                g for g in range(1, min(channels, 32) + 1) if channels % g == 0
            )
            raise ValueError(
                f"Number of groups ({num_groups}) does not divide the number of "
                f"channels ({channels}).\nGroupNorm at /{'/'.join(self.path)}: "
                f"give a num_groups that divides {channels}, e.g. "
                f"num_groups={divides}, or group_size=... with num_groups=None."
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
            stats_dtype=norm.stats_dtype(x, self.dtype, self.force_float32_reductions),
            params_dtype=norm.param_cast(
                self.force_float32_reductions, self.param_dtype
            ),
        )
        if self.axis_name is None:
            return norm.group_norm_jit(x, scale, bias, mask, **kw)
        return norm.group_norm(
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

    _hyperparameters = {"epsilon": NON_NEGATIVE}

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
        feature_axes = norm.axes(self.feature_axes, x.ndim)
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
        spec = norm.LayerNormSpec(
            reduction=reduction,
            feature_axes=feature_axes,
            use_mean=True,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.use_fast_variance,
            stats_dtype=norm.stats_dtype(x, self.dtype, self.force_float32_reductions),
            params_dtype=norm.param_cast(
                self.force_float32_reductions, self.param_dtype
            ),
            axis_name=self.axis_name,
            axis_index_groups=self.axis_index_groups,
        )
        return norm.apply_layer_norm(x, scale, bias, mask, spec)


show_at_flax_paths(__name__)
