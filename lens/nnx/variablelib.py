"""A facade at Flax's path ``flax.nnx.variablelib``: its names live in
:mod:`lens.nnx._variables.defaults`, :mod:`lens.nnx._variables.hijax`,
:mod:`lens.nnx._variables.hooks`, :mod:`lens.nnx._variables.names`,
:mod:`lens.nnx._variables.refs`, :mod:`lens.nnx._variables.static`,
:mod:`lens.nnx._variables.variable`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
