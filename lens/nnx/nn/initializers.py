"""flax.nnx's ``nn.initializers``: JAX's initializers, plus ``zeros_init`` and
``ones_init`` (lens.nn's, the same functions), and the ``DtypeLikeInexact``
type alias.

A facade at Flax's path ``flax.nnx.nn.initializers``: its names live in
:mod:`lens.core.nn.initializers`, :mod:`lens.typing`, as lens/_facades.py lists
them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
