"""flax.nnx's ``nn.initializers``: JAX's initializers, plus ``zeros_init`` and
``ones_init`` (lens.nn's, the same functions), and the ``DtypeLikeInexact``
type alias."""

from typing import Any

from lens.nn.initializers import *  # noqa: F403 - flax.nnx re-exports jax's initializers

DtypeLikeInexact = Any
"""An inexact (floating or complex) dtype, as initializers take (flax.nnx's alias)."""
