"""Eager modules and standard layers: Module, Linear, LayerNorm, BatchNorm, Dropout,
Sequential, and an optax Optimizer.

Layers take their sizes up front and an ``rngs`` to initialise from, and keep the
Flax NNX names, shapes and key usage: ``Linear(2, 3, rngs=nnx.Rngs(0))`` draws the
kernel from the first ``params`` key and spends a second on the bias, so the same
seed gives the same parameters as ``flax.nnx``. The arithmetic is ``lens.nn``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lens.core.nn import initializers
from lens.nn._linear import _dense_jit, _static
from lens.nn._normalization import (
    _call_layer_norm,
    _normalize_jit,
    _stats,
    _stats_dtype,
)
from lens.nnx._graph import (
    BatchStat,
    Object,
    OptState,
    Param,
    Variable,
)
from lens.nnx._rngs import Rngs
from lens.nnx._state import iter_graph, state, update

Array = Any


class Module(Object):
    """Base class of eager modules: set attributes in ``__init__``, compute in
    ``__call__``. Submodules, variables and lists of them are found by attribute."""

    def set_attributes(
        self, *, raise_if_not_found: bool = True, **attributes: Any
    ) -> None:
        """Sets ``attributes`` on every submodule that has them (``self`` included)."""
        found = set()
        for _, node in iter_graph(self):
            if isinstance(node, Module):
                for name, value in attributes.items():
                    if name in vars(node):
                        object.__setattr__(node, name, value)
                        found.add(name)
        missing = set(attributes) - found
        if raise_if_not_found and missing:
            raise AttributeError(
                f"No submodule of {type(self).__name__} has the attribute(s) "
                f"{sorted(missing)}."
            )

    def train(self, **attributes: Any) -> None:
        """Training mode: dropout on, batch statistics from the batch."""
        self.set_attributes(
            deterministic=False,
            use_running_average=False,
            raise_if_not_found=False,
            **attributes,
        )

    def eval(self, **attributes: Any) -> None:
        """Evaluation mode: dropout off, running batch statistics."""
        self.set_attributes(
            deterministic=True,
            use_running_average=True,
            raise_if_not_found=False,
            **attributes,
        )

    def iter_modules(self) -> Any:
        """Yields ``(path, module)`` for this module and every submodule."""
        for path, node in iter_graph(self):
            if isinstance(node, Module):
                yield path, node


class Linear(Module):
    """``x @ kernel + bias`` with ``kernel`` of shape ``(in_features, out_features)``."""

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
        rngs: Rngs,
    ):
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.kernel = Param(
            kernel_init(rngs.params(), (in_features, out_features), param_dtype)
        )
        self.bias = (
            Param(bias_init(rngs.params(), (out_features,), param_dtype))
            if use_bias
            else None
        )

    def __call__(self, x: Array) -> Array:
        bias = self.bias.value if self.bias is not None else None
        return _dense_jit(
            x,
            self.kernel.value,
            bias,
            self.dtype,
            _static(self.precision),
        )


class LayerNorm(Module):
    """Layer normalisation over the last axis, with ``scale`` and ``bias``."""

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
        use_fast_variance: bool = True,
        rngs: Rngs,
    ):
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.use_fast_variance = use_fast_variance
        shape = (num_features,)
        self.scale = (
            Param(scale_init(rngs.params(), shape, param_dtype)) if use_scale else None
        )
        self.bias = (
            Param(bias_init(rngs.params(), shape, param_dtype)) if use_bias else None
        )

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        last = (x.ndim - 1,)
        return _call_layer_norm(
            x,
            self.scale.value if self.scale is not None else None,
            self.bias.value if self.bias is not None else None,
            mask,
            last,
            last,
            True,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            _stats_dtype(x, self.dtype, True),
            None,
            None,
            None,
        )


class BatchNorm(Module):
    """Batch normalisation over every axis but the last; running averages in
    ``mean`` and ``var`` (``BatchStat``)."""

    def __init__(
        self,
        num_features: int,
        *,
        use_running_average: bool = False,
        momentum: float = 0.99,
        epsilon: float = 1e-5,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = initializers.zeros,
        scale_init: Callable[..., Array] = initializers.ones,
        axis_name: str | None = None,
        use_fast_variance: bool = True,
        rngs: Rngs,
    ):
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.axis_name = axis_name
        self.use_fast_variance = use_fast_variance
        shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(shape, jnp.float32))
        self.var = BatchStat(jnp.ones(shape, jnp.float32))
        self.scale = (
            Param(scale_init(rngs.params(), shape, param_dtype)) if use_scale else None
        )
        self.bias = (
            Param(bias_init(rngs.params(), shape, param_dtype)) if use_bias else None
        )

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
        reduction = tuple(range(x.ndim - 1))
        if use_ra:
            mean, var = self.mean.value, self.var.value
        else:
            mean, var = _stats(
                x,
                reduction,
                True,
                self.axis_name,
                None,
                mask,
                True,
                self.use_fast_variance,
                _stats_dtype(x, self.dtype, True),
            )
            m = self.momentum
            self.mean.value = m * self.mean.value + (1 - m) * mean.reshape(-1)
            self.var.value = m * self.var.value + (1 - m) * var.reshape(-1)
        return _normalize_jit(
            x,
            mean,
            var,
            self.scale.value if self.scale is not None else None,
            self.bias.value if self.bias is not None else None,
            reduction=reduction,
            feature_axes=(x.ndim - 1,),
            dtype=self.dtype,
            epsilon=self.epsilon,
        )


class Dropout(Module):
    """Zeroes a ``rate`` fraction of the inputs (scaling the rest) unless
    ``deterministic``. Keys come from ``rngs`` given here or at call time."""

    def __init__(
        self,
        rate: float,
        *,
        broadcast_dims: Sequence[int] = (),
        deterministic: bool = False,
        rng_collection: str = "dropout",
        rngs: Rngs | None = None,
    ):
        self.rate = rate
        self.broadcast_dims = tuple(broadcast_dims)
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        self.rngs = rngs[rng_collection].fork() if rngs is not None else None

    def __call__(
        self,
        x: Array,
        *,
        deterministic: bool | None = None,
        rngs: Rngs | None = None,
    ) -> Array:
        det = self.deterministic if deterministic is None else deterministic
        if det or self.rate == 0.0:
            return x
        if self.rate == 1.0:
            return jnp.zeros_like(x)
        if rngs is not None:
            key = rngs[self.rng_collection]()
        elif self.rngs is not None:
            key = self.rngs()
        else:
            raise ValueError(
                "Dropout needs keys: give rngs=nnx.Rngs(dropout=...) to Dropout(...) "
                "or to the call, or call it with deterministic=True (model.eval())."
            )
        keep = 1.0 - self.rate
        shape = list(x.shape)
        for d in self.broadcast_dims:
            shape[d] = 1
        mask = jax.random.bernoulli(key, p=keep, shape=shape)
        mask = jnp.broadcast_to(mask, x.shape)
        return lax.select(mask, x / keep, jnp.zeros_like(x))


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
