"""The current JAX trace (``lens.core.tracers``, like ``flax.core.tracers``)."""

from lens.core._tracers import check_trace_level as check_trace_level
from lens.core._tracers import current_trace as current_trace
