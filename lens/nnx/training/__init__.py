"""flax.nnx's ``training`` package: ``metrics``, ``optimizer`` and ``ema``."""

from lens.nnx.training import metrics, optimizer

__all__ = ["metrics", "optimizer"]
