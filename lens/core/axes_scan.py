"""``jax.lax.scan`` with ``in_axes``/``out_axes`` (``lens.core.axes_scan``).

Like ``flax.core.axes_scan``: the loop body is
``fn(broadcast_in, carry, *args) -> (broadcast_out, carry, ys)``. Arguments are
scanned along their ``in_axes`` (``broadcast`` passes one whole to every
iteration); ``ys`` are stacked along ``out_axes``. ``broadcast_out`` is
loop-invariant: it is computed once, before the loop, and every iteration gets
it as its ``broadcast_in`` (the place to create values the loop then reads).

Example:
    >>> import jax.numpy as jnp
    >>> def body(b, c, x):
    ...     return b + 2, c + 1, 2 * x
    >>> loop = scan(body, in_axes=0, out_axes=0)
    >>> b, c, ys = loop(1, 2, jnp.arange(3))
    >>> int(b), int(c), ys.tolist()
    (3, 5, [0, 2, 4])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from lens.core.lift._loop import first_run
from lens.core.lift._scan import _first, _from_front, _full_prefix, _to_front
from lens.core.lift._util import broadcast, prefix_map

ScanAxis = int | None

__all__ = ["ScanAxis", "broadcast", "build_shaped_array", "scan"]


def build_shaped_array(x: Any, batch_dim: bool = False) -> jax.ShapeDtypeStruct:
    """The abstract value of ``x`` (without its leading axis if ``batch_dim``).

    Keeps the dtype, weak type and sharding (a sharded batch axis is an error).
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
            sharding = None
    return jax.ShapeDtypeStruct(
        shape,
        jnp.result_type(x),
        weak_type=bool(getattr(x, "weak_type", False)),
    )


def _is_bc(a: Any) -> bool:
    return a is broadcast


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

    def scan_fn(broadcast_in: Any, init: Any, *args: Any) -> Any:
        axes = _full_prefix(in_axes, args)
        xs = tuple(
            prefix_map(lambda a, x: () if _is_bc(a) else _to_front(x, a), ax, arg)
            for ax, arg in zip(axes, args)
        )
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

        def full_args(x_slice: tuple) -> tuple:
            return tuple(
                prefix_map(
                    lambda a, full, part: full if _is_bc(a) else part, ax, arg, xa
                )
                for ax, arg, xa in zip(axes, args, x_slice)
            )

        def invariants(carry: Any, x_slice: tuple) -> Any:
            b, _, y = fn(broadcast_in, carry, *full_args(x_slice))
            y_bc = prefix_map(lambda a, v: v if _is_bc(a) else (), out_axes, y)
            return b, y_bc

        x0 = _first(xs, n - 1 if reverse else 0, n)
        broadcast_out, y_bc = first_run(
            invariants, (init, x0), "axes_scan", check=check_constancy_invariants
        )

        def body(carry: Any, x_slice: tuple) -> Any:
            _, carry, y = fn(broadcast_out, carry, *full_args(x_slice))
            return carry, prefix_map(lambda a, v: () if _is_bc(a) else v, out_axes, y)

        carry, ys = jax.lax.scan(
            body,
            init,
            xs,
            length=n,
            reverse=reverse,
            unroll=unroll,
            _split_transpose=_split_transpose,
        )
        ys = prefix_map(
            lambda a, y, yb: yb if _is_bc(a) else _from_front(y, a), out_axes, ys, y_bc
        )
        return broadcast_out, carry, ys

    return scan_fn
