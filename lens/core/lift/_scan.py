"""``scan``: a lifted ``jax.lax.scan`` with scanned, broadcast and carried variables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens.core._filters import (
    DenyList,
    Filter,
    intersect_filters,
    is_filter_empty,
    union_filters,
)
from lens.core._tree import merged
from lens.core.lift._loop import created_in, first_run, record_created
from lens.core.lift._pack import pack
from lens.core.lift._util import (
    _unzip2,
    add_axis_groups,
    broadcast,
    check_variable_axes,
    mapped_sizes,
    prefix_map,
    remove_axis_groups,
    split_in_out_axes,
    split_keys,
    variable_hint,
)


def _to_front(tree: Any, axis: int) -> Any:
    if not axis:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, axis, 0), tree)


def _from_front(tree: Any, axis: int) -> Any:
    if not axis:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, axis), tree)


def _full_prefix(prefix: Any, args: tuple) -> tuple:
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


def _first(tree: Any, i: int, n: int) -> Any:
    """Slice ``i`` of the leading axis, or a zero slice when the axis is empty."""
    if n:
        return jax.tree_util.tree_map(lambda x: x[i], tree)
    return jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape[1:], x.dtype), tree)


def scan(
    fn: Callable[..., Any],
    variable_axes: Mapping[Filter, Any] = {},  # noqa: B006 - read only
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006 - read only
    in_axes: Any = 0,
    out_axes: Any = 0,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    _split_transpose: bool = False,
    data_transform: Callable[..., Any] | None = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006 - read only
    check_constancy_invariants: bool = True,
) -> Callable[..., Any]:
    """A lifted ``jax.lax.scan``: ``fn(scope, carry, *xs) -> (carry, ys)``.

    Args:
      fn: the loop body; its first argument is a scope.
      variable_axes: collection filter -> axis along which the variables are
        stacked, one slice per iteration (e.g. ``{"params": 0}`` for scan over
        layers); ``In``/``Out`` for one direction only.
      variable_broadcast: collections shared by every iteration (read-only in the
        loop). When created, they are initialised once, before the loop; an initial
        value that depends on the loop is an error.
      variable_carry: collections carried from one iteration to the next. Unlike
        Flax, they may be created inside the body.
      split_rngs: rng filter -> whether each iteration gets its own key.
      in_axes: the scanned axis of each ``xs`` argument, or ``broadcast``.
      out_axes: the axis of the stacked outputs ``ys``.
      length, reverse, unroll, _split_transpose: as in ``jax.lax.scan``.
      data_transform: ``f(variable_groups, rng_groups) -> (variable_groups,
        rng_groups)`` applied in the body before the scope is rebuilt.
      metadata_params: passed to ``AxisMetadata.add_axis``/``remove_axis``.
      check_constancy_invariants: check that broadcast variables created in the
        body do not depend on the loop (skip to save a trace).

    Returns:
      ``wrapper(scope, init_carry, *xs, **kwargs) -> (carry, ys)``.
    """
    var_in, var_out = split_in_out_axes(variable_axes)
    scan_filters_in, scan_axes_in = _unzip2(var_in.items())
    scan_filters_out, scan_axes_out = _unzip2(var_out.items())
    rng_filters, rng_splits = _unzip2(split_rngs.items())
    params = dict(metadata_params or {})
    bc_filter = union_filters(variable_broadcast, variable_carry)
    has_broadcast_out = any(
        a is broadcast
        for a in jax.tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is broadcast)
    )

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, init, *args, **kwargs):
        bcast_vars, carry_vars = variable_groups[0], variable_groups[1]
        scan_vars = remove_axis_groups(variable_groups[2:], scan_axes_in, params)
        check_variable_axes(scan_vars, scan_axes_in, "scan")
        axes = _full_prefix(in_axes, args)
        lengths = mapped_sizes(axes, args, "scan")
        if length is None and len(lengths) == 1:
            (n,) = lengths
        elif len(lengths) > 1:
            raise errors.TransformAxisSizeError(
                f"Inconsistent scan lengths: {lengths}\nEvery scanned argument must "
                "have the same length along its in_axes."
            )
        elif length is None:
            sizes = mapped_sizes(scan_axes_in, scan_vars, "scan")
            if len(sizes) != 1:
                raise errors.TransformAxisSizeError(
                    "length should be specified manually.\nscan cannot tell the "
                    "number of iterations: pass length=N, or scan over an argument."
                )
            (n,) = sizes
        else:
            n = length
        # Scanned inputs go to the front; broadcast arguments are closed over.
        xs = tuple(
            prefix_map(lambda a, x: None if a is broadcast else _to_front(x, a), ax, x)
            for ax, x in zip(axes, args)
        )
        scan_front = tuple(_to_front(g, a) for g, a in zip(scan_vars, scan_axes_in))
        split_xs = tuple(
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

        def build_scope(groups: tuple, rngs: tuple, mutable: Any = True) -> Any:
            if data_transform is not None:
                groups, rngs = data_transform(groups, rngs)
            return scope_fn(groups, rngs, mutable)

        # Broadcast and carry collections that may be created, and outputs marked
        # broadcast: computed once, outside the loop, from the first iteration.
        # With check_constancy_invariants (the default) this first pass always
        # runs, as Flax's does: it checks the invariants, and the rng counters
        # advance by it, so the loop draws the keys Flax's loop draws.
        may_create = any(
            not is_filter_empty(intersect_filters(m, bc_filter))
            for m in scope_fn.mutable
        )
        bcast_outs: Any = None
        if check_constancy_invariants or may_create or has_broadcast_out:
            i0 = n - 1 if reverse else 0
            x0 = _first(xs, i0, n)
            scan0 = _first(scan_front, i0, n)
            # The iteration's split keys (with no iterations, any key will do: the
            # values built from it are checked not to depend on it).
            rng0 = tuple(
                ((_first(sx, i0, n) if n else g) if s else None)
                for sx, s, g in zip(split_xs, rng_splits, rng_groups)
            )

            def body0(init, x0, scan0, rng0):
                scope = build_scope(
                    (bcast_vars, carry_vars) + tuple(scan0), rngs_for(rng0)
                )
                shared = record_created(scope_fn)
                _, y = fn(scope, init, *merged_args(x0), **kwargs)
                out = repack_fn(scope)
                y_bcast = prefix_map(
                    lambda a, v: v if a is broadcast else (), out_axes, y
                )
                return (
                    out[0],
                    tuple(created_in(shared, scope_fn, variable_carry)),
                    y_bcast,
                )

            bcast_new, created, bcast_outs = first_run(
                body0, (init, x0, scan0, rng0), "scan", check=check_constancy_invariants
            )
            bcast_vars = tuple(merged(o, b) for o, b in zip(bcast_vars, bcast_new))
            carry_vars = tuple(merged(o, c) for o, c in zip(carry_vars, created))

        body_mutable = (
            True
            if is_filter_empty(variable_broadcast)
            else DenyList(variable_broadcast)
        )

        def body(c, x):
            user_carry, carry_c = c
            x_slice, scan_slice, rng_slice = x
            scope = build_scope(
                (bcast_vars, carry_c) + tuple(scan_slice),
                rngs_for(rng_slice),
                body_mutable,
            )
            user_carry, y = fn(scope, user_carry, *merged_args(x_slice), **kwargs)
            out = repack_fn(scope)
            check_variable_axes(out[2:], scan_axes_out, "scan", out=True)
            if has_broadcast_out:
                y = prefix_map(lambda a, v: () if a is broadcast else v, out_axes, y)
            return (user_carry, out[1]), (y, out[2:])

        (carry, carry_out), (ys, scan_out) = jax.lax.scan(
            body,
            (init, carry_vars),
            (xs, scan_front, split_xs),
            length=n,
            reverse=reverse,
            unroll=unroll,
            _split_transpose=_split_transpose,
        )
        if has_broadcast_out:
            ys = prefix_map(
                lambda a, c, y: c if a is broadcast else _from_front(y, a),
                out_axes,
                bcast_outs,
                ys,
            )
        elif out_axes:
            ys = prefix_map(lambda a, y: _from_front(y, a), out_axes, ys)
        scan_out = tuple(_from_front(g, a) for g, a in zip(scan_out, scan_axes_out))
        scan_out = add_axis_groups(scan_out, scan_axes_out, params)
        return (carry, ys), (bcast_vars, carry_out) + scan_out

    return pack(
        inner,
        (variable_broadcast, variable_carry) + scan_filters_in,
        (variable_broadcast, variable_carry) + scan_filters_out,
        rng_filters,
        name="scan",
        enable_kwargs=True,
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
        group_labels=["broadcast", "carry"] + [f"axis {a}" for a in scan_axes_in],
        rng_labels=["split" if s else "shared" for s in rng_splits],
    )
