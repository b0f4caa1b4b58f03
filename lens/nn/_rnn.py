"""``RNN``: a cell scanned over time (lengths, reverse, carries), ``flip_sequences``
and ``Bidirectional``; as in Flax Linen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import jax
from jax import random

from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict
from lens._kernels import sequences as seq
from lens.core import CollectionFilter, PRNGSequenceFilter
from lens.nn._module import Module
from lens.nn._recurrent import RNNCellBase
from lens.nn._transforms import scan
from lens.typing import Array, PRNGKey

A = TypeVar("A")
Carry = Any
Output = Any


class RNN(Module):
    """Runs a cell over the time axis with :func:`lens.nn.scan`.

    Inputs are ``(*batch, time, *features)`` (``time_major=True``:
    ``(time, *batch, *features)``). The cell's parameters are shared over time
    (``variable_broadcast='params'``) and live under ``cell``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.nn import LSTMCell
        >>> x = jnp.ones((10, 50, 32))  # (batch, time, features)
        >>> lstm = RNN(LSTMCell(64))
        >>> variables = lstm.init(jax.random.key(0), x)
        >>> lstm.apply(variables, x).shape
        (10, 50, 64)

    Attributes:
      cell: the cell (an :class:`RNNCellBase`).
      time_major: time is the first axis.
      return_carry: also return the final carry: ``(carry, outputs)``.
      reverse: run from the last step to the first (outputs reversed unless
        ``keep_order``). With ``seq_lengths``, padding stays at the end.
      keep_order: with ``reverse``, return outputs in the input order.
      unroll: loop iterations unrolled per scan step.
      variable_axes, variable_broadcast, variable_carry, split_rngs: the
        :func:`lens.nn.scan` options for the cell's variables and rngs.
    """

    cell: RNNCellBase
    time_major: bool = False
    return_carry: bool = False
    reverse: bool = False
    keep_order: bool = False
    unroll: int = 1
    variable_axes: Mapping[CollectionFilter, Any] = FrozenDict()
    variable_broadcast: CollectionFilter = "params"
    variable_carry: CollectionFilter = False
    split_rngs: Mapping[PRNGSequenceFilter, bool] = FrozenDict({"params": False})

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Carry | None = None,
        init_key: PRNGKey | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Output | tuple[Carry, Output]:
        """Runs the cell over ``inputs``; call arguments override the attributes.

        Args:
          inputs: the input sequence.
          initial_carry: the initial carry (default: the cell's
            ``initialize_carry(init_key, ...)``).
          init_key: the key for ``initialize_carry`` (default
            ``jax.random.key(0)``; most cells ignore it).
          seq_lengths: ``(*batch)`` ints; steps past a sequence's length are
            padding. The returned carry is the one after each sequence's last
            real step.
          return_carry, time_major, reverse, keep_order: override the attributes.
        """
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        n_feat = self.cell.num_feature_axes
        time_axis = 0 if time_major else inputs.ndim - (n_feat + 1)
        if time_axis < 0:
            time_axis += inputs.ndim
        if time_major:
            batch_dims = inputs.shape[1:-n_feat]
        else:
            batch_dims = inputs.shape[:time_axis]

        def flip(x: Array) -> Array:
            return seq.flip_sequences(
                x, seq_lengths, num_batch_dims=len(batch_dims), time_major=time_major
            )

        if reverse:
            inputs = jax.tree_util.tree_map(flip, inputs)
        if initial_carry is None:
            if init_key is None:
                init_key = random.key(0)
            input_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
            carry = self.cell.initialize_carry(init_key, input_shape)
        else:
            carry = initial_carry
        slice_carry = seq_lengths is not None and return_carry

        def scan_fn(cell: RNNCellBase, carry: Carry, x: Array) -> Any:
            carry, y = cell(carry, x)
            return carry, ((carry, y) if slice_carry else y)

        scanned = scan(
            scan_fn,
            in_axes=time_axis,
            out_axes=(0, time_axis) if slice_carry else time_axis,
            unroll=self.unroll,
            variable_axes=self.variable_axes,
            variable_broadcast=self.variable_broadcast,
            variable_carry=self.variable_carry,
            split_rngs=self.split_rngs,
        )
        out = scanned(self.cell, carry, inputs)
        if slice_carry:
            _, (carries, outputs) = out
            carry = seq.select_last_carry(carries, seq_lengths)
        else:
            carry, outputs = out
        if reverse and keep_order:
            outputs = jax.tree_util.tree_map(flip, outputs)
        return (carry, outputs) if return_carry else outputs


class RNNBase(Protocol):
    """What :class:`Bidirectional` needs of each direction (an :class:`RNN`)."""

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Carry | None = None,
        init_key: PRNGKey | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Output | tuple[Carry, Output]: ...


class Bidirectional(Module):
    """Runs ``forward_rnn`` forwards and ``backward_rnn`` backwards; merges outputs.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.nn import GRUCell
        >>> layer = Bidirectional(RNN(GRUCell(4)), RNN(GRUCell(4)))
        >>> x = jnp.ones((2, 3, 5))
        >>> variables = layer.init(jax.random.key(0), x)
        >>> layer.apply(variables, x).shape
        (2, 3, 8)

    Attributes:
      forward_rnn, backward_rnn: the two directions (RNNs).
      merge_fn: combines the outputs (default: concatenate features).
      time_major, return_carry: as in :class:`RNN`; the carry is
        ``(forward carry, backward carry)``.
    """

    forward_rnn: RNNBase
    backward_rnn: RNNBase
    merge_fn: Callable[[Array, Array], Array] = seq.concatenate
    time_major: bool = False
    return_carry: bool = False

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Carry | None = None,
        init_key: PRNGKey | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Output | tuple[Carry, Output]:
        """Runs both directions (``reverse``/``keep_order`` are ignored)."""
        time_major = self.time_major if time_major is None else time_major
        return_carry = self.return_carry if return_carry is None else return_carry
        if init_key is not None:
            key_fwd, key_bwd = random.split(init_key)
        else:
            key_fwd = key_bwd = None
        if self.forward_rnn is self.backward_rnn:
            logging.warning(
                "forward_rnn and backward_rnn is the same object, so they will share "
                "parameters."
            )
        common = dict(seq_lengths=seq_lengths, time_major=time_major)
        return seq.both_directions(
            self.forward_rnn,
            self.backward_rnn,
            self.merge_fn,
            inputs,
            initial_carry,
            return_carry,
            dict(common, init_key=key_fwd),
            dict(common, init_key=key_bwd),
        )


show_at_flax_paths(__name__)
