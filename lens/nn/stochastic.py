"""Stochastic layers (``lens.nn.stochastic``, like ``flax.linen.stochastic``).

A facade at Flax's path ``flax.linen.stochastic``: its names live in
:mod:`lens.nn._stochastic`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
