"""Linear layers (``lens.nn.linear``, like ``flax.linen.linear``).

A facade at Flax's path ``flax.linen.linear``: its names live in
:mod:`lens._kernels.dtypes`, :mod:`lens._kernels.linear`, :mod:`lens.nn._conv`,
:mod:`lens.nn._linear`, :mod:`lens.typing`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
