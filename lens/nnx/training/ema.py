"""An exponential moving average of a model's Variables (flax.nnx's
``training.ema``): ``EMA(model, decay)`` keeps a shadow copy, ``update(model)``
moves it towards the model, ``apply_to(model)`` gives a model that reads it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import jax
import jax.numpy as jnp

from lens.nnx._graph import ops as graph_ops
from lens.nnx._objects.object import Pytree, data
from lens.nnx._variables import state as statelib
from lens.nnx._variables.variable import Variable

A = TypeVar("A")


def _is_variable(x: Any) -> bool:
    return isinstance(x, Variable)


def _shadow(path: Any, leaf: Any) -> Variable:
    """A fresh Variable of the same type and metadata holding a copy of the value."""
    if not isinstance(leaf, Variable):
        where = "/".join(str(k) for k in path)
        raise TypeError(
            f"EMA only supports Variable leaves, got {type(leaf).__name__} at path "
            f"'{where}'. Use the `only` filter to select Variable leaves.\n"
            "EMA averages nnx.Variables; e.g. EMA(model, decay, only=nnx.Param)."
        )
    return type(leaf)(jnp.copy(leaf.get_value()), **leaf.get_metadata())


class EMA(Pytree):
    """Exponential moving average of the Variables of ``params`` that ``only``
    selects: ``update(new)`` sets each ``ema = decay * ema + (1 - decay) * new``.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens import nnx
        >>> model = nnx.Linear(2, 2, use_bias=False, rngs=nnx.Rngs(0))
        >>> ema = nnx.EMA(model, decay=0.9)
        >>> ema_model = ema.apply_to(model)
        >>> ema_model.kernel is ema.params.kernel
        True
        >>> model.kernel[...] = jnp.ones((2, 2))
        >>> ema.update(model)
        >>> bool(jnp.all(ema_model.kernel[...] != model.kernel[...]))
        True

    Attributes:
      decay: the weight of the old average in each update.
      filter: which Variables are tracked (``only``).
      params: the averages, a State of Variables shaped like ``params``' state.
    """

    def __init__(
        self,
        params: Any,
        decay: float,
        *,
        only: Any = ...,
        graph: bool | None = None,
    ):
        self.graph = graph
        self.decay = decay
        self.filter = only
        state = graph_ops.state(params, only, graph=graph)
        self.params = data(
            jax.tree_util.tree_map_with_path(_shadow, state, is_leaf=_is_variable)
        )

    def update(self, updates: Any) -> None:
        """Moves every average towards the matching Variable of ``updates`` (a
        module or node shaped like the one given at construction)."""

        def blend(ema: Variable, new: Any) -> None:
            ema[...] = self.decay * ema[...] + (1.0 - self.decay) * new[...]

        new = graph_ops.state(updates, self.filter, graph=self.graph)
        jax.tree.map(blend, self.params, new, is_leaf=_is_variable)

    def apply_to(self, model: A) -> A:
        """A new ``model`` whose tracked Variables are the averages themselves
        (later updates show through); the rest of its state is ``model``'s."""
        graphdef, state = graph_ops.split(model, graph=self.graph)
        return graph_ops.merge(graphdef, statelib.merge_state(state, self.params))
