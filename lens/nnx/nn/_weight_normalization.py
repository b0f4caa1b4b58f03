"""Layer wrappers that reparametrize the wrapped layer's weights before each call:
``WeightNorm`` (each weight over its l2-norm, times a learned scale) and
``SpectralNorm`` (each matrix over its largest singular value, found by power
iteration). flax.nnx keeps both in ``nn.normalization``, which re-exports them.

Both rewrite the wrapped layer's ``Param`` values in place, as flax.nnx's do: after
a call the layer holds the normalized weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from lens._kernels import norm
from lens.core.nn import initializers
from lens.nnx._graph import ops as graph_ops
from lens.nnx._objects.module import Module
from lens.nnx._objects.object import data
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables import filters as filterlib
from lens.nnx._variables import state as statelib
from lens.nnx._variables.variable import BatchStat, Param
from lens.nnx.nn import dtypes

Array = Any
Path = tuple[Any, ...]


def l2_normalize(x: Array, axis: Any = None, eps: float = 1e-12) -> Array:
    """``x`` over its l2-norm along ``axis`` (all axes when None)."""
    return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


def _canonical_axes(ndim: int, axes: Any) -> tuple[int, ...]:
    return tuple(sorted(set(norm.axes(axes, ndim))))  # AxisError past either end


def _params(layer: Module, *filters: Any) -> list[tuple[Path, Any]]:
    """The wrapped layer's (path, Variable) pairs: the objects the layer holds."""
    return list(statelib.to_flat_state(graph_ops.state(layer, *filters)))


class WeightNorm(Module):
    """L2 weight normalization (https://arxiv.org/abs/1602.07868) of a wrapped layer.

    Before each call, every weight of ``layer_instance`` that ``variable_filter``
    selects is divided by its l2-norm over the axes other than ``feature_axes``
    and, with ``use_scale``, multiplied by a learned scale kept in ``scales``
    (a dict from the weight's path to its scale).

    Example:
        >>> import jax, numpy as np
        >>> from lens import nnx
        >>> layer = nnx.WeightNorm(nnx.Linear(8, 4, rngs=nnx.Rngs(0)),
        ...                        rngs=nnx.Rngs(1))
        >>> layer(jax.numpy.ones((2, 8))).shape
        (2, 4)
        >>> np.allclose(np.linalg.norm(layer.layer_instance.kernel[...], axis=0), 1)
        True
    """

    def __init__(
        self,
        layer_instance: Module,
        *,
        feature_axes: Any = -1,
        use_scale: bool = True,
        scale_init: Callable[..., Array] = initializers.ones,
        epsilon: float = 1e-12,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        variable_filter: Any = filterlib.PathContains("kernel"),
        promote_dtype: Callable[..., Any] = dtypes.promote_dtype,
        rngs: Rngs,
    ):
        self.layer_instance = layer_instance
        self.feature_axes = () if feature_axes is None else feature_axes
        self.use_scale = use_scale
        self.scale_init = scale_init
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.variable_filter = filterlib.to_predicate(variable_filter)
        self.promote_dtype = promote_dtype
        self.scales: dict[Path, Array] | None = None
        if use_scale:
            self.scales = data(
                {
                    path: self._init_scale(scale_init, rngs, param)
                    for path, param in _params(layer_instance, Param)
                    if self.variable_filter(path, param)
                }
            )

    def _init_scale(self, init: Callable[..., Array], rngs: Rngs, param: Any) -> Array:
        axes = _canonical_axes(param.ndim, self.feature_axes)
        return init(rngs["params"], tuple(param.shape[a] for a in axes))

    def _normalize_inplace(self, path: Path, param: Any) -> None:
        if not self.variable_filter(path, param):
            return
        feature_axes = _canonical_axes(param.ndim, self.feature_axes)
        reduction = tuple(i for i in range(param.ndim) if i not in feature_axes)
        value = l2_normalize(param[...], axis=reduction, eps=self.epsilon)
        cast_args = [param[...]]
        if self.use_scale:
            assert self.scales is not None  # built in __init__ when use_scale
            if path not in self.scales:
                raise RuntimeError(
                    f"Could not find the scale corresponding to the param {path} "
                    "in scales dict. Parameters of the layer_instance should not "
                    "change!\nWeightNorm made its scales when it was built: build "
                    "a new WeightNorm around the changed layer."
                )
            shape = [1] * param.ndim
            for a in feature_axes:
                shape[a] = param.shape[a]
            scale = jnp.reshape(self.scales[path], shape)
            value = value * scale
            cast_args.append(scale)
        dtype = dtypes.canonicalize_dtype(*cast_args, dtype=self.dtype)
        param.set_value(jnp.asarray(value, dtype))

    def __call__(self, x: Array, *args: Any, **kwargs: Any) -> Array:
        """Normalizes the wrapped layer's weights in place, then calls it."""
        for path, param in _params(self.layer_instance):
            self._normalize_inplace(path, param)
        return self.layer_instance(x, *args, **kwargs)  # type: ignore[operator]


