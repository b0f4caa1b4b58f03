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

from lens._kernels import norm
from lens._kernels.dtypes import canonicalize_dtype, merge_param
from lens.core.nn import initializers
from lens.nn._hyperparameters import NON_NEGATIVE, RATE, SIZE
from lens.nn._module import Module
from lens.nn._module_support import compact

Array = Any
Dtype = Any
Initializer = Callable[..., Array]
Axes = int | Sequence[int]


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

    _hyperparameters = {
        "num_groups": SIZE,
        "group_size": SIZE,
        "epsilon": NON_NEGATIVE,
    }

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

    _hyperparameters = {"epsilon": NON_NEGATIVE}

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

    _hyperparameters = {"epsilon": NON_NEGATIVE}

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
            feature_axes = norm.axes(self.feature_axes, value.ndim)
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
