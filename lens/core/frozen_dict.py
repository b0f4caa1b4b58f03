"""``FrozenDict`` (``lens.core.frozen_dict``, like ``flax.core.frozen_dict``).

A facade at Flax's path ``flax.core.frozen_dict``: its names live in
:mod:`lens._frozen_dict`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
