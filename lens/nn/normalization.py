"""Normalization layers (``lens.nn.normalization``, like ``flax.linen.normalization``).

A facade at Flax's path ``flax.linen.normalization``: its names live in
:mod:`dataclasses`, :mod:`lens._kernels.dtypes`, :mod:`lens._kernels.norm`,
:mod:`lens.nn._module`, :mod:`lens.nn._module_support`,
:mod:`lens.nn._normalization`, :mod:`lens.nn._transforms`,
:mod:`lens.nn._weight_norms`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
