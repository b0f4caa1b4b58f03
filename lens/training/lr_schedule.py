"""Learning-rate schedules (``lens.training.lr_schedule``; prefer optax schedules).

Each ``create_*`` returns ``learning_rate_fn(step)``; ``warmup_length`` (in
epochs) ramps the rate linearly from 0.

Example:
    >>> import warnings
    >>> warnings.simplefilter("ignore", DeprecationWarning)
    >>> fn = create_stepped_learning_rate_schedule(0.1, 100, [[10, 0.1], [20, 0.01]])
    >>> [round(float(fn(s)), 4) for s in (0, 1500, 2500)]
    [0.1, 0.01, 0.001]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

__all__ = [
    "create_constant_learning_rate_schedule",
    "create_cosine_learning_rate_schedule",
    "create_stepped_learning_rate_schedule",
]


def _deprecated() -> None:
    warnings.warn(
        "Learning rate schedules in lens.training (as in flax.training) are "
        "deprecated in favor of Optax schedules (optax.schedules).",
        DeprecationWarning,
        stacklevel=3,
    )


def _piecewise_constant(boundaries: Any, values: Any, t: Any) -> Any:
    return jnp.take(values, jnp.sum(boundaries < t))


def _warmup(lr: Any, step: Any, warmup_length: float, steps_per_epoch: int) -> Any:
    if warmup_length > 0.0:
        lr = lr * jnp.minimum(1.0, step / float(warmup_length) / steps_per_epoch)
    return lr


def create_constant_learning_rate_schedule(
    base_learning_rate: float, steps_per_epoch: int, warmup_length: float = 0.0
) -> Callable[[Any], Any]:
    """A constant rate (after the warmup)."""
    _deprecated()

    def learning_rate_fn(step: Any) -> Any:
        return _warmup(base_learning_rate, step, warmup_length, steps_per_epoch)

    return learning_rate_fn


def create_stepped_learning_rate_schedule(
    base_learning_rate: float,
    steps_per_epoch: int,
    lr_sched_steps: Sequence[Sequence[float]],
    warmup_length: float = 0.0,
) -> Callable[[Any], Any]:
    """Piecewise constant: ``[[epoch, factor], ...]`` sets ``base * factor`` from ``epoch``."""
    _deprecated()
    boundaries = np.round(np.array([s[0] for s in lr_sched_steps]) * steps_per_epoch)
    boundaries = boundaries.astype(int)
    values = np.array([1.0] + [s[1] for s in lr_sched_steps]) * base_learning_rate

    def learning_rate_fn(step: Any) -> Any:
        lr = _piecewise_constant(boundaries, values, step)
        return _warmup(lr, step, warmup_length, steps_per_epoch)

    return learning_rate_fn


def create_cosine_learning_rate_schedule(
    base_learning_rate: float,
    steps_per_epoch: int,
    halfcos_epochs: float,
    warmup_length: float = 0.0,
) -> Callable[[Any], Any]:
    """Half a cosine from ``base`` to 0 over ``halfcos_epochs``."""
    _deprecated()
    half = halfcos_epochs * steps_per_epoch

    def learning_rate_fn(step: Any) -> Any:
        lr = base_learning_rate * (jnp.cos(step * jnp.pi / half) * 0.5 + 0.5)
        return _warmup(lr, step, warmup_length, steps_per_epoch)

    return learning_rate_fn
