"""flax.nnx's ``training.optimizer``: an optax ``Optimizer`` that holds its state as
variables, and ``ModelAndOptimizer``.
"""

from __future__ import annotations

import inspect
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from lens import _strict, errors
from lens.nnx._graph.graph_state import GraphState
from lens.nnx._graph.ops import state
from lens.nnx._graph.update import update
from lens.nnx._objects.object import Pytree
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import OptState, Param, Variable


class OptArray(OptState):
    """An optimizer-state array that belongs to no parameter (e.g. Adam's count)."""


class OptVariable(OptState):
    """Optimizer state shaped like one parameter (e.g. Adam's ``mu`` for a kernel)."""


def to_opt_state(tree: Any) -> Any:
    """Wraps every leaf of an optax state: Variables (state per parameter) become
    :class:`OptVariable` with their metadata, other arrays :class:`OptArray`.
    A parameter's ``optimizer_sharding`` metadata becomes its state's
    ``out_sharding`` (so e.g. Adam's moments can be sharded unlike the parameter)."""

    def wrap(x: Any) -> OptState:
        if isinstance(x, Variable):
            metadata = dict(x.metadata)
            if "optimizer_sharding" in metadata:  # the state's own layout
                metadata["out_sharding"] = metadata.pop("optimizer_sharding")
            return OptVariable(x.value, **metadata)
        return OptArray(x)

    return jax.tree.map(wrap, tree, is_leaf=_is_var)


M = TypeVar("M")


class _Missing:
    """The type of :data:`MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()
"""An argument that was not passed (flax.nnx's sentinel for ``grads`` and ``wrt``)."""


class Optimizer(Pytree, Generic[M]):
    """An optax optimizer over a model's ``wrt`` variables (``wrt`` is required, as
    in flax.nnx since 0.11; :class:`ModelAndOptimizer` defaults it to ``Param``).

    ``optimizer.update(model, grads)`` applies one step in place: the model's
    variables, and the optimizer's ``opt_state`` (optax's state, each array in an
    :class:`OptArray` or :class:`OptVariable`) and ``step``. It returns the updates.
    An update that cannot apply (gradients of another structure, shape or dtype)
    raises before anything is written.
    """

    def __init__(
        self, model: Pytree, tx: Any, *, wrt: Any = MISSING, graph: Any = None
    ):
        if wrt is MISSING:
            raise TypeError(
                "Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` "
                "argument is required, if you want to keep the previous use "
                "nnx.ModelAndOptimizer instead of nnx.Optimizer.\nPass wrt=nnx.Param "
                "to optimize the model's parameters."
            )
        # flax.nnx's attributes, in its order (its repr and graph show them so)
        self.graph = graph
        self.step = OptState(jnp.zeros((), jnp.uint32))
        self.tx = tx
        self.opt_state = to_opt_state(tx.init(state(model, wrt, graph=graph)))
        self.wrt = wrt

    def __getattr__(self, name: str) -> Any:
        # only reached for a name the optimizer lacks
        if name == "model":
            raise AttributeError(
                f"{type(self).__name__} does not have attribute 'model' since Flax "
                "0.11.0. To keep the previous behavior, use nnx.ModelAndOptimizer "
                "instead of nnx.Optimizer."
            )
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}"
        )

    def update(
        self, model: Any = MISSING, grads: Any = MISSING, /, **kwargs: Any
    ) -> Any:
        """One optimizer step: ``update(model, grads, **kwargs)`` (``kwargs`` go to
        ``tx.update``, e.g. a line search's ``value_fn``). Returns the updates."""
        if grads is MISSING:
            raise TypeError(
                "Missing required argument `grads`. As of Flax 0.11.0 update "
                "requires both (model, grads) arguments to be passed.\n"
                "Call optimizer.update(model, grads), or use nnx.ModelAndOptimizer, "
                "whose update takes (grads)."
            )
        if _strict.enabled():
            _check_grad_paths(model, grads, self.wrt)
        values = _values(state(model, self.wrt))
        gvalues = _values(_wrt_part(grads, self.wrt))
        _check_grads(values, gvalues, self.wrt)
        opt_vars = jax.tree.leaves(self.opt_state, is_leaf=_is_var)
        updates, new_opt = self.tx.update(
            gvalues, _values(self.opt_state), values, **_values(kwargs)
        )
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
        # set_value, not ``.value =``: a hijax Variable's tracer (inside
        # jax.jit) has methods but no attribute setter.
        for var, value in zip(opt_vars, new_opt_leaves):
            var.set_value(value)
        self.step.set_value(self.step.get_value() + 1)
        return updates


