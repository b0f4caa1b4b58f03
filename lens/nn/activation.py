"""Activations (``lens.nn.activation``, like ``flax.linen.activation``)."""

from lens.nn._activation import *  # noqa: F403
from lens.nn._activation import PReLU as PReLU
