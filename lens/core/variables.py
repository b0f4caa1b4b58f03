"""Variable dicts (``lens.core.variables``, like ``flax.core.variables``).

A facade at Flax's path ``flax.core.variables``: its names live in
:mod:`lens.core._variable`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
