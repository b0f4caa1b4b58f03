"""Scopes (``lens.core.scope``, like ``flax.core.scope``).

A facade at Flax's path ``flax.core.scope``: its names live in
:mod:`lens._frozen_dict`, :mod:`lens.core._entry`, :mod:`lens.core._filters`,
:mod:`lens.core._rng`, :mod:`lens.core._scope`, :mod:`lens.core._variable`,
:mod:`lens.typing`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
