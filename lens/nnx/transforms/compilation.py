"""A facade at Flax's path ``flax.nnx.transforms.compilation``: its names live in
:mod:`lens.nnx._transforms.jit`, :mod:`lens.nnx._transforms.jit_stages`,
:mod:`lens.nnx._transforms.sharding`, :mod:`lens.nnx._transforms.signatures`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
