"""dtype helpers (``lens.nn.dtypes``, like ``flax.linen.dtypes``).

A facade at Flax's path ``flax.linen.dtypes``: its names live in
:mod:`lens._kernels.dtypes`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
