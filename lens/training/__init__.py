"""Training helpers (``lens.training``, like ``flax.training``).

:mod:`~lens.training.train_state` (``TrainState``), :mod:`~lens.training.common_utils`
(data-parallel helpers), :mod:`~lens.training.checkpoints` (step-numbered
checkpoint files), :mod:`~lens.training.dynamic_scale` (loss scaling),
:mod:`~lens.training.early_stopping`, :mod:`~lens.training.lr_schedule` and
:mod:`~lens.training.prefetch_iterator`.
"""
