"""flax.nnx.pytreelib's path: ``Object`` (flax's ``Pytree``), its metaclass, the
data/static annotations and checks. The code is in lens/nnx/_objects/object.py; this
module declares what flax's path offers, nothing more.

A facade at Flax's path ``flax.nnx.pytreelib``: its names live in
:mod:`lens.nnx._objects.object`, :mod:`lens.nnx._objects.repr`,
:mod:`lens.nnx._objects.state`, :mod:`lens.nnx._variables.variable`, as
lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
