"""``lens.nnx`` under its pre-release name (``flax.experimental.nnx``).

Import :mod:`lens.nnx` instead; this module re-exports its public names and logs
a warning once, as Flax does.
"""

import logging

from lens.nnx import *  # noqa: F403 - the whole public API under the old name

logging.getLogger(__name__).warning(
    "Using 'lens.experimental.nnx' (flax.experimental.nnx) is deprecated. "
    "Please use 'lens.nnx' instead."
)
