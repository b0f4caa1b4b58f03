"""flax.nnx's ``optimizer`` module."""

from lens.nnx._layers import (
    ModelAndOptimizer,
    OptArray,
    Optimizer,
    OptState,
    OptVariable,
    to_opt_state,
)

__all__ = [
    "ModelAndOptimizer",
    "OptArray",
    "OptState",
    "OptVariable",
    "Optimizer",
    "to_opt_state",
]
