"""Summaries of module calls (``lens.nn.summary``, like ``flax.linen.summary``).

A facade at Flax's path ``flax.linen.summary``: its names live in
:mod:`lens.nn._summary`, :mod:`lens.nn._summary_render`, as lens/_facades.py lists
them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
