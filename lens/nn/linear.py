"""Linear layers (``lens.nn.linear``, like ``flax.linen.linear``)."""

from lens._kernels.dtypes import promote_dtype as promote_dtype
from lens._kernels.linear import canonicalize_padding as canonicalize_padding
from lens.nn._conv import Conv as Conv
from lens.nn._conv import ConvLocal as ConvLocal
from lens.nn._conv import ConvTranspose as ConvTranspose
from lens.nn._conv import _Conv as _Conv
from lens.nn._linear import Dense as Dense
from lens.nn._linear import DenseGeneral as DenseGeneral
from lens.nn._linear import Einsum as Einsum
from lens.nn._linear import Embed as Embed
from lens.nn._linear import default_embed_init as default_embed_init
from lens.nn._linear import default_kernel_init as default_kernel_init
from lens.typing import PaddingLike as PaddingLike
from lens.typing import PrecisionLike as PrecisionLike
from lens.typing import PromoteDtypeFn as PromoteDtypeFn
