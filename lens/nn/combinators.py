"""Combinators (``lens.nn.combinators``, like ``flax.linen.combinators``)."""

from lens.nn._combinators import Sequential as Sequential
