"""``Dropout``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from lens._facades import show_at_flax_paths
from lens._kernels.dtypes import merge_param
from lens._kernels.random import dropout
from lens.nn._hyperparameters import RATE
from lens.nn._module import Module
from lens.nn._module_support import compact


class Dropout(Module):
    """Randomly zeroes inputs with probability ``rate`` (and rescales the rest).

    Draws keys from the ``'dropout'`` stream (``rng_collection``). Pass
    ``deterministic=True`` (attribute or call argument) at inference.
    """

    _hyperparameters = {"rate": RATE}

    rate: float
    broadcast_dims: Sequence[int] = ()
    deterministic: bool | None = None
    rng_collection: str = "dropout"

    @compact
    def __call__(
        self, inputs: Any, deterministic: bool | None = None, rng: Any = None
    ) -> Any:
        """Applies dropout."""
        deterministic = merge_param("deterministic", self.deterministic, deterministic)
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        keep = 1.0 - self.rate
        if rng is None:
            rng = self.make_rng(self.rng_collection)
        shape = list(inputs.shape)  # an array's, as Flax reads it
        for d in self.broadcast_dims:
            shape[d] = 1
        return dropout(inputs, rng, keep, shape)


show_at_flax_paths(__name__)
