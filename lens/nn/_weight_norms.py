"""The weight wrappers SpectralNorm and WeightNorm (``lens.nn.normalization``).

Each wraps a layer and normalizes its weights before every call (through
``map_variables``); the statistics' names follow Flax Linen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from lens._facades import show_at_flax_paths
from lens._kernels import norm
from lens._kernels.dtypes import canonicalize_dtype
from lens.core.nn import initializers
from lens.nn._hyperparameters import NON_NEGATIVE
from lens.nn._module import Module
from lens.nn._module_support import compact

Array = Any
Dtype = Any
Initializer = Callable[..., Array]
Axes = int | Sequence[int]


_l2_normalize = norm.l2_normalize  # flax.linen.normalization._l2_normalize


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


show_at_flax_paths(__name__)
