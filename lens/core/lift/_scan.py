"""``scan``: a lifted ``jax.lax.scan`` with scanned, broadcast and carried variables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens.core._filters import DenyList, Filter, intersect_filters, union_filters
from lens.core._scope import Scope, _copy_tree
from lens.core.lift._loop import first_run, nest_created
from lens.core.lift._pack import _merge, pack
from lens.core.lift._util import (
    _full_prefix,
    add_axis_groups,
    broadcast,
    infer_size,
    prefix_map,
    remove_axis_groups,
    split_keys,
    variable_hint,
)


def _to_front(tree: Any, axis: int) -> Any:
    return (
        jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, axis, 0), tree)
        if axis
        else tree
    )


def _from_front(tree: Any, axis: int) -> Any:
    return (
        jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, axis), tree)
        if axis
        else tree
    )


def scan(
    fn: Callable[..., Any],
    variable_axes: Mapping[Filter, int] = {},  # noqa: B006 - read only
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006 - read only
    in_axes: Any = 0,
    out_axes: Any = 0,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    metadata_params: Mapping[Any, Any] | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.lax.scan``: ``fn(scope, carry, *xs) -> (carry, ys)``.

    Args:
      fn: the loop body; its first argument is a scope.
      variable_axes: collection filter -> axis along which the variables are
        stacked, one slice per iteration (e.g. ``{"params": 0}`` for scan over
        layers).
      variable_broadcast: collections shared by every iteration (read-only in the
        loop). When created, they are initialised once, before the loop; an initial
        value that depends on the loop is an error.
      variable_carry: collections carried from one iteration to the next. They may
        be created inside the body.
      split_rngs: rng filter -> whether each iteration gets its own key.
      in_axes: the scanned axis of each ``xs`` argument, or ``broadcast``.
      out_axes: the axis of the stacked outputs ``ys``.
      length, reverse, unroll: as in ``jax.lax.scan``.
      metadata_params: passed to ``AxisMetadata.add_axis``/``remove_axis``.

    Returns:
      ``wrapper(scope, init_carry, *xs, **kwargs) -> (carry, ys)``.
    """
    scan_filters = tuple(variable_axes.keys())
    scan_axes = tuple(variable_axes.values())
    rng_filters = tuple(split_rngs.keys())
    rng_splits = tuple(split_rngs.values())
    params = dict(metadata_params or {})
    bc_filter = union_filters(variable_broadcast, variable_carry)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, init, *args, **kwargs):
        bcast_vars, carry_vars = variable_groups[0], variable_groups[1]
        scan_vars = remove_axis_groups(variable_groups[2:], scan_axes, params)
        axes = _full_prefix(in_axes, args)
        n = infer_size(axes, args, length, "scan", "length along its in_axes")
        if n is None:
            n = infer_size(
                scan_axes, scan_vars, None, "scan", "length along variable_axes"
            )
        if n is None:
            raise errors.TransformAxisSizeError(
                "scan cannot tell the number of iterations: no argument is scanned.\n"
                "Pass length=N, or scan over an argument with in_axes."
            )
        # Scanned inputs go to the front; broadcast arguments are closed over.
        xs = tuple(
            prefix_map(lambda a, x: None if a is broadcast else _to_front(x, a), ax, x)
            for ax, x in zip(axes, args)
        )
        scan_vars_front = tuple(_to_front(g, a) for g, a in zip(scan_vars, scan_axes))
        split_rngs_xs = tuple(
            split_keys(g, n) if s else None for g, s in zip(rng_groups, rng_splits)
        )

        def merged_args(x_slice: tuple) -> tuple:
            pick = lambda a, full, part: full if a is broadcast else part  # noqa: E731
            return tuple(
                prefix_map(pick, ax, full, part)
                for ax, full, part in zip(axes, args, x_slice)
            )

        def rngs_for(rng_slice: tuple) -> tuple:
            return tuple(
                part if s else g
                for g, s, part in zip(rng_groups, rng_splits, rng_slice)
            )

        # Broadcast and carry collections that may be created: initialise them once,
        # outside the loop, from the first iteration.
        if any(_may_create(m, bc_filter) for m in scope_fn.mutable):
            i0 = n - 1 if reverse else 0
            take = lambda t: jax.tree_util.tree_map(lambda x: x[i0], t)  # noqa: E731
            x0 = take(xs)
            loop_inputs = (init, x0, take(scan_vars_front), take(split_rngs_xs))

            def body0(init, x0, scan0, rng0):
                scope = scope_fn(
                    (bcast_vars, carry_vars) + tuple(scan0), rngs_for(rng0)
                )
                frames = _frames_of(scope)
                for f in frames:
                    f.created = []
                fn(scope, init, *merged_args(x0), **kwargs)
                out = repack_fn(scope)
                created = [
                    nest_created(
                        f.created or [], variable_carry, scope_fn.roots[i].path
                    )
                    for i, f in enumerate(frames)
                ]
                return out[0], tuple(created)

            bcast_new, created = first_run(body0, loop_inputs, "scan")
            bcast_vars = tuple(
                _merge_new(old, new) for old, new in zip(bcast_vars, bcast_new)
            )
            carry_vars = tuple(
                _merge_new(old, new) for old, new in zip(carry_vars, created)
            )

        def body(c, x):
            user_carry, carry_c = c
            x_slice, scan_slice, rng_slice = x
            scope = scope_fn(
                (bcast_vars, carry_c) + tuple(scan_slice),
                rngs_for(rng_slice),
                DenyList(variable_broadcast)
                if variable_broadcast is not False
                else True,
            )
            user_carry, y = fn(scope, user_carry, *merged_args(x_slice), **kwargs)
            out = repack_fn(scope)
            return (user_carry, out[1]), (y, out[2:])

        (carry, carry_out), (ys, scan_out) = jax.lax.scan(
            body,
            (init, carry_vars),
            (xs, scan_vars_front, split_rngs_xs),
            length=n,
            reverse=reverse,
            unroll=unroll,
        )
        ys = (
            prefix_map(lambda a, y: _from_front(y, a), out_axes, ys) if out_axes else ys
        )
        scan_out = tuple(_from_front(g, a) for g, a in zip(scan_out, scan_axes))
        scan_out = add_axis_groups(scan_out, scan_axes, params)
        return (carry, ys), (bcast_vars, carry_out) + scan_out

    return pack(
        inner,
        (variable_broadcast, variable_carry) + scan_filters,
        (variable_broadcast, variable_carry) + scan_filters,
        rng_filters,
        name="scan",
        hint=variable_hint("variable_axes", "0"),
        trace_options=dict(
            variable_axes=variable_axes,
            variable_broadcast=variable_broadcast,
            variable_carry=variable_carry,
            split_rngs=split_rngs,
            in_axes=in_axes,
            out_axes=out_axes,
            length=length,
            reverse=reverse,
            unroll=unroll,
            metadata_params=params,
        ),
        group_labels=["broadcast", "carry"] + [f"axis {a}" for a in scan_axes],
        rng_labels=["split" if s else "shared" for s in rng_splits],
    )


def _may_create(mutable: Filter, f: Filter) -> bool:
    return intersect_filters(mutable, f) is not False


def _frames_of(scope_tree: Any) -> list[Any]:
    frames: list[Any] = []
    for s in jax.tree_util.tree_leaves(
        scope_tree, is_leaf=lambda x: isinstance(x, Scope)
    ):
        if s._frame not in frames:
            frames.append(s._frame)
    return frames


def _merge_new(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out = _copy_tree(old)
    _merge(out, new)
    return out
