"""Metric writers (``lens.metrics``, like ``flax.metrics``).

:mod:`lens.metrics.tensorboard` is Flax's ``flax.metrics.tensorboard``: a
TensorBoard ``SummaryWriter`` built on TensorFlow, which it needs (lens itself
does not depend on TensorFlow; the module says what to install when it is
missing). Without TensorFlow, ``clu.metric_writers`` or ``tensorboardX`` write
the same files; for metrics computed during training see
:mod:`lens.nnx.training.metrics`.
"""
