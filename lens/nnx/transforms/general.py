"""A facade at Flax's path ``flax.nnx.transforms.general``: its names live in
:mod:`lens.nnx._mirror.split_merge`, :mod:`lens.nnx._transforms.modes`,
:mod:`lens.nnx._transforms.recipe`, :mod:`lens.nnx._transforms.specs`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
