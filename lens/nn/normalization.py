"""Normalization layers (``lens.nn.normalization``, like ``flax.linen.normalization``)."""

from lens.nn._normalization import BatchNorm as BatchNorm
from lens.nn._normalization import GroupNorm as GroupNorm
from lens.nn._normalization import InstanceNorm as InstanceNorm
from lens.nn._normalization import LayerNorm as LayerNorm
from lens.nn._normalization import RMSNorm as RMSNorm
from lens.nn._normalization import SpectralNorm as SpectralNorm
from lens.nn._normalization import WeightNorm as WeightNorm
from lens.nn._normalization import _l2_normalize as _l2_normalize
