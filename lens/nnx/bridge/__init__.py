"""Use lens.nn (Linen) modules in lens.nnx models and the other way round
(flax.nnx's ``bridge``).

- :class:`ToNNX` wraps a Linen module as an eager module: ``lazy_init(x)`` runs
  its ``init``, and its variables become nnx Variables.
- :class:`ToLinen` (and :func:`to_linen`) wraps an eager module class as a Linen
  module whose variables live in Linen collections.
- :class:`Module` is a Linen-style module (``setup``, ``@compact``, ``init`` /
  ``apply``) built on nnx; ``nnx_in_bridge_mdl`` / ``linen_in_bridge_mdl`` put
  nnx and Linen modules inside one.
"""

from lens.nnx.bridge.interop import linen_in_bridge_mdl, nnx_in_bridge_mdl
from lens.nnx.bridge.module import (
    AttrPriority,
    Module,
    Scope,
    compact,
    current_context,
    current_module,
)
from lens.nnx.bridge.variables import NNXMeta, with_partitioning
from lens.nnx.bridge.wrappers import (
    Functional,
    ToLinen,
    ToNNX,
    functional,
    lazy_init,
    to_linen,
)
from lens.nnx.nn import initializers

__all__ = [
    "AttrPriority",
    "Functional",
    "Module",
    "NNXMeta",
    "Scope",
    "ToLinen",
    "ToNNX",
    "compact",
    "current_context",
    "current_module",
    "functional",
    "initializers",
    "lazy_init",
    "linen_in_bridge_mdl",
    "nnx_in_bridge_mdl",
    "to_linen",
    "with_partitioning",
]
