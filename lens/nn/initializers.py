"""Initializers (``lens.nn.initializers``, like ``flax.linen.initializers``).

JAX's own initializers, so the same key gives the same values as in Flax; see
:mod:`lens.core.nn.initializers`.
"""

from lens.core.nn.initializers import *  # noqa: F403
from lens.core.nn.initializers import Initializer as Initializer
from lens.core.nn.initializers import ones as ones
from lens.core.nn.initializers import ones_init as ones_init
from lens.core.nn.initializers import zeros as zeros
from lens.core.nn.initializers import zeros_init as zeros_init
