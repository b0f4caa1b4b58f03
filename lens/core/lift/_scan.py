"""``scan``: a lifted ``jax.lax.scan`` with scanned, broadcast and carried variables."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from lens import errors
from lens.core._axes import CARRY, KEYWORD, CallAxes, arg_names, per_argument
from lens.core._filters import (
    DenyList,
    Filter,
    intersect_filters,
    is_filter_empty,
    union_filters,
)
from lens.core._tree import merged
from lens.core.lift._axes_scan import (
    ScannedArgs,
    ScanOptions,
    broadcast_outputs,
    first_slice,
    from_front,
    full_prefix,
    has_broadcast,
    run_loop,
    scanned_outputs,
    stack_outputs,
    to_front,
)
from lens.core.lift._loop import created_in, first_run, record_created
from lens.core.lift._pack import pack
from lens.core.lift._util import (
    _unzip2,
    add_axis_groups,
    check_variable_axes,
    mapped_sizes,
    remove_axis_groups,
    split_in_out_axes,
    split_keys,
    variable_hint,
)


@dataclasses.dataclass(frozen=True)
class _ScanSpec:
    """What ``scan``'s arguments say, fixed when the transform is built."""

    fn: Callable[..., Any]
    variable_broadcast: Filter
    variable_carry: Filter
    scan_axes_in: tuple
    scan_axes_out: tuple
    rng_splits: tuple
    in_axes: Any
    out_axes: Any
    length: int | None
    options: ScanOptions
    data_transform: Callable[..., Any] | None
    params: dict[Any, Any]
    check: bool

    @property
    def body_mutable(self) -> Any:
        """Inside the loop, every collection but the broadcast ones may change."""
        if is_filter_empty(self.variable_broadcast):
            return True
        return DenyList(self.variable_broadcast)


@dataclasses.dataclass(frozen=True)
class _ScanCall:
    """One call of the lifted scan: what every iteration's body needs."""

    spec: _ScanSpec
    scope_fn: Any
    repack_fn: Any
    rng_groups: tuple
    args: ScannedArgs
    kwargs: dict[str, Any]

    def rngs_for(self, rng_slice: tuple) -> tuple:
        """Each rng group: the iteration's split key, or the shared group."""
        return tuple(
            part if s else g
            for g, s, part in zip(self.rng_groups, self.spec.rng_splits, rng_slice)
        )

    def scope(self, groups: tuple, rng_slice: tuple, mutable: Any = True) -> Any:
        """The scope of one iteration, from its variable groups and rngs."""
        rngs = self.rngs_for(rng_slice)
        if self.spec.data_transform is not None:
            groups, rngs = self.spec.data_transform(groups, rngs)
        return self.scope_fn(groups, rngs, mutable)

    def step(self, scope: Any, carry: Any, x_slice: tuple) -> tuple[Any, Any, Any]:
        """Runs the body in ``scope``: ``(carry, ys, repacked variable groups)``."""
        carry, y = self.spec.fn(scope, carry, *self.args.merge(x_slice), **self.kwargs)
        return carry, y, self.repack_fn(scope)


def _scan_length(spec: _ScanSpec, args: tuple, scan_vars: tuple) -> int:
    """The number of iterations: from the scanned arguments, ``length=``, or the
    scanned variables, in that order."""
    lengths = mapped_sizes(full_prefix(spec.in_axes, args), args, "scan")
    if spec.length is None and len(lengths) == 1:
        (n,) = lengths
        return n
    if len(lengths) > 1:
        raise errors.TransformAxisSizeError(
            f"Inconsistent scan lengths: {lengths}\nEvery scanned argument must "
            "have the same length along its in_axes."
        )
    if spec.length is not None:
        return spec.length
    sizes = mapped_sizes(spec.scan_axes_in, scan_vars, "scan")
    if len(sizes) != 1:
        raise errors.TransformAxisSizeError(
            "length should be specified manually.\nscan cannot tell the "
            "number of iterations: pass length=N, or scan over an argument."
        )
    (n,) = sizes
    return n


