"""Training helpers (``lens.training``, like ``flax.training``).

:mod:`~lens.training.train_state` (``TrainState``), :mod:`~lens.training.common_utils`
(data-parallel helpers), :mod:`~lens.training.checkpoints` (step-numbered
checkpoint files), :mod:`~lens.training.dynamic_scale` (loss scaling),
:mod:`~lens.training.early_stopping`, :mod:`~lens.training.lr_schedule` and
:mod:`~lens.training.prefetch_iterator`.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# As in flax, where importing flax.nnx leaves train_state an attribute of this
# package: here it loads on first use (lens/_lazy.py).
if TYPE_CHECKING:
    from lens.training import train_state

# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
