"""Helpers for data-parallel training loops (``lens.training.common_utils``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def shard(xs: Any) -> Any:
    """Reshapes every leading axis to ``(local_device_count, -1, ...)``."""
    n = jax.local_device_count()
    return jax.tree_util.tree_map(lambda x: x.reshape((n, -1) + x.shape[1:]), xs)


def shard_prng_key(prng_key: Any) -> Any:
    """One key per local device: ``split(key, local_device_count)``."""
    return jax.random.split(prng_key, num=jax.local_device_count())


def stack_forest(forest: Any) -> Any:
    """Stacks the leaves of a sequence of same-structured pytrees."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *forest)


def get_metrics(device_metrics: Any) -> Any:
    """Stacks per-step metrics replicated over devices into host arrays.

    Takes device 0's copy of each step's metrics.
    """
    first = jax.tree_util.tree_map(lambda x: x[0], device_metrics)
    return stack_forest(jax.device_get(first))


def onehot(
    labels: Any, num_classes: int, on_value: float = 1.0, off_value: float = 0.0
) -> Any:
    """One-hot float32 vectors of ``labels`` (a trailing axis of ``num_classes``).

    Example:
        >>> import numpy as np
        >>> onehot(np.array([0, 2]), 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    x = labels[..., None] == jnp.arange(num_classes).reshape((1,) * labels.ndim + (-1,))
    x = jax.lax.select(x, jnp.full(x.shape, on_value), jnp.full(x.shape, off_value))
    return x.astype(jnp.float32)
