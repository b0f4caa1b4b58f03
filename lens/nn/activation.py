"""Activations (``lens.nn.activation``, like ``flax.linen.activation``).

A facade at Flax's path ``flax.linen.activation``: its names live in
:mod:`lens.nn._activation`, :mod:`lens.nn._module`, :mod:`lens.nn._module_support`,
as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