def _needs_first_pass(spec: _ScanSpec, scope_fn: Any) -> bool:
    """Whether the body runs once before the loop.

    It must when a broadcast or carry collection may be created (the loop's carry
    has a fixed structure) or an output is marked broadcast. With
    ``check_constancy_invariants`` (the default) it always runs, as Flax's does:
    it checks the invariants, and the rng counters advance by it, so the loop
    draws the keys Flax's loop draws.
    """
    bc_filter = union_filters(spec.variable_broadcast, spec.variable_carry)
    may_create = any(
        not is_filter_empty(intersect_filters(m, bc_filter)) for m in scope_fn.mutable
    )
    return spec.check or may_create or has_broadcast(spec.out_axes)


def _first_pass(
    call: _ScanCall,
    groups: tuple,
    init: Any,
    scan_front: tuple,
    split_xs: tuple,
    n: int,
) -> tuple[tuple, tuple, Any]:
    """The body once, on the first iteration, outside the loop.

    Returns the broadcast groups with what it created, the carry groups with the
    initial values of what it created, and the outputs marked broadcast.
    """
    bcast_vars, carry_vars = groups
    spec = call.spec
    i0 = spec.options.first_index(n)

    # The iteration's split keys come from the split ones (with no iterations, any
    # key will do: the values built from it are checked not to depend on it).
    rngs = tuple(
        ((sx if n else g) if s else None)
        for sx, s, g in zip(split_xs, spec.rng_splits, call.rng_groups)
    )

    # The first iteration's slices are taken inside the traced body, so that
    # first_run drops them with the rest of the body when nothing needs them.
    def body0(init: Any, xs: tuple, scan_front: tuple, rngs: tuple) -> Any:
        x0 = first_slice(xs, i0, n)
        scan0 = first_slice(scan_front, i0, n)
        rng0 = tuple(first_slice(r, i0, n) if n else r for r in rngs)
        scope = call.scope((bcast_vars, carry_vars) + tuple(scan0), rng0)
        shared = record_created(call.scope_fn)
        _, y, out = call.step(scope, init, x0)
        created = created_in(shared, call.scope_fn, spec.variable_carry)
        return out[0], tuple(created), broadcast_outputs(spec.out_axes, y)

    bcast_new, created, bcast_outs = first_run(
        body0,
        (init, call.args.xs, scan_front, rngs),
        "scan",
        check=spec.check,
        roots=call.scope_fn.roots,
    )
    bcast_vars = tuple(merged(o, b) for o, b in zip(bcast_vars, bcast_new))
    carry_vars = tuple(merged(o, c) for o, c in zip(carry_vars, created))
    return bcast_vars, carry_vars, bcast_outs


def _loop(
    call: _ScanCall,
    groups: tuple,
    init: Any,
    scan_front: tuple,
    split_xs: tuple,
    n: int,
) -> tuple[Any, Any, Any, tuple]:
    """The ``lax.scan``: ``(carry, carry groups, stacked ys, scanned groups)``,
    the stacked values with their scan axis in front."""
    bcast_vars, carry_vars = groups
    spec = call.spec

    def body(c: Any, x: Any) -> Any:
        user_carry, carry_c = c
        x_slice, scan_slice, rng_slice = x
        groups = (bcast_vars, carry_c) + tuple(scan_slice)
        scope = call.scope(groups, rng_slice, spec.body_mutable)
        user_carry, y, out = call.step(scope, user_carry, x_slice)
        check_variable_axes(out[2:], spec.scan_axes_out, "scan", out=True)
        return (user_carry, out[1]), (scanned_outputs(spec.out_axes, y), out[2:])

    (carry, carry_out), (ys, scan_out) = run_loop(
        body, (init, carry_vars), (call.args.xs, scan_front, split_xs), n, spec.options
    )
    return carry, carry_out, ys, scan_out


