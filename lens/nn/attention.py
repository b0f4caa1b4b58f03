"""Attention (``lens.nn.attention``, like ``flax.linen.attention``).

A facade at Flax's path ``flax.linen.attention``: its names live in
:mod:`lens.nn._attention`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
