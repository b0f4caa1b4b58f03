"""Sequence helpers shared by lens.nn's and lens.nnx's recurrent layers: reversing
padded sequences, the carry after each sequence's last real step, and running a
forward and a backward RNN side by side (``Bidirectional``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

Array = Any
A = TypeVar("A")


def select_last_carry(sequence: A, seq_lengths: Array) -> A:
    """The carry after each sequence's last real step (carries stacked on axis 0)."""
    last = jnp.asarray(seq_lengths) - 1

    def pick(x: Array) -> Array:
        return x[last, jnp.arange(x.shape[1])]

    return jax.tree_util.tree_map(pick, sequence)


def expand_dims_like(x: Array, target: Array) -> Array:
    """``x`` with trailing unit axes up to ``target``'s rank."""
    return x.reshape(list(x.shape) + [1] * (target.ndim - x.ndim))


def flip_sequences(
    inputs: Array,
    seq_lengths: Array | None,
    num_batch_dims: int,
    time_major: bool,
) -> Array:
    """Reverses each sequence's first ``seq_length`` steps; padding stays at the end.

    Example:
        >>> import jax.numpy as jnp
        >>> x = jnp.array([[1, 0, 0], [2, 3, 0], [4, 5, 6]])
        >>> flip_sequences(x, jnp.array([1, 2, 3]), 1, False).tolist()
        [[1, 0, 0], [3, 2, 0], [6, 5, 4]]
    """
    time_axis = 0 if time_major else num_batch_dims
    steps = inputs.shape[time_axis]
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    seq_lengths = jnp.expand_dims(seq_lengths, axis=time_axis)
    idxs = jnp.arange(steps - 1, -1, -1)
    if time_major:
        idxs = jnp.reshape(idxs, [steps] + [1] * num_batch_dims)
    else:
        idxs = jnp.reshape(idxs, [1] * num_batch_dims + [steps])
    idxs = (idxs + seq_lengths) % steps
    return jnp.take_along_axis(inputs, expand_dims_like(idxs, inputs), axis=time_axis)


def _concatenate(a: Array, b: Array) -> Array:
    """Concatenates two arrays along the last dimension (Bidirectional's merge)."""
    return jnp.concatenate([a, b], axis=-1)


# the default merge_fn, named as flax's (Bidirectional's repr shows it)
concatenate = _concatenate


def both_directions(
    forward: Callable[..., Any],
    backward: Callable[..., Any],
    merge_fn: Callable[[Array, Array], Array],
    inputs: Array,
    initial_carry: tuple[Any, Any] | None,
    return_carry: bool,
    forward_kwargs: Mapping[str, Any],
    backward_kwargs: Mapping[str, Any],
) -> Any:
    """Runs ``forward`` over ``inputs`` and ``backward`` over them reversed (outputs
    kept in input order), and merges the outputs step by step with ``merge_fn``."""
    carry_f, carry_b = initial_carry if initial_carry is not None else (None, None)
    carry_f, out_f = forward(
        inputs,
        initial_carry=carry_f,
        return_carry=True,
        reverse=False,
        **forward_kwargs,
    )
    carry_b, out_b = backward(
        inputs,
        initial_carry=carry_b,
        return_carry=True,
        reverse=True,
        keep_order=True,
        **backward_kwargs,
    )
    outputs = jax.tree_util.tree_map(merge_fn, out_f, out_b)
    return ((carry_f, carry_b), outputs) if return_carry else outputs
