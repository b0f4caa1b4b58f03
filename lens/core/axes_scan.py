"""``jax.lax.scan`` with ``in_axes``/``out_axes`` (``lens.core.axes_scan``).

A facade at Flax's path ``flax.core.axes_scan``: its names live in
:mod:`lens.core.lift._axes_scan`, :mod:`lens.core.lift._util`, as lens/_facades.py
lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
