"""A facade at Flax's path ``flax.nnx.transforms.iteration``: its names live in
:mod:`lens.nnx._transforms.iteration`, :mod:`lens.nnx._transforms.lifted`,
:mod:`lens.nnx._transforms.loops`, :mod:`lens.nnx._transforms.scan_step`,
:mod:`lens.nnx._transforms.signatures`, :mod:`lens.nnx._transforms.specs`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
