"""flax.nnx.helpers's path: ``List``, ``Dict``, ``Sequential`` and ``TrainState``.
The code is in lens/nnx/_objects/containers.py; this module declares what flax's
path offers, nothing more.

A facade at Flax's path ``flax.nnx.helpers``: its names live in
:mod:`lens.nnx._graph.ops`, :mod:`lens.nnx._objects.containers`,
:mod:`lens.nnx._objects.module`, :mod:`lens.nnx._variables.state`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
