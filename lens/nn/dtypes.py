"""dtype helpers (``lens.nn.dtypes``, like ``flax.linen.dtypes``)."""

from lens.nn._dtypes import canonicalize_dtype as canonicalize_dtype
from lens.nn._dtypes import promote_dtype as promote_dtype
