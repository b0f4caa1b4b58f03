"""How ``nnx.RNN`` runs a cell over time: an ``nnx.scan`` whose state axes carry
the cell's state through the steps, and the ``broadcast_rngs`` streams given one
key per call, repeated for every step (recurrent dropout's fixed mask); and
``RNNBase``, what ``nnx.Bidirectional`` runs in each direction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from lens.nnx._graph.ops import iter_graph
from lens.nnx._objects.rngs import Rngs, RngStream, SplitBackups
from lens.nnx._transforms.loops import scan
from lens.nnx._transforms.scan_step import Carry
from lens.nnx._transforms.specs import StateAxes
from lens.nnx._variables.filters import All, to_predicate
from lens.nnx._variables.variable import RngState

Array = Any
Output = Any


def broadcast_keys(cell: Any, only: Any, steps: int) -> SplitBackups:
    """Gives each ``only`` stream of ``cell`` one new key (flax's
    ``split_rngs(splits=1, squeeze=True)`` key) repeated for every time step,
    so every step of this call draws the same key (recurrent dropout's fixed
    mask); leaving the ``with`` restores the streams, advanced by one draw."""
    pred = to_predicate(only)
    backups = []
    for path, x in iter_graph(cell):
        if isinstance(x, RngStream) and (
            pred(path, x.key) or pred((*path, "key"), x.key)
        ):
            key = jax.random.split(x(), 1)[0]
            backups.append((x, x.key.value, x.count.value))
            object.__setattr__(x.key, "_raw_value", jnp.broadcast_to(key, (steps,)))
            object.__setattr__(x.count, "_raw_value", jnp.zeros((steps,), jnp.uint32))
    return SplitBackups(backups)


def scan_cell(
    state_axes: Any, broadcast_rngs: Any, unroll: int, lengths: Any
) -> Callable[..., Any]:
    """``step(cell, carry, (xs, t))`` scanned over the time steps (the cell's
    state, rng counts included, comes back updated). With ``lengths`` the carry
    is ``(running, last)``: the cell runs on past a sequence's end, as flax.nnx's
    RNN does (its outputs there are the cell's), and ``last`` keeps the carry of
    each sequence's last step (the carry flax.nnx returns)."""
    broadcast = All(RngState, broadcast_rngs)
    axes = StateAxes({broadcast: 0, **dict(state_axes.items())})

    @scan(in_axes=(axes, Carry, 0), out_axes=(Carry, 0), unroll=unroll)
    def step(cell: Any, carry: Any, x_t: Any) -> Any:
        x, t = x_t
        if lengths is None:
            return cell(carry, x)
        running, last = carry
        new, y = cell(running, x)
        live = t < lengths

        def keep(n: Array, o: Array) -> Array:
            return jnp.where(
                live.reshape(live.shape + (1,) * (n.ndim - live.ndim)), n, o
            )

        return (new, jax.tree.map(keep, new, last)), y

    return step


class RNNBase(Protocol):
    """What :class:`Bidirectional` takes for each direction: a module called on
    a sequence with :class:`RNN`'s keywords."""

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Any = None,
        rngs: Rngs | RngStream | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Output | tuple[Any, Output]: ...
