"""Normalization layers (flax.nnx's ``nn.normalization``): ``BatchNorm``,
``LayerNorm``, ``RMSNorm``, ``GroupNorm`` and ``InstanceNorm``; the weight
reparametrizations ``WeightNorm`` and ``SpectralNorm`` live in
``_weight_normalization`` and are re-exported here, as flax.nnx has them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._kernels import norm
from lens.core.nn import initializers
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables.variable import BatchStat
from lens.nnx.nn._parameters import NO_META, make_optional_param, make_param, promoted
from lens.nnx.nn._weight_normalization import SpectralNorm as SpectralNorm
from lens.nnx.nn._weight_normalization import WeightNorm as WeightNorm
from lens.nnx.nn.dtypes import promote_dtype

Array = Any


_NO_USE_RUNNING_AVERAGE = (
    "No `use_running_average` argument was provided to BatchNorm. Consider one of "
    "the following options:\n\n"
    "1. Pass `use_running_average` to the BatchNorm constructor:\n\n"
    "  self.bn = nnx.BatchNorm(..., use_running_average=True/False)\n\n"
    "2. Pass `use_running_average` to the BatchNorm __call__:\n\n"
    "  self.bn(x, use_running_average=True/False)\n\n"
    "3. Use `nnx.view` to create a view of the model with a specific "
    "`use_running_average` value:\n\n"
    "  model_view = nnx.view(model, use_running_average=True/False)\n"
)


def _identity(x: Any) -> Any:
    return x


# Flax's private helpers, which projects import from flax.nnx.nn.normalization to
# write their own norm layers
_canonicalize_axes = norm.canonicalize_axes
_abs_sq = norm.abs_sq
_compute_stats = norm.compute_stats
_l2_normalize = norm.l2_normalize


def _normalize(
    x: Array,
    mean: Array,
    var: Array,
    scale: Array | None,
    bias: Array | None,
    reduction_axes: int | Sequence[int],
    feature_axes: int | Sequence[int],
    dtype: Any,
    epsilon: float,
) -> Array:
    """``(x - mean) * rsqrt(var + epsilon) * scale + bias``, ``scale`` and ``bias``
    shaped like the feature axes (either may be None): Flax's ``_normalize``."""
    reduction = norm.canonicalize_axes(x.ndim, reduction_axes)
    features = norm.canonicalize_axes(x.ndim, feature_axes)
    return norm.normalize(
        x, mean, var, scale, bias, reduction, features, dtype, epsilon
    )


def _spec(
    layer: Any,
    x: Array,
    reduction: tuple[int, ...],
    feature_axes: tuple[int, ...],
    *,
    use_mean: bool,
) -> norm.LayerNormSpec:
    """The kernel's settings for a LayerNorm-like layer (LayerNorm, RMSNorm,
    InstanceNorm)."""
    return norm.LayerNormSpec(
        reduction=reduction,
        feature_axes=feature_axes,
        use_mean=use_mean,
        epsilon=layer.epsilon,
        dtype=layer.dtype,
        fast_variance=layer.use_fast_variance,
        stats_dtype=norm.stats_dtype(x, layer.dtype, True),
        params_dtype=None,
        axis_name=layer.axis_name,
        axis_index_groups=layer.axis_index_groups,
    )


def _array(x: Any) -> Any:
    """``x`` as an array, as flax's default ``promote_dtype`` makes it first (a
    nested list works, ``None`` fails in ``jnp.asarray``)."""
    return x if isinstance(x, jax.Array | np.ndarray) else jnp.asarray(x)


def _axes(ndim: int, axes: int | Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted(set(norm.axes(axes, ndim))))  # AxisError past either end


