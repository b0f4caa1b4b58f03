"""A facade at Flax's path ``flax.nnx.transforms.autodiff``: its names live in
:mod:`lens.nnx._transforms.autodiff`, :mod:`lens.nnx._transforms.custom_gradients`,
:mod:`lens.nnx._transforms.signatures`, :mod:`lens.nnx._transforms.specs`,
:mod:`lens.nnx._variables.state`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
