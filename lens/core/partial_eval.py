"""``lazy_init`` (``lens.core.partial_eval``, like ``flax.core.partial_eval``).

A facade at Flax's path ``flax.core.partial_eval``: its names live in
:mod:`lens.core._partial_eval`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
