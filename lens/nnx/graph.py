"""flax.nnx's ``graph`` module: the object-graph API of :mod:`lens.nnx.graphlib` under
its other name (``from flax.nnx import graph`` ports as ``from lens.nnx import
graph``)."""

from lens.nnx.graphlib import *  # noqa: F403 - the same names, under Flax's other name
