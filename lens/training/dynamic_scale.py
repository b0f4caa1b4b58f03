"""Dynamic loss scaling for half-precision training (``lens.training.dynamic_scale``).

The loss is multiplied by ``scale`` before differentiation and the gradients
divided by it, so small float16 gradients do not underflow. When a gradient is
not finite the scale shrinks (``backoff_factor``); after ``growth_interval``
finite steps it grows (``growth_factor``).

Example:
    >>> import jax.numpy as jnp
    >>> ds = DynamicScale()
    >>> ds, finite, loss, grad = ds.value_and_grad(lambda w: jnp.sum(w**2))(jnp.ones(3))
    >>> bool(finite), grad.tolist()
    (True, [2.0, 2.0, 2.0])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from lens import struct
from lens.typing import Array

__all__ = ["DynamicScale", "DynamicScaleResult"]


class DynamicScaleResult(NamedTuple):
    """What the wrapped function returns."""

    dynamic_scale: DynamicScale
    finite: Array
    aux: Any
    grad: Any


class DynamicScale(struct.PyTreeNode):
    """The loss-scale state (a pytree: keep it in the train state).

    Attributes:
      growth_factor: scale multiplier after ``growth_interval`` finite steps.
      backoff_factor: scale multiplier after a non-finite gradient.
      growth_interval: finite steps between growths.
      fin_steps: finite steps since the last change.
      scale: the current scale.
      minimum_scale: the scale never shrinks below this (None: no bound).
    """

    growth_factor: float = struct.field(pytree_node=False, default=2.0)
    backoff_factor: float = struct.field(pytree_node=False, default=0.5)
    growth_interval: int = struct.field(pytree_node=False, default=2000)
    fin_steps: int = 0
    scale: float = 65536.0
    minimum_scale: float | None = struct.field(
        pytree_node=False, default=float(jnp.finfo(jnp.float32).tiny)
    )

    def value_and_grad(
        self,
        fun: Callable[..., Any],
        argnums: int | Sequence[int] = 0,
        has_aux: bool = False,
        axis_name: str | None = None,
    ) -> Callable[..., DynamicScaleResult]:
        """``jax.value_and_grad`` with loss scaling.

        The returned function gives ``DynamicScaleResult(new_state, finite,
        value (or (value, aux)), grads)``; gradients are float32 and, with
        ``axis_name``, averaged over that axis. Skip the update when not
        ``finite``.
        """

        @functools.wraps(fun)
        def scaled(*args: Any) -> Any:
            out = fun(*args)
            return (self.scale * out[0], out[1]) if has_aux else self.scale * out

        grad_fn = jax.value_and_grad(scaled, argnums, has_aux)

        def wrapper(*args: Any) -> DynamicScaleResult:
            aux, grad = grad_fn(*args)
            aux = (aux[0] / self.scale, aux[1]) if has_aux else aux / self.scale
            grad = jax.tree_util.tree_map(
                lambda g: jnp.asarray(g, jnp.float32) / self.scale, grad
            )
            if axis_name is not None:
                grad = lax.pmean(grad, axis_name)
            finite = jnp.array(True)
            for g in jax.tree_util.tree_leaves(grad):
                finite &= jnp.all(lax.is_finite(g))
            grow = self.fin_steps == self.growth_interval
            fin_scale = jnp.where(
                grow & finite,
                jnp.minimum(
                    self.scale * self.growth_factor, jnp.finfo(jnp.float32).max
                ),
                self.scale,
            )
            inf_scale = self.scale * self.backoff_factor
            if self.minimum_scale is not None:
                inf_scale = jnp.maximum(inf_scale, self.minimum_scale)
            new_scale = jnp.where(finite, fin_scale, inf_scale)
            new_fin_steps = jnp.where(grow | (~finite), 0, self.fin_steps + 1)
            new_self = self.replace(fin_steps=new_fin_steps, scale=new_scale)
            return DynamicScaleResult(new_self, finite, aux, grad)

        return wrapper
