"""``TrainState``: params, an optax optimizer and its state in one pytree.

Example:
    >>> import jax, jax.numpy as jnp, optax
    >>> from lens import nn
    >>> model = nn.Dense(2)
    >>> variables = model.init(jax.random.key(0), jnp.ones((1, 2)))
    >>> state = TrainState.create(
    ...     apply_fn=model.apply, params=variables["params"], tx=optax.sgd(0.1))
    >>> grads = jax.tree.map(jnp.ones_like, state.params)
    >>> state = state.apply_gradients(grads=grads)
    >>> int(state.step)
    1
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax

from lens import struct

OVERWRITE_WITH_GRADIENT = "_overwrite_with_gradient"
"""A params collection whose new value is its gradient (fp8 scale bookkeeping)."""


class TrainState(struct.PyTreeNode):
    """The state of a training loop with one optax optimizer.

    Subclass it to carry more (e.g. ``batch_stats``); :meth:`apply_gradients`
    passes extra keyword arguments to ``replace``.

    Attributes:
      step: how many times :meth:`apply_gradients` ran.
      apply_fn: usually ``model.apply`` (static).
      params: the parameters ``tx`` updates.
      tx: the optax transformation (static).
      opt_state: its state.
    """

    step: int | jax.Array
    apply_fn: Callable[..., Any] = struct.field(pytree_node=False)
    params: Any = struct.field(pytree_node=True)
    tx: optax.GradientTransformation = struct.field(pytree_node=False)
    opt_state: optax.OptState = struct.field(pytree_node=True)

    def apply_gradients(self, *, grads: Any, **kwargs: Any) -> TrainState:
        """One optimizer step: ``step + 1``, new ``params`` and ``opt_state``.

        Args:
          grads: gradients with the structure of ``params``.
          **kwargs: other fields to replace in the returned state.
        """
        overwrite = _has_overwrite(grads)
        g = grads["params"] if overwrite else grads
        p = self.params["params"] if overwrite else self.params
        updates, opt_state = self.tx.update(g, self.opt_state, p)
        new = optax.apply_updates(p, updates)
        if overwrite:
            new = {
                "params": new,
                OVERWRITE_WITH_GRADIENT: grads[OVERWRITE_WITH_GRADIENT],
            }
        return self.replace(
            step=self.step + 1, params=new, opt_state=opt_state, **kwargs
        )

    @classmethod
    def create(
        cls, *, apply_fn: Callable[..., Any], params: Any, tx: Any, **kwargs: Any
    ) -> TrainState:
        """A state at ``step=0`` with ``tx.init`` of the params."""
        p = params["params"] if _has_overwrite(params) else params
        return cls(
            step=0,
            apply_fn=apply_fn,
            params=params,
            tx=tx,
            opt_state=tx.init(p),
            **kwargs,
        )


def _has_overwrite(tree: Any) -> bool:
    # as Flax: a tree that is a number fails here (TypeError, not iterable)
    return not isinstance(tree, jax.Array) and OVERWRITE_WITH_GRADIENT in tree
