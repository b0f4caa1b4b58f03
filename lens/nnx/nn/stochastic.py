"""flax.nnx's ``nn.stochastic``: ``Dropout``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._kernels.random import dropout
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs, RngStream
from lens.nnx.nn._parameters import check_rate

Array = Any


class Dropout(Module):
    """Zeroes a ``rate`` fraction of the inputs (scaling the rest) unless
    ``deterministic``. Keys come from ``rngs`` given here or at call time."""

    def __init__(
        self,
        rate: float,
        *,
        broadcast_dims: Sequence[int] = (),
        deterministic: bool | None = False,
        rng_collection: str = "dropout",
        rngs: Rngs | RngStream | None = None,
    ):
        check_rate("Dropout", "rate", rate)
        self.rate = rate
        self.broadcast_dims = tuple(broadcast_dims)
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if isinstance(rngs, Rngs):
            self.rngs = rngs[rng_collection].fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        elif rngs is None:
            self.rngs = None
        else:
            raise TypeError(
                f"rngs must be a Rngs, RngStream or None, but got {type(rngs)}.\n"
                "Pass rngs=nnx.Rngs(dropout=0) (or a stream of one)."
            )

    def __call__(
        self,
        inputs: Array,
        *,
        deterministic: bool | None = None,
        rngs: Rngs | RngStream | jax.Array | None = None,
    ) -> Array:
        det = self.deterministic if deterministic is None else deterministic
        if det is None:
            raise ValueError(
                "No `deterministic` argument was provided to Dropout. Pass it to "
                "the constructor or the call, or use nnx.view(model, "
                "deterministic=True/False)."
            )
        if det or self.rate == 0.0:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = rngs if rngs is not None else self.rngs
        if rngs is None:
            raise ValueError(
                "`deterministic` is False, but no `rngs` argument was provided to "
                "Dropout as either a __call__ argument or class attribute.\nGive "
                "rngs=nnx.Rngs(dropout=...) to Dropout(...) or to the call, or call "
                "it with deterministic=True (model.eval())."
            )
        if isinstance(rngs, Rngs):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, RngStream):
            key = rngs()
        elif isinstance(rngs, jax.Array):
            key = rngs
        else:
            raise TypeError(
                f"rngs must be a Rngs, RngStream or jax.Array, but got {type(rngs)}."
            )
        keep = 1.0 - self.rate
        shape = list(inputs.shape)
        for d in self.broadcast_dims:
            shape[d] = 1
        # the mask is laid out as the inputs (an explicit mesh requires it)
        return dropout(
            inputs, key, keep, shape, out_sharding=jax.typeof(inputs).sharding
        )

    def set_view(self, deterministic: bool | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, disables dropout masking.
        """
        if deterministic is not None:
            self.deterministic = deterministic
