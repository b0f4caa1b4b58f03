"""The current JAX trace (``lens.core.tracers``, like ``flax.core.tracers``).

A facade at Flax's path ``flax.core.tracers``: its names live in
:mod:`lens.core._tracers`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
