"""The Module system (``lens.nn.module``, like ``flax.linen.module``).

A facade at Flax's path ``flax.linen.module``: its names live in
:mod:`lens._kernels.dtypes`, :mod:`lens.core._variable`, :mod:`lens.ids`,
:mod:`lens.nn._context`, :mod:`lens.nn._module`, :mod:`lens.nn._module_base`,
:mod:`lens.nn._module_entry`, :mod:`lens.nn._module_support`,
:mod:`lens.nn._module_tree`, :mod:`lens.nn._share_scope`, :mod:`lens.nn._summary`,
as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