class LayerNorm(Module):
    """Layer normalisation over ``reduction_axes`` (the last by default), with
    ``scale`` and ``bias`` of shape ``(num_features,)``."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = initializers.zeros,
        scale_init: Callable[..., Array] = initializers.ones,
        reduction_axes: int | Sequence[int] = -1,
        feature_axes: int | Sequence[int] = -1,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = NO_META,
        scale_metadata: Mapping[str, Any] = NO_META,
    ):
        shape = (num_features,)
        self.scale = make_optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        x = _array(x)
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        if self.promote_dtype is not promote_dtype:
            x, scale, bias = self.promote_dtype((x, scale, bias), dtype=self.dtype)
        return norm.apply_layer_norm(
            x,
            scale,
            bias,
            mask,
            _spec(
                self,
                x,
                _axes(x.ndim, self.reduction_axes),
                _axes(x.ndim, self.feature_axes),
                use_mean=True,
            ),
        )


class BatchNorm(Module):
    """Batch normalisation over every axis but ``axis`` (the last); running
    averages in ``mean`` and ``var`` (``BatchStat``)."""

    def __init__(
        self,
        num_features: int,
        *,
        use_running_average: bool | None = False,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-5,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = initializers.zeros,
        scale_init: Callable[..., Array] = initializers.ones,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = NO_META,
        scale_metadata: Mapping[str, Any] = NO_META,
    ):
        shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(shape, jnp.float32))
        self.var = BatchStat(jnp.ones(shape, jnp.float32))
        self.scale = make_optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
        )
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(
        self,
        x: Array,
        use_running_average: bool | None = None,
        *,
        mask: Array | None = None,
    ) -> Array:
        use_ra = (
            self.use_running_average
            if use_running_average is None
            else use_running_average
        )
        if use_ra is None:
            raise ValueError(_NO_USE_RUNNING_AVERAGE)
        feature = _axes(x.ndim, self.axis)
        reduction = tuple(i for i in range(x.ndim) if i not in feature)
        if use_ra:
            mean, var = self.mean.value, self.var.value
        else:
            mean, var = norm.stats(
                x,
                reduction,
                True,
                self.axis_name,
                self.axis_index_groups,
                mask,
                True,
                self.use_fast_variance,
                norm.stats_dtype(x, self.dtype, True),
            )
            m = self.momentum
            # The running statistics carry no gradient (as flax.nnx's): a hijax
            # BatchStat written inside jax.grad would otherwise be a write JAX
            # cannot differentiate.
            stop = (
                jax.lax.stop_gradient
                if self.mean._can_update or self.var._can_update
                else _identity
            )
            self.mean.value = stop(
                norm.running_average(self.mean.value, mean.reshape(-1), m)
            )
            self.var.value = stop(
                norm.running_average(self.var.value, var.reshape(-1), m)
            )
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        if self.promote_dtype is not promote_dtype:
            x, mean, var, scale, bias = self.promote_dtype(
                (x, mean, var, scale, bias), dtype=self.dtype
            )
        return norm.normalize_jit(
            x,
            mean,
            var,
            scale,
            bias,
            reduction=reduction,
            feature_axes=feature,
            dtype=self.dtype,
            epsilon=self.epsilon,
        )

    def set_view(self, use_running_average: bool | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          use_running_average: if True, the stored batch statistics will be
            used instead of computing the batch statistics on the input.
        """
        if use_running_average is not None:
            self.use_running_average = use_running_average


_zeros = initializers.zeros_init()


_ones = initializers.ones


