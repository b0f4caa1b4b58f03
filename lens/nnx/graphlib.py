"""flax.nnx's ``graphlib`` module: the same functions as :mod:`lens.nnx.graph`."""

from lens.nnx.graph import *  # noqa: F403 - the same names, under Flax's other name
from lens.nnx.graph import __all__ as __all__
