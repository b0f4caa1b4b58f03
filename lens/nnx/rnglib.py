"""flax.nnx's ``rnglib`` module: RNG streams."""

from lens.nnx._misc import fork_rngs, reseed, restore_rngs, with_rngs
from lens.nnx._rngs import Rngs, RngStream, split_rngs
from lens.nnx._variables import RngCount, RngKey, RngState

__all__ = [
    "RngCount",
    "RngKey",
    "RngState",
    "RngStream",
    "Rngs",
    "fork_rngs",
    "reseed",
    "restore_rngs",
    "split_rngs",
    "with_rngs",
]
