"""Lifted transforms of modules (``lens.nn.transforms``, like ``flax.linen.transforms``).

A facade at Flax's path ``flax.linen.transforms``: its names live in
:mod:`lens.nn._lifting`, :mod:`lens.nn._module_hash`, :mod:`lens.nn._transforms`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
