"""Pooling (``lens.nn.pooling``, like ``flax.linen.pooling``)."""

from lens.nn._pooling import avg_pool as avg_pool
from lens.nn._pooling import max_pool as max_pool
from lens.nn._pooling import min_pool as min_pool
from lens.nn._pooling import pool as pool
