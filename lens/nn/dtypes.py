"""dtype helpers (``lens.nn.dtypes``, like ``flax.linen.dtypes``)."""

from lens._kernels.dtypes import canonicalize_dtype as canonicalize_dtype
from lens._kernels.dtypes import promote_dtype as promote_dtype
