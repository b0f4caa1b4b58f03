"""Use lens.nn (Linen) modules in lens.nnx models and the other way round
(flax.nnx's ``bridge``).

- :class:`ToNNX` wraps a Linen module as an eager module: ``lazy_init(x)`` runs
  its ``init``, and its variables become nnx Variables.
- :class:`ToLinen` (and :func:`to_linen`) wraps an eager module class as a Linen
  module whose variables live in Linen collections.
"""

from lens.nnx.bridge.variables import with_partitioning
from lens.nnx.bridge.wrappers import ToLinen, ToNNX, lazy_init, to_linen

__all__ = ["ToLinen", "ToNNX", "lazy_init", "to_linen", "with_partitioning"]
