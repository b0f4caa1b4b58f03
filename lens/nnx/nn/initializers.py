"""flax.nnx's ``nn.initializers``: JAX's initializers, plus ``zeros_init`` and
``ones_init`` (lens.nn's, the same functions)."""

from lens.nn.initializers import *  # noqa: F403 - flax.nnx re-exports jax's initializers
