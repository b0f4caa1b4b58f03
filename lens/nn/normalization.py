"""Normalization layers (``lens.nn.normalization``, like ``flax.linen.normalization``)."""

# Besides the layers, the names flax.linen.normalization binds at its top level
# (ported code imports them from here).
from dataclasses import field as field

from lens._kernels.dtypes import canonicalize_dtype as canonicalize_dtype
from lens._kernels.dtypes import merge_param as merge_param
from lens.nn._normalization import BatchNorm as BatchNorm
from lens.nn._normalization import GroupNorm as GroupNorm
from lens.nn._normalization import InstanceNorm as InstanceNorm
from lens.nn._normalization import LayerNorm as LayerNorm
from lens.nn._normalization import RMSNorm as RMSNorm
from lens.nn._transforms import map_variables as map_variables
from lens.nn._weight_norms import SpectralNorm as SpectralNorm
from lens.nn._weight_norms import WeightNorm as WeightNorm
from lens.nn._weight_norms import _l2_normalize as _l2_normalize
from lens.nn.module import Module as Module
from lens.nn.module import compact as compact
