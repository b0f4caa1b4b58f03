"""flax.nnx's ``training`` package: ``metrics``, ``optimizer`` and ``ema``."""

from lens.nnx.training import ema, metrics, optimizer

__all__ = ["ema", "metrics", "optimizer"]
