"""A facade at Flax's path ``flax.nnx.statelib``: its names live in
:mod:`lens.nnx._variables.state`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