def _scan_body(
    spec: _ScanSpec,
    scope_fn: Any,
    repack_fn: Any,
    variable_groups: tuple,
    rng_groups: tuple,
    init: Any,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """``pack``'s inner function: the variable groups are (broadcast, carry,
    scanned...); scanned groups and arguments go in with their axis in front."""
    groups = (variable_groups[0], variable_groups[1])
    scan_vars = remove_axis_groups(variable_groups[2:], spec.scan_axes_in, spec.params)
    check_variable_axes(scan_vars, spec.scan_axes_in, "scan")
    n = _scan_length(spec, args, scan_vars)
    call = _ScanCall(
        spec,
        scope_fn,
        repack_fn,
        rng_groups,
        ScannedArgs.split(spec.in_axes, args),
        kwargs,
    )
    scan_front = tuple(to_front(g, a) for g, a in zip(scan_vars, spec.scan_axes_in))
    split_xs = tuple(
        split_keys(g, n) if s else None for g, s in zip(rng_groups, spec.rng_splits)
    )
    bcast_outs: Any = None
    if _needs_first_pass(spec, scope_fn):
        *groups, bcast_outs = _first_pass(call, groups, init, scan_front, split_xs, n)
        groups = tuple(groups)
    carry, carry_out, ys, scan_out = _loop(call, groups, init, scan_front, split_xs, n)
    ys = stack_outputs(spec.out_axes, ys, bcast_outs)
    scan_out = tuple(from_front(g, a) for g, a in zip(scan_out, spec.scan_axes_out))
    scan_out = add_axis_groups(scan_out, spec.scan_axes_out, spec.params)
    return (carry, ys), (groups[0], carry_out) + scan_out


def _trace_options(
    spec: _ScanSpec, variable_axes: Mapping[Filter, Any], split_rngs: Any
) -> dict[str, Any]:
    """The options a pack trace records for this scan."""
    return dict(
        variable_axes=variable_axes,
        variable_broadcast=spec.variable_broadcast,
        variable_carry=spec.variable_carry,
        split_rngs=split_rngs,
        in_axes=spec.in_axes,
        out_axes=spec.out_axes,
        length=spec.length,
        reverse=spec.options.reverse,
        unroll=spec.options.unroll,
        metadata_params=spec.params,
    )


def _call_axes(spec: _ScanSpec, args: tuple, kwargs: dict) -> CallAxes:
    """How one call goes, for traces: the first argument is carried step to step,
    the ``xs`` after it split along ``in_axes``, keyword arguments passed whole;
    the carry comes out of the last step and ``ys`` stacked on ``out_axes``."""
    names = arg_names(spec.fn, len(args))
    xs_axes = per_argument(spec.in_axes, args[1:])
    ins = [(names[0], CARRY)] if args else []
    ins += list(zip(names[1:], xs_axes))
    ins += [(k, KEYWORD) for k in kwargs]
    return CallAxes(ins, [("carry", CARRY), ("ys", spec.out_axes)])


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
    spec = _ScanSpec(
        fn=fn,
        variable_broadcast=variable_broadcast,
        variable_carry=variable_carry,
        scan_axes_in=scan_axes_in,
        scan_axes_out=scan_axes_out,
        rng_splits=rng_splits,
        in_axes=in_axes,
        out_axes=out_axes,
        length=length,
        options=ScanOptions(reverse, unroll, _split_transpose),
        data_transform=data_transform,
        params=params,
        check=check_constancy_invariants,
    )
    return pack(
        functools.partial(_scan_body, spec),
        (variable_broadcast, variable_carry) + scan_filters_in,
        (variable_broadcast, variable_carry) + scan_filters_out,
        rng_filters,
        name="scan",
        enable_kwargs=True,
        hint=variable_hint("variable_axes", "0"),
        trace_options=_trace_options(spec, variable_axes, split_rngs),
        group_labels=["broadcast", "carry"] + [f"axis {a}" for a in scan_axes_in],
        rng_labels=["split" if s else "shared" for s in rng_splits],
        trace_args=functools.partial(_call_axes, spec),
    )
