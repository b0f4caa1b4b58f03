"""Eager modules and standard layers: Module, Linear, LayerNorm, BatchNorm, Dropout,
Sequential, and an optax Optimizer.

Layers take their sizes up front and an ``rngs`` to initialise from, and keep the
Flax NNX names, shapes and key usage: ``Linear(2, 3, rngs=nnx.Rngs(0))`` draws the
kernel from the first ``params`` key and spends a second on the bias, so the same
seed gives the same parameters as ``flax.nnx``. The arithmetic is ``lens.nn``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens._kernels import linear as ops
from lens._kernels import norm
from lens._kernels.dtypes import canonicalize_dtype
from lens.core.nn import initializers
from lens.nnx._graph import (
    BatchStat,
    Object,
    OptState,
    Param,
    Variable,
)
from lens.nnx._module import Module
from lens.nnx._rngs import Rngs, RngStream
from lens.nnx._state import state, update

Array = Any


def promote_dtype(args: Any, /, *, dtype: Any = None, inexact: bool = True) -> Any:
    """``args`` (a tuple; ``None`` kept) cast to one dtype: ``dtype``, or the one
    promoted from them. flax.nnx's form: one tuple, not Linen's ``*args``."""
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return tuple(jnp.asarray(x, dtype) if x is not None else None for x in args)


_NO_META: Mapping[str, Any] = MappingProxyType({})


def _param(
    init: Callable[..., Array], rngs: Rngs, shape: Any, dtype: Any, meta: Any
) -> Param:
    return Param(init(rngs.params(), shape, dtype), **dict(meta or {}))


def _optional_param(
    use: bool, init: Callable[..., Array], rngs: Rngs, shape: Any, dtype: Any, meta: Any
) -> Param | None:
    """``_param(...)`` when ``use`` (a layer's ``use_scale``/``use_bias``), else None."""
    return _param(init, rngs, shape, dtype, meta) if use else None


def _dot_kwargs(out_sharding: Any, preferred_element_type: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if out_sharding is not None:
        kw["out_sharding"] = out_sharding
    if preferred_element_type is not None:
        kw["preferred_element_type"] = preferred_element_type
    return kw


class Linear(Module):
    """``inputs @ kernel + bias`` with ``kernel`` of shape ``(in_features, out_features)``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        use_bias: bool = True,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        precision: Any = None,
        kernel_init: Callable[..., Array] = initializers.default_kernel_init,
        bias_init: Callable[..., Array] = initializers.zeros_init(),
        dot_general: Callable[..., Array] = lax.dot_general,
        promote_dtype: Callable[..., Any] = promote_dtype,
        preferred_element_type: Any = None,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = _NO_META,
        bias_metadata: Mapping[str, Any] = _NO_META,
    ):
        self.kernel = _param(
            kernel_init, rngs, (in_features, out_features), param_dtype, kernel_metadata
        )
        self.bias = (
            _param(bias_init, rngs, (out_features,), param_dtype, bias_metadata)
            if use_bias
            else None
        )
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Array, out_sharding: Any = None) -> Array:
        kernel = self.kernel.value
        bias = self.bias.value if self.bias is not None else None
        if (
            out_sharding is None
            and self.preferred_element_type is None
            and self.dot_general is lax.dot_general
            and self.promote_dtype is promote_dtype
        ):
            return ops.dense_jit(
                inputs, kernel, bias, self.dtype, ops.static(self.precision)
            )
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, bias), dtype=self.dtype
        )
        y = self.dot_general(
            inputs,
            kernel,
            (((inputs.ndim - 1,), (0,)), ((), ())),
            precision=self.precision,
            **_dot_kwargs(out_sharding, self.preferred_element_type),
        )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


def _axes(ndim: int, axes: int | Sequence[int]) -> tuple[int, ...]:
    axes = (axes,) if isinstance(axes, int) else axes
    return tuple(sorted({a % ndim for a in axes}))


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
        bias_metadata: Mapping[str, Any] = _NO_META,
        scale_metadata: Mapping[str, Any] = _NO_META,
    ):
        shape = (num_features,)
        self.scale = _optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = _optional_param(
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
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        if self.promote_dtype is not promote_dtype:
            x, scale, bias = self.promote_dtype((x, scale, bias), dtype=self.dtype)
        return norm.call_layer_norm(
            x,
            scale,
            bias,
            mask,
            _axes(x.ndim, self.reduction_axes),
            _axes(x.ndim, self.feature_axes),
            True,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            norm.stats_dtype(x, self.dtype, True),
            None,
            self.axis_name,
            self.axis_index_groups,
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
        bias_metadata: Mapping[str, Any] = _NO_META,
        scale_metadata: Mapping[str, Any] = _NO_META,
    ):
        shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(shape, jnp.float32))
        self.var = BatchStat(jnp.ones(shape, jnp.float32))
        self.scale = _optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = _optional_param(
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
            self.mean.value = m * self.mean.value + (1 - m) * mean.reshape(-1)
            self.var.value = m * self.var.value + (1 - m) * var.reshape(-1)
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


class Dropout(Module):
    """Zeroes a ``rate`` fraction of the inputs (scaling the rest) unless
    ``deterministic``. Keys come from ``rngs`` given here or at call time."""

    def __init__(
        self,
        rate: float,
        *,
        broadcast_dims: Sequence[int] = (),
        deterministic: bool | None = False,
        rng_collection: str = "dropout",
        rngs: Rngs | RngStream | None = None,
    ):
        self.rate = rate
        self.broadcast_dims = tuple(broadcast_dims)
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if isinstance(rngs, Rngs):
            self.rngs = rngs[rng_collection].fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        elif rngs is None:
            self.rngs = None
        else:
            raise TypeError(
                f"rngs must be a Rngs, RngStream or None, but got {type(rngs)}.\n"
                "Pass rngs=nnx.Rngs(dropout=0) (or a stream of one)."
            )

    def __call__(
        self,
        inputs: Array,
        *,
        deterministic: bool | None = None,
        rngs: Rngs | RngStream | jax.Array | None = None,
    ) -> Array:
        det = self.deterministic if deterministic is None else deterministic
        if det is None:
            raise ValueError(
                "No `deterministic` argument was provided to Dropout. Pass it to "
                "the constructor or the call, or use nnx.view(model, "
                "deterministic=True/False)."
            )
        if det or self.rate == 0.0:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = rngs if rngs is not None else self.rngs
        if rngs is None:
            raise ValueError(
                "`deterministic` is False, but no `rngs` argument was provided to "
                "Dropout as either a __call__ argument or class attribute.\nGive "
                "rngs=nnx.Rngs(dropout=...) to Dropout(...) or to the call, or call "
                "it with deterministic=True (model.eval())."
            )
        if isinstance(rngs, Rngs):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, RngStream):
            key = rngs()
        elif isinstance(rngs, jax.Array):
            key = rngs
        else:
            raise TypeError(
                f"rngs must be a Rngs, RngStream or jax.Array, but got {type(rngs)}."
            )
        keep = 1.0 - self.rate
        shape = list(inputs.shape)
        for d in self.broadcast_dims:
            shape[d] = 1
        mask = jax.random.bernoulli(key, p=keep, shape=shape)
        mask = jnp.broadcast_to(mask, inputs.shape)
        return lax.select(mask, inputs / keep, jnp.zeros_like(inputs))

    def set_view(self, deterministic: bool | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, disables dropout masking.
        """
        if deterministic is not None:
            self.deterministic = deterministic


class Sequential(Module):
    """Calls ``layers`` in order, each on the previous one's output."""

    def __init__(self, *layers: Callable[..., Any]):
        self.layers = list(layers)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = args
        for i, layer in enumerate(self.layers):
            out = layer(*out, **kwargs) if i == 0 else layer(*out)
            out = out if isinstance(out, tuple) else (out,)
        return out[0] if len(out) == 1 else out


class OptArray(OptState):
    """An optimizer-state array that belongs to no parameter (e.g. Adam's count)."""


class OptVariable(OptState):
    """Optimizer state shaped like one parameter (e.g. Adam's ``mu`` for a kernel)."""


def to_opt_state(tree: Any) -> Any:
    """Wraps every leaf of an optax state: Variables (state per parameter) become
    :class:`OptVariable` with their metadata, other arrays :class:`OptArray`."""

    def wrap(x: Any) -> OptState:
        if isinstance(x, Variable):
            return OptVariable(x.value, **x.metadata)
        return OptArray(x)

    return jax.tree.map(wrap, tree, is_leaf=_is_var)


class Optimizer(Object):
    """An optax optimizer over a model's ``wrt`` variables (``Param`` by default).

    ``optimizer.update(model, grads)`` applies one step in place: the model's
    variables, and the optimizer's ``opt_state`` (optax's state, each array in an
    :class:`OptArray` or :class:`OptVariable`) and ``step``. It returns the updates.
    An update that cannot apply (gradients of another structure, shape or dtype)
    raises before anything is written.
    """

    def __init__(self, model: Object, tx: Any, *, wrt: Any = Param, graph: Any = None):
        self.tx = tx
        self.wrt = wrt
        self.step = OptState(jnp.zeros((), jnp.uint32))
        self.opt_state = to_opt_state(tx.init(state(model, wrt)))

    def update(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) != 2:
            raise TypeError(
                "Optimizer.update takes (model, grads): the optimizer does not keep a "
                "reference to the model, so one model can be passed to nnx.grad and "
                "the optimizer to the same transform without aliasing."
            )
        model, grads = args
        values, gvalues = _values(state(model, self.wrt)), _values(grads)
        _check_grads(values, gvalues, self.wrt)
        opt_vars = jax.tree.leaves(self.opt_state, is_leaf=_is_var)
        opt_values = _values(self.opt_state)
        updates, new_opt = self.tx.update(gvalues, opt_values, values, **kwargs)
        new = jax.tree.map(
            lambda p, u: jnp.asarray(p + u).astype(jnp.result_type(p)),
            values,
            updates,
        )
        new_opt_leaves = jax.tree.leaves(new_opt)
        if len(new_opt_leaves) != len(opt_vars):
            raise ValueError(
                f"Optimizer.update: {type(self.tx).__name__}.update returned a state "
                f"with {len(new_opt_leaves)} arrays for {len(opt_vars)}.\nThe "
                "optax transformation must keep its state's structure."
            )
        # Everything is computed: now write (nothing above changed any state).
        update(model, new)
        for var, value in zip(opt_vars, new_opt_leaves):
            var.value = value
        self.step.value = self.step.value + 1
        return updates


class ModelAndOptimizer(Optimizer):
    """An :class:`Optimizer` that keeps its model: ``update(grads)``.

    The model is then reachable from the optimizer, so pass only the optimizer to
    transforms (``optimizer.model`` inside).
    """

    def __init__(self, model: Object, tx: Any, *, wrt: Any = Param, graph: Any = None):
        super().__init__(model, tx, wrt=wrt)
        self.model = model

    def update(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if len(args) != 1:
            raise TypeError(
                "ModelAndOptimizer.update takes (grads): the model is optimizer.model."
            )
        return super().update(self.model, args[0], **kwargs)


def _check_grads(values: Any, gvalues: Any, wrt: Any) -> None:
    fix = "take them with nnx.grad(..., argnums=nnx.DiffState(0, wrt))"
    if jax.tree.structure(values) != jax.tree.structure(gvalues):
        raise ValueError(
            "Optimizer.update: the gradients do not match the optimized variables "
            f"({wrt!r}); {fix}."
        )
    paths = jax.tree_util.tree_flatten_with_path(values)[0]
    for (path, p), g in zip(paths, jax.tree.leaves(gvalues)):
        if np.shape(g) != np.shape(p):
            raise ValueError(
                f"Optimizer.update: the gradient of {jax.tree_util.keystr(path)} has "
                f"shape {np.shape(g)}, the variable {np.shape(p)}; {fix}."
            )


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def _values(s: Any) -> Any:
    return jax.tree.map(lambda v: v.value if _is_var(v) else v, s, is_leaf=_is_var)
