"""Metric writers (``lens.metrics``, like ``flax.metrics``).

Flax's one module here, ``flax.metrics.tensorboard``, is a TensorBoard
``SummaryWriter`` built on TensorFlow, which lens does not depend on; lens leaves
it out (parity/surface_exclusions.toml). Write summaries with ``tensorboardX``,
``clu.metric_writers`` or ``torch.utils.tensorboard`` instead; for metrics
computed during training see :mod:`lens.nnx.training.metrics`.
"""