def _wrt_part(grads: Any, wrt: Any) -> Any:
    """The gradients of the optimized variables (flax filters them by ``wrt``):
    of a State, or of a module (what ``jax.grad`` gives for a module argument);
    a plain pytree of arrays passes as it is. A GraphState (what ``nnx.grad``
    gives for ``nnx.unpack``'s parts) counts as its State."""
    if isinstance(grads, GraphState):
        grads = grads._state
    if isinstance(grads, State | Pytree):
        return state(grads, wrt)
    return grads


def _check_grad_paths(model: Any, grads: Any, wrt: Any) -> None:
    """Strict mode: gradients that ``wrt`` would drop silently (flax filters
    them). A path the model lacks raises; a variable of the model that ``wrt``
    does not select (a BatchStat's gradient) warns."""
    if isinstance(grads, GraphState):
        grads = grads._state
    if not isinstance(grads, State | Pytree):
        return  # a plain pytree must match the parameters exactly (checked below)
    grad_paths = set(_flat(state(grads) if isinstance(grads, Pytree) else grads))
    model_paths = set(_flat(state(model)))
    kept = set(_flat(_wrt_part(grads, wrt)))
    unknown = sorted(grad_paths - model_paths, key=str)
    if unknown:
        names = ["/".join(map(str, p)) for p in unknown]
        raise errors.UnusedGradientsError(names[:8], len(names))
    ignored = sorted(grad_paths - kept, key=str)
    if ignored:
        names = ", ".join("/".join(map(str, p)) for p in ignored[:8])
        _strict.warn(
            errors.StrictModeWarning(
                f"Optimizer.update ignores the gradients of {len(ignored)} "
                f"variable(s) that wrt={getattr(wrt, '__name__', wrt)!s} does not select: {names}.\nPass "
                "wrt= the variables to update, or take only their gradients "
                "(nnx.grad(..., argnums=nnx.DiffState(0, wrt)))."
            )
        )


def _flat(s: Any) -> dict[Any, Any]:
    return s._flat_dict() if isinstance(s, State) else {}


def _wrt_required(init: Any) -> None:
    """Shows ``wrt`` as flax.nnx's signature does: required (no default)."""
    sig = inspect.signature(init)
    init.__signature__ = sig.replace(
        parameters=[
            p.replace(default=inspect.Parameter.empty) if p.name == "wrt" else p
            for p in sig.parameters.values()
        ]
    )


_wrt_required(Optimizer.__init__)


class ModelAndOptimizer(Optimizer[M]):
    """An :class:`Optimizer` that keeps its model: ``update(grads)``.

    The model is then reachable from the optimizer, so pass only the optimizer to
    transforms (``optimizer.model`` inside).
    """

    def __init__(self, model: M, tx: Any, *, wrt: Any = Param, graph: Any = None):
        super().__init__(model, tx, wrt=wrt)  # type: ignore[arg-type]
        self.model = model

    def update(self, grads: Any = MISSING, /, **kwargs: Any) -> Any:  # type: ignore[override]
        """One optimizer step of ``optimizer.model`` with ``grads``."""
        if grads is MISSING:
            raise TypeError(
                "Missing required argument `grads`. ModelAndOptimizer.update takes "
                "(grads): the model is optimizer.model."
            )
        return super().update(self.model, grads, **kwargs)


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
            raise errors.GradientShapeError(
                f"Optimizer.update: the gradient of {jax.tree_util.keystr(path)} has "
                f"shape {np.shape(g)}, the variable {np.shape(p)}; {fix}."
            )


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def _values(s: Any) -> Any:
    return jax.tree.map(lambda v: v.value if _is_var(v) else v, s, is_leaf=_is_var)
