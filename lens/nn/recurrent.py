"""Recurrent layers (``lens.nn.recurrent``, like ``flax.linen.recurrent``).

A facade at Flax's path ``flax.linen.recurrent``: its names live in
:mod:`lens._kernels.sequences`, :mod:`lens.nn._recurrent`, :mod:`lens.nn._rnn`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
