"""Initializers (``lens.nn.initializers``, like ``flax.linen.initializers``).

A facade at Flax's path ``flax.linen.initializers``: its names live in
:mod:`lens.core.nn.initializers`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
