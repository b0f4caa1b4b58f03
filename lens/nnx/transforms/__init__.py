"""JAX-style transforms over eager objects, in flax.nnx's rooms: ``general`` (the
recipe they share), ``autodiff``, ``compilation``, ``iteration`` and
``transforms``.

Each room is an attribute of this package, as in flax.nnx, and loads on first use
(lens/_lazy.py).
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

if TYPE_CHECKING:
    from lens.nnx.transforms import (
        autodiff,
        compilation,
        general,
        iteration,
        transforms,
    )

# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
