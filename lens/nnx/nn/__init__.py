"""Eager layers, in flax.nnx's rooms (``linear``, ``normalization``, ``attention``,
``recurrent``, ``stochastic``, ``activations``, ``lora``, ``dtypes``,
``initializers``)."""

from lens.nnx.nn import dtypes as dtypes
from lens.nnx.nn import initializers as initializers
