"""``lazy_init`` (``lens.core.partial_eval``, like ``flax.core.partial_eval``)."""

from lens.core._partial_eval import lazy_init as lazy_init
