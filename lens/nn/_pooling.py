"""Pooling: ``pool``, ``avg_pool``, ``max_pool``, ``min_pool``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from lens._facades import show_at_flax_paths

Array = Any


def pool(
    inputs: Array,
    init: Any,
    reduce_fn: Callable[..., Array],
    window_shape: Sequence[int],
    strides: Sequence[int] | None,
    padding: str | Sequence[tuple[int, int]],
) -> Array:
    """Reduces windows of channel-last ``inputs`` (``(batch, *spatial, features)``)."""
    nd = len(window_shape)
    strides = tuple(strides) if strides is not None else (1,) * nd
    if len(strides) != nd:
        raise ValueError(
            f"pool: strides {strides} must have one entry per window axis {tuple(window_shape)}."
        )
    unbatched = inputs.ndim == nd + 1
    if unbatched:
        inputs = inputs[None]
    batch_shape = inputs.shape[: -(nd + 1)]
    inputs = inputs.reshape((-1,) + inputs.shape[-(nd + 1) :])
    dims = (1,) + tuple(window_shape) + (1,)
    strides_full = (1,) + strides + (1,)
    if not isinstance(padding, str):
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
        padding = ((0, 0), *pairs, (0, 0))
    y = lax.reduce_window(inputs, init, reduce_fn, dims, strides_full, padding)
    y = y.reshape(batch_shape + y.shape[1:])
    return y[0] if unbatched else y


def avg_pool(
    inputs: Array,
    window_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    count_include_pad: bool = True,
) -> Array:
    """Average pooling over ``window_shape``."""
    y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        return y / np.prod(window_shape)
    ones = jnp.ones(inputs.shape[-(len(window_shape) + 1) : -1] + (1,), inputs.dtype)
    counts = pool(ones, 0.0, lax.add, window_shape, strides, padding)
    # the window counts of one example, given y's leading batch axes explicitly
    # (an implicit rank promotion fails under jax_numpy_rank_promotion='raise')
    return y / counts.reshape((1,) * (y.ndim - counts.ndim) + counts.shape)


def max_pool(
    inputs: Array,
    window_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
) -> Array:
    """Max pooling over ``window_shape``."""
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(
    inputs: Array,
    window_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
) -> Array:
    """Min pooling over ``window_shape``."""
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)


show_at_flax_paths(__name__)
