"""Functional dropout (``lens.core.nn.stochastic``, like Flax's)."""

from __future__ import annotations

from typing import Any

from lens._kernels.random import dropout as drop
from lens.core._scope import Scope

__all__ = ["dropout"]


def dropout(
    scope: Scope,
    inputs: Any,
    rate: float,
    deterministic: bool = False,
    rng: Any = None,
) -> Any:
    """Zeroes each element with probability ``rate`` and rescales the rest.

    Draws from the ``'dropout'`` stream unless ``rng`` is given.
    """
    if rate == 0.0 or deterministic:
        return inputs
    keep_prob = 1.0 - rate
    if rng is None:
        rng = scope.make_rng("dropout")
    return drop(inputs, rng, keep_prob, inputs.shape)
