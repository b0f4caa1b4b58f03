"""``jax.lax.scan`` with ``in_axes``/``out_axes``: the one loop both scans use.

:func:`scan` is ``lens.core.axes_scan.scan`` (Flax's ``flax.core.axes_scan``): a
plain function scan whose arguments are sliced along their axes. The lifted
:func:`lens.core.lift.scan` runs its loop on the same stages, adding variable
groups and rng keys as more scanned arguments:

1. :class:`ScannedArgs` splits the arguments by their axes: scanned parts move to
   the front (what ``lax.scan`` slices), broadcast parts stay whole.
2. :func:`first_slice` is the first iteration's slice, for the pass before the
   loop (``first_run``) that computes loop-invariant values.
3. :func:`run_loop` runs ``lax.scan`` with the scan options.
4. :func:`scanned_outputs` / :func:`stack_outputs` keep broadcast outputs out of
   the loop, then put the stacked ones on their ``out_axes``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from lens._facades import show_at_flax_paths
from lens.core.lift._loop import first_run
from lens.core.lift._util import broadcast, prefix_map

ScanAxis = int | None


def to_front(tree: Any, axis: Any) -> Any:
    """Every leaf of ``tree`` with its ``axis`` moved to the front."""
    if not axis:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, axis, 0), tree)


def from_front(tree: Any, axis: Any) -> Any:
    """The inverse of :func:`to_front`."""
    if not axis:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, axis), tree)


def full_prefix(prefix: Any, args: tuple) -> tuple:
    """One axis prefix per argument (a single prefix applies to all)."""
    if isinstance(prefix, list):
        prefix = tuple(prefix)
    if isinstance(prefix, tuple):
        if len(prefix) != len(args):
            raise ValueError(
                f"in_axes has {len(prefix)} entries but the function got {len(args)} "
                "scanned arguments; give one axis per argument (or a single int)."
            )
        return prefix
    return (prefix,) * len(args)


def first_slice(tree: Any, i: int, n: int) -> Any:
    """Slice ``i`` of the leading axis, or a zero slice when the axis is empty."""
    if n:
        return jax.tree_util.tree_map(lambda x: x[i], tree)
    return jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape[1:], x.dtype), tree)


def _pick(axis: Any, full: Any, part: Any) -> Any:
    return full if axis is broadcast else part


@dataclasses.dataclass(frozen=True)
class ScannedArgs:
    """Arguments split by their scan axes.

    ``xs`` holds the scanned parts with their axis in front (``None`` where an
    argument is broadcast): ``lax.scan`` slices it. :meth:`merge` rebuilds one
    iteration's arguments from a slice of ``xs`` and the whole broadcast parts.
    """

    axes: tuple
    args: tuple
    xs: tuple

    @classmethod
    def split(cls, in_axes: Any, args: tuple) -> ScannedArgs:
        axes = full_prefix(in_axes, args)
        xs = tuple(
            prefix_map(lambda a, x: None if a is broadcast else to_front(x, a), ax, x)
            for ax, x in zip(axes, args)
        )
        return cls(axes, args, xs)

    def merge(self, x_slice: tuple) -> tuple:
        return tuple(
            prefix_map(_pick, ax, full, part)
            for ax, full, part in zip(self.axes, self.args, x_slice)
        )


@dataclasses.dataclass(frozen=True)
class ScanOptions:
    """The options ``lax.scan`` takes, as both scans pass them."""

    reverse: bool = False
    unroll: int = 1
    split_transpose: bool = False

    def first_index(self, n: int) -> int:
        """The index of the iteration that runs first."""
        return n - 1 if self.reverse else 0


def run_loop(
    body: Callable[..., Any], init: Any, xs: Any, n: int, options: ScanOptions
) -> Any:
    """``lax.scan(body, init, xs)`` for ``n`` iterations."""
    return jax.lax.scan(
        body,
        init,
        xs,
        length=n,
        reverse=options.reverse,
        unroll=options.unroll,
        _split_transpose=options.split_transpose,
    )


def has_broadcast(out_axes: Any) -> bool:
    """Whether some output is marked :data:`broadcast` (loop-invariant)."""
    leaves = jax.tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is broadcast)
    return any(a is broadcast for a in leaves)


def broadcast_outputs(out_axes: Any, ys: Any) -> Any:
    """The outputs marked :data:`broadcast` (``()`` in place of the others)."""
    return prefix_map(lambda a, v: v if a is broadcast else (), out_axes, ys)


def scanned_outputs(out_axes: Any, ys: Any) -> Any:
    """The outputs the loop stacks (``()`` in place of broadcast ones)."""
    if not has_broadcast(out_axes):
        return ys
    return prefix_map(lambda a, v: () if a is broadcast else v, out_axes, ys)


def stack_outputs(out_axes: Any, ys: Any, ys_broadcast: Any) -> Any:
    """Stacked outputs on their ``out_axes``; broadcast ones from the first pass."""
    if has_broadcast(out_axes):
        return prefix_map(
            lambda a, y, yb: yb if a is broadcast else from_front(y, a),
            out_axes,
            ys,
            ys_broadcast,
        )
    if out_axes:
        return prefix_map(lambda a, y: from_front(y, a), out_axes, ys)
    return ys


def build_shaped_array(x: Any, batch_dim: bool = False) -> jax.ShapeDtypeStruct:
    """The abstract value of ``x`` (without its leading axis if ``batch_dim``).

    Keeps the dtype and weak type; a sharded batch axis is an error.
    """
    shape = tuple(jnp.shape(x))
    sharding = getattr(getattr(x, "aval", None), "sharding", None)
    if batch_dim:
        shape = shape[1:]
        if sharding is not None and getattr(sharding, "spec", None) is not None:
            if sharding.spec and sharding.spec[0] is not None:
                raise ValueError(
                    "Batch dimension in scan `xs` cannot be sharded.\nShard another "
                    "axis, or scan over an unsharded one."
                )
    return jax.ShapeDtypeStruct(
        shape,
        jnp.result_type(x),
        weak_type=bool(getattr(x, "weak_type", False)),
    )


def _scan_length(xs: tuple, length: int | None) -> int:
    sizes = {jnp.shape(x)[0] for x in jax.tree_util.tree_leaves(xs)}
    if length is not None:
        sizes.add(length)
    if len(sizes) > 1:
        raise ValueError(
            f"axes_scan: inconsistent scan lengths {sorted(sizes)}.\n"
            "Every scanned argument (and length=, if given) must have the same "
            "size along its scanned axis."
        )
    if not sizes:
        raise ValueError(
            "axes_scan: nothing is scanned, so the number of iterations is "
            "unknown.\nPass length=N."
        )
    (n,) = sizes
    return n


def scan(
    fn: Callable[..., Any],
    in_axes: Any,
    out_axes: Any,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    _split_transpose: bool = False,
    check_constancy_invariants: bool = True,
) -> Callable[..., Any]:
    """Wraps ``fn(broadcast_in, carry, *args)`` in a ``lax.scan`` with axes.

    Args:
      fn: the body, ``(broadcast_in, carry, *args) -> (broadcast_out, carry, ys)``.
      in_axes: the scanned axis of each argument (a prefix tree), or ``broadcast``.
      out_axes: the stacking axis of ``ys`` (a prefix tree), or ``broadcast`` for
        loop-invariant outputs (computed once, like ``broadcast_out``).
      length: the number of iterations (needed when nothing is scanned).
      reverse, unroll, _split_transpose: as in ``jax.lax.scan``.
      check_constancy_invariants: check that ``broadcast_out`` (and broadcast
        ``ys``) do not depend on the carry or the scanned inputs.

    Returns:
      ``scan_fn(broadcast_in, init, *args) -> (broadcast_out, carry, ys)``.
    """
    options = ScanOptions(reverse, unroll, _split_transpose)

    def scan_fn(broadcast_in: Any, init: Any, *args: Any) -> Any:
        scanned = ScannedArgs.split(in_axes, args)
        n = _scan_length(scanned.xs, length)

        # The first iteration's slice is taken inside the traced body, so that
        # first_run drops it with the rest of the body when nothing needs it.
        def invariants(carry: Any, xs: tuple) -> Any:
            x0 = first_slice(xs, options.first_index(n), n)
            b, _, y = fn(broadcast_in, carry, *scanned.merge(x0))
            return b, broadcast_outputs(out_axes, y)

        broadcast_out, y_bc = first_run(
            invariants,
            (init, scanned.xs),
            "axes_scan",
            check=check_constancy_invariants,
        )

        def body(carry: Any, x_slice: tuple) -> Any:
            _, carry, y = fn(broadcast_out, carry, *scanned.merge(x_slice))
            return carry, scanned_outputs(out_axes, y)

        carry, ys = run_loop(body, init, scanned.xs, n, options)
        return broadcast_out, carry, stack_outputs(out_axes, ys, y_bc)

    return scan_fn


show_at_flax_paths(__name__)
