"""Axis metadata boxes (``lens.core.meta``, like ``flax.core.meta``).

A facade at Flax's path ``flax.core.meta``: its names live in
:mod:`lens.core._meta`, :mod:`lens.core._partitioning`, :mod:`lens.typing`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
