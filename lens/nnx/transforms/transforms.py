"""A facade at Flax's path ``flax.nnx.transforms.transforms``: its names live in
:mod:`lens.nnx._transforms.branches`, :mod:`lens.nnx._transforms.lifted`,
:mod:`lens.nnx._transforms.modes`, :mod:`lens.nnx._transforms.signatures`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
