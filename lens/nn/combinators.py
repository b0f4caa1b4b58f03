"""Combinators (``lens.nn.combinators``, like ``flax.linen.combinators``).

A facade at Flax's path ``flax.linen.combinators``: its names live in
:mod:`lens.nn._combinators`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
