"""Pooling (``lens.nn.pooling``, like ``flax.linen.pooling``).

A facade at Flax's path ``flax.linen.pooling``: its names live in
:mod:`lens.nn._pooling`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
