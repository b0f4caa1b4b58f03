"""flax.nnx's ``statelib`` module: :class:`State` and its helpers."""

from lens.nnx._containers import from_flat_state, to_flat_state
from lens.nnx._helpers import filter_state, map_state, merge_state, split_state
from lens.nnx._state import FlatState, State

__all__ = [
    "FlatState",
    "State",
    "filter_state",
    "from_flat_state",
    "map_state",
    "merge_state",
    "split_state",
    "to_flat_state",
]