class SpectralNorm(Module):
    """Spectral normalization (https://arxiv.org/abs/1802.05957) of a wrapped layer.

    Before each call, every matrix ``Param`` of ``layer_instance`` (higher-rank
    weights flattened to their last axis) is divided by its largest singular
    value, estimated by ``n_steps`` of power iteration. The iteration's vector
    ``u`` and the estimate ``sigma`` are ``BatchStat``s in ``batch_stats`` (keyed
    by the weight's path plus ``'u'`` / ``'sigma'``), updated when ``update_stats``.

    Example:
        >>> import jax
        >>> from lens import nnx
        >>> layer = nnx.SpectralNorm(nnx.Linear(4, 5, rngs=nnx.Rngs(0)),
        ...                          rngs=nnx.Rngs(1))
        >>> layer(jax.numpy.ones((3, 4))).shape
        (3, 5)
        >>> sorted(layer.batch_stats)
        [('kernel', 'sigma'), ('kernel', 'u')]
    """

    def __init__(
        self,
        layer_instance: Module,
        *,
        n_steps: int = 1,
        epsilon: float = 1e-12,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        error_on_non_matrix: bool = False,
        update_stats: bool = True,
        rngs: Rngs,
    ):
        self.layer_instance = layer_instance
        self.n_steps = n_steps
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.error_on_non_matrix = error_on_non_matrix
        # update_stats as BatchNorm's flag, so train() and eval() switch it.
        self.use_running_average = not update_stats
        stats: dict[Path, BatchStat] = {}
        for path, param in _params(layer_instance, Param):
            matrix = self._as_matrix(path, param[...])
            if matrix is None:
                continue
            key = rngs.params()
            u = initializers.normal()(key, (1, matrix.shape[-1]), param_dtype)
            stats[path + ("u",)] = BatchStat(u)
            stats[path + ("sigma",)] = BatchStat(
                initializers.ones(key, (), param_dtype)
            )
        self.batch_stats = data(stats)

    def _as_matrix(self, path: Path, value: Array) -> Array | None:
        """``value`` as the matrix to normalize, or None (vectors, n_steps < 1)."""
        if value.ndim <= 1 or self.n_steps < 1:
            return None
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(
                    f"Layer instance parameter is {value.ndim}D but "
                    "error_on_non_matrix is True\n"
                    f"The parameter at {path} has shape {value.shape}: give "
                    "error_on_non_matrix=False to flatten it to its last axis."
                )
            value = jnp.reshape(value, (-1, value.shape[-1]))
        return value

    def _stat(self, path: Path) -> BatchStat:
        if path not in self.batch_stats:
            kind = path[-1]
            raise RuntimeError(
                f"Could not find the path for {kind} batch stat corresponding to "
                f"the param {path[:-1]} in the batch stats dict. Parameters of the "
                "layer_instance should not change!\nSpectralNorm made its stats "
                "when it was built: build a new SpectralNorm around the changed layer."
            )
        return self.batch_stats[path]

    def _normalize_inplace(self, path: Path, param: Any, update_stats: bool) -> None:
        matrix = self._as_matrix(path, param[...])
        if matrix is None:
            return
        u_stat, sigma_stat = self._stat(path + ("u",)), self._stat(path + ("sigma",))
        u = v = u_stat[...]
        for _ in range(self.n_steps):
            v = l2_normalize(jnp.matmul(u, matrix.T), eps=self.epsilon)
            u = l2_normalize(jnp.matmul(v, matrix), eps=self.epsilon)
        u, v = lax.stop_gradient(u), lax.stop_gradient(v)
        sigma = jnp.matmul(jnp.matmul(v, matrix), u.T)[0, 0]
        matrix = matrix / jnp.where(sigma != 0, sigma, 1)
        if update_stats:
            u_stat[...] = u
            sigma_stat[...] = sigma
        dtype = dtypes.canonicalize_dtype(matrix, u, v, sigma, dtype=self.dtype)
        param[...] = jnp.asarray(jnp.reshape(matrix, param.shape), dtype)

    def __call__(self, x: Array, update_stats: bool | None = None) -> Array:
        """Spectrally normalizes the wrapped layer's weights in place, then calls it.

        Args:
          x: the wrapped layer's input.
          update_stats: store the new ``u`` and ``sigma`` (default: the
            ``update_stats`` given at construction, or as set by ``train()`` /
            ``eval()``).
        """
        if update_stats is None:
            update_stats = not self.use_running_average
        for path, param in _params(self.layer_instance, Param):
            self._normalize_inplace(path, param, update_stats)
        return self.layer_instance(x)  # type: ignore[operator]
