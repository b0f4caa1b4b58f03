"""flax.nnx's ``training`` package: ``metrics`` and ``optimizer``."""

from lens.nnx import metrics, optimizer

__all__ = ["metrics", "optimizer"]
