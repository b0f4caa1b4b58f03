"""Recurrent layers (``lens.nn.recurrent``, like ``flax.linen.recurrent``)."""

from typing import Any

from lens._kernels.sequences import flip_sequences as flip_sequences
from lens.nn._recurrent import ConvLSTMCell as ConvLSTMCell
from lens.nn._recurrent import DenseParams as DenseParams
from lens.nn._recurrent import GRUCell as GRUCell
from lens.nn._recurrent import LSTMCell as LSTMCell
from lens.nn._recurrent import MGUCell as MGUCell
from lens.nn._recurrent import OptimizedLSTMCell as OptimizedLSTMCell
from lens.nn._recurrent import RNNCellBase as RNNCellBase
from lens.nn._recurrent import SimpleCell as SimpleCell
from lens.nn._rnn import RNN as RNN
from lens.nn._rnn import Bidirectional as Bidirectional
from lens.nn._rnn import RNNBase as RNNBase

Carry = Any
"""A cell's carry (a pytree of arrays)."""
CarryHistory = Any
"""The carries of every step."""
Output = Any
"""A cell's output at one step."""
