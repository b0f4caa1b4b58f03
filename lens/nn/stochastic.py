"""Stochastic layers (``lens.nn.stochastic``, like ``flax.linen.stochastic``)."""

from lens.nn._stochastic import Dropout as Dropout