class RMSNorm(Module):
    """Root-mean-square normalisation with a ``scale``."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_scale: bool = True,
        scale_init: Callable[..., Array] = _ones,
        reduction_axes: int | Sequence[int] = -1,
        feature_axes: int | Sequence[int] = -1,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        scale_metadata: Mapping[str, Any] = NO_META,
    ):
        self.scale = (  # first, as flax.nnx's
            make_param(scale_init, rngs, (num_features,), param_dtype, scale_metadata)
            if use_scale
            else None
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Array, mask: Array | None = None) -> Array:
        x = _array(x)
        scale = self.scale.value if self.scale is not None else None
        x, scale = promoted(self.promote_dtype, x, scale, dtype=self.dtype)
        return norm.apply_layer_norm(
            x,
            scale,
            None,
            mask,
            _spec(
                self,
                x,
                _axes(x.ndim, self.reduction_axes),
                _axes(x.ndim, self.feature_axes),
                use_mean=False,
            ),
        )


class GroupNorm(Module):
    """Group normalisation (``num_groups`` groups of channels, or ``group_size``)."""

    def __init__(
        self,
        num_features: int,
        num_groups: int | None = 32,
        group_size: int | None = None,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = _zeros,
        scale_init: Callable[..., Array] = _ones,
        reduction_axes: int | Sequence[int] | None = None,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = NO_META,
        scale_metadata: Mapping[str, Any] = NO_META,
    ):
        if (num_groups is None) == (group_size is None):
            raise ValueError(
                "Either `num_groups` or `group_size` should be specified. If "
                "`group_size` is to be specified, pass `num_groups=None` as argument "
                "to override the default `num_groups` value of 32.\n"
                f"GroupNorm got num_groups={num_groups}, group_size={group_size}."
            )
        if num_groups is None:
            assert group_size is not None  # exactly one was given
            if num_features % group_size:
                raise ValueError(
                    f"Number of features ({num_features}) is not multiple of the "
                    f"group size ({group_size}).\nGroupNorm: give a group_size "
                    f"that divides num_features."
                )
            num_groups = num_features // group_size
        elif (
            not isinstance(num_groups, int)
            or num_groups <= 0
            or num_features % num_groups
        ):
            raise ValueError(
                f"Number of groups ({num_groups}) does not divide the number of "
                f"channels ({num_features}).\nGroupNorm: give a positive "
                "num_groups that divides num_features."
            )
        # flax.nnx's attributes in its order (its repr and vars() show them so)
        self.feature_axis = -1
        self.num_groups = num_groups
        self.group_size = num_features // num_groups
        shape = (num_features,)
        self.scale = make_optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
        )
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    @property
    def num_features(self) -> int:
        """The channels it normalises (``num_groups * group_size``)."""
        return self.num_groups * self.group_size

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        if np.shape(x)[-1:] != (self.num_features,):
            self._wrong_features(x)
        reduction = _axes(
            x.ndim,
            self.reduction_axes
            if self.reduction_axes is not None
            else (*range(1, x.ndim - 1), -1),
        )
        if mask is not None:  # the kernel groups the mask as it groups x
            mask = jnp.broadcast_to(mask, x.shape)
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        x, scale, bias = promoted(self.promote_dtype, x, scale, bias, dtype=self.dtype)
        kernel = norm.group_norm_jit if self.axis_name is None else norm.group_norm
        return kernel(
            x,
            scale,
            bias,
            mask,
            num_groups=self.num_groups,
            reduction=reduction,
            epsilon=self.epsilon,
            dtype=self.dtype,
            fast_variance=self.use_fast_variance,
            stats_dtype=norm.stats_dtype(x, self.dtype, True),
            params_dtype=None,
            **self._collective(),
        )

    def _collective(self) -> dict[str, Any]:
        if self.axis_name is None:
            return {}
        return {
            "axis_name": self.axis_name,
            "axis_index_groups": self.axis_index_groups,
        }

    def _wrong_features(self, x: Array) -> None:
        # flax.nnx reads x.ndim (None fails there), then groups x by
        # num_features: its error is that reshape's
        shape = x.shape if x.ndim else ()
        group_shape = (*shape[:-1], self.num_groups)
        group_shape += (self.num_features // self.num_groups,)
        try:
            jnp.reshape(x, group_shape)
        except TypeError as e:
            has = f"has {shape[-1]} features" if shape else "is a scalar"
            raise TypeError(
                f"{e}\nGroupNorm was built for num_features={self.num_features}, "
                f"but the input {has}: build it with GroupNorm(<features of the "
                "last axis>, num_groups=...), or check the layer before it."
            ) from None


class InstanceNorm(Module):
    """Instance normalisation: each example and feature normalised over the
    remaining (spatial) axes; ``scale``/``bias`` of shape ``(num_features,)``."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = initializers.zeros,
        scale_init: Callable[..., Array] = initializers.ones,
        feature_axes: int | Sequence[int] = -1,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = NO_META,
        scale_metadata: Mapping[str, Any] = NO_META,
    ):
        shape = (num_features,)
        self.scale = make_optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = make_optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        feature_axes = _axes(x.ndim, self.feature_axes)
        if 0 in feature_axes:
            raise ValueError(
                "The channel axes cannot include the leading dimension as this is "
                "assumed to be the batch axis.\nGive feature_axes=-1 (channels last)."
            )
        reduction = tuple(i for i in range(1, x.ndim) if i not in feature_axes)
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        if self.promote_dtype is not promote_dtype:
            x, scale, bias = self.promote_dtype((x, scale, bias), dtype=self.dtype)
        return norm.apply_layer_norm(
            x, scale, bias, mask, _spec(self, x, reduction, feature_axes, use_mean=True)
        )
