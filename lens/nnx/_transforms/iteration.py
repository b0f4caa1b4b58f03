"""``nnx.vmap`` and ``nnx.pmap``: map a function over objects, each argument on
its own axis (``in_axes``; ``StateAxes`` per filter inside one object), new
objects stacked on ``out_axes``; ``transform_metadata`` names the mapped axis
in the variables' sharding annotations. ``shard_map`` shares the body builder.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from lens import _strict
from lens._argnums import argnums, out_of_range
from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker, path_str
from lens.nnx._transforms.axes import (
    NO_AXIS_METADATA,
    PARTITION_NAME,
    AxisNames,
    describe_axes,
    place_state_axes,
    strip_state_axes,
)

# flax.nnx defines the loops in transforms.iteration; lens keeps them in loops.py
from lens.nnx._transforms.modes import (
    check_prefix,
    transform_mode,
    with_calling_conventions,
)
from lens.nnx._transforms.pack_trace import (
    Picture,
    axis_label,
    created,
    without_axis,
)
from lens.nnx._transforms.recipe import (
    apply_graph_updates,
    changed_structure,
    check_unmapped_additions,
    merge_outputs,
    rebuild,
    split_args,
    split_outputs,
    write_back,
)
from lens.nnx._transforms.specs import (
    Carrier,
    Entry,
    Skeleton,
    axes_resolver,
)
from lens.nnx.tracers import frame
from lens.traceback_util import api_boundary


def vmap(
    f: Callable[..., Any] | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
    transform_metadata: Mapping[str, Any] = NO_AXIS_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.vmap`` for functions of objects, with JAX's ``in_axes`` conventions.

    An object argument is mapped as a pytree would be: ``in_axes=(1, 0)`` maps the
    first object's variables on axis 1 and the second's on axis 0;
    ``StateAxes({filter: axis, ...})`` gives per-filter axes. Argument objects'
    updates come back on their input axes; objects created inside are returned
    stacked on ``out_axes``. Aliases must be consistent
    (:class:`~lens.errors.InconsistentAliasingError`).
    """
    mode = transform_mode("vmap", f, graph, graph_updates)
    axis_names = AxisNames("vmap", transform_metadata)
    if f is None:
        return functools.partial(
            vmap,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
            transform_metadata=transform_metadata,
            graph=graph,
            graph_updates=graph_updates,
        )

    check_prefix(in_axes, "in_axes", mode)
    check_prefix(out_axes, "out_axes", mode)
    mapped = _mapped_call(
        "vmap",
        jax.vmap,
        f,
        in_axes,
        out_axes,
        axis_names,
        check_sizes=axis_size is None,
        axis_name=axis_name,
        axis_size=axis_size,
        spmd_axis_name=spmd_axis_name,
    )
    return with_calling_conventions(mode, f, mapped)


def _mapped_call(
    name: str,
    jax_map: Callable[..., Any],
    f: Callable[..., Any],
    in_axes: Any,
    out_axes: Any,
    axis_names: AxisNames,
    *,
    check_sizes: bool,
    donate: frozenset[int] = frozenset(),
    **map_kwargs: Any,
) -> Callable[..., Any]:
    """``f`` mapped by ``jax_map`` (jax.vmap or jax.pmap) over objects: the
    arguments split per ``in_axes``, the body rebuilt per member, updates written
    back on their input axes and new objects placed on ``out_axes``. The values
    of the arguments at ``donate`` (pmap's ``donate_argnums``) are donated."""

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        specs = per_argument(name, "in_axes", in_axes, args)
        walker = Walker(axes_resolver, describe=describe_axes, transform=name)
        skel, entries = split_args(args, specs, walker)
        _check_ranks(entries)
        if check_sizes:
            _check_sizes(entries)
        options = {"in_axes": in_axes, "out_axes": out_axes, **map_kwargs}
        if axis_names.meta:
            options["transform_metadata"] = dict(axis_names.meta)

        def run(change: StructureChanged | None) -> Any:
            body = mapped_body(
                name, f, skel, specs, out_axes, describe_axes, axis_names, change
            )
            graph_axes = (
                change.specs
                if change is not None
                else [e.spec for e in entries if e.leaf is not None]
            )
            try:
                if donate:
                    return _donating(jax_map, body, entries, donate)(
                        out_axes=(graph_axes, strip_state_axes(out_axes)),
                        **map_kwargs,
                    )
                return jax_map(
                    body,
                    in_axes=(Carrier([e.spec for e in entries], None),),
                    out_axes=(graph_axes, strip_state_axes(out_axes)),
                    **map_kwargs,
                )(Carrier([e.value for e in entries], None))
            except ValueError as err:
                paths = [e.leaf.path for e in entries if e.leaf is not None]
                raise _name_the_state(err, paths, change, args) from None

        with Picture(name, options, f) as picture:
            picture.inputs(
                entries,
                [axis_label(e.spec) for e in entries],
                without_axis(lambda e: e.spec),
            )
            try:
                new_values, outs = run(None)
            except StructureChanged as change:
                # f built new state in its arguments (an __init__ under vmap): it
                # comes out on its arguments' axes, and the caller's objects get it
                new_values, outs = run(change)
                nodes = apply_graph_updates(
                    [], new_values, change.changed, walker.nodes
                )
                result = merge_outputs(place_state_axes(outs), nodes)
                created(picture, result, out_axes)
                return result
            write_back(entries, new_values)
            picture.outputs(new_values)
            result = merge_outputs(place_state_axes(outs), walker.nodes)
            created(picture, result, out_axes)
        return result

    return wrapper


def _donating(
    jax_map: Callable[..., Any],
    body: Callable[[Carrier], Any],
    entries: list[Entry],
    donate: frozenset[int],
) -> Callable[..., Any]:
    """``jax_map`` of ``body`` called on the entries' values as two carriers, the
    values of the donated arguments first (``donate_argnums=0``), the rest after;
    the body gets them back in the entries' order."""
    given = [e.arg in donate for e in entries]

    def split(xs: list[Any]) -> tuple[Carrier, Carrier]:
        return (
            Carrier([x for x, d in zip(xs, given, strict=True) if d], None),
            Carrier([x for x, d in zip(xs, given, strict=True) if not d], None),
        )

    def two(donated: Carrier, kept: Carrier) -> Any:
        d, k = iter(donated.values), iter(kept.values)
        return body(Carrier([next(d) if g else next(k) for g in given], None))

    def call(**options: Any) -> Any:
        mapped = jax_map(
            two,
            in_axes=split([e.spec for e in entries]),
            donate_argnums=(0,),
            **options,
        )
        return mapped(*split([e.value for e in entries]))

    return call


def _name_the_state(
    err: ValueError,
    paths: list[tuple],
    change: StructureChanged | None,
    args: tuple[Any, ...] = (),
) -> ValueError:
    """JAX's error for a broadcast (axis None) state the function updated with a
    mapped value, naming that state's path; JAX's error for nothing to map,
    showing the user's arguments (not lens's carrier of their state)."""
    msg = str(err)
    empty = re.search(r"got empty \*args=\(.*\) and \*\*kwargs=\{\}", msg)
    if empty is not None and "Carrier" in empty.group(0):
        shown = repr(args)
        shown = shown if len(shown) <= 200 else shown[:199] + "\u2026"
        return ValueError(
            msg[: empty.start()]
            + f"got empty *args={shown} and **kwargs={{}}"
            + msg[empty.end() :]
            + "\nnnx.vmap: give axis_size=, or map an argument holding arrays."
        )
    found = re.search(r"out_axes\[0\]\[(\d+)\]", msg)
    if change is not None or found is None or "got axis spec None" not in msg:
        return err
    k = int(found.group(1))
    if k >= len(paths):
        return err
    return ValueError(
        msg.replace(found.group(0), f"{found.group(0)} (the state at {paths[k]!r})")
        + "\nThe function updated a broadcast variable (axis None) with a mapped "
        "value: map it (give it an axis in in_axes) or do not update it inside."
    )


def pmap(
    f: Callable[..., Any] | None = None,
    *,
    axis_name: Any = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence[Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | Sequence[int] = (),
    global_arg_shapes: Any = None,
    transform_metadata: Mapping[str, Any] = NO_AXIS_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.pmap`` for functions of objects, with ``vmap``'s ``in_axes`` rules:
    each object's variables are split over the devices on their axis (``None``:
    replicated), and updates come back the same way. The arguments at
    ``static_broadcasted_argnums`` are static: hashable Python values given to
    every device as they are (their ``in_axes`` entries are not used), a new value
    a new compilation, as in ``jax.pmap``."""
    mode = transform_mode("pmap", f, graph, graph_updates)
    axis_names = AxisNames("pmap", transform_metadata)
    if global_arg_shapes is not None:
        raise TypeError("nnx.pmap: global_arg_shapes was removed from jax.pmap.")
    if f is None:
        return functools.partial(
            pmap,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            static_broadcasted_argnums=static_broadcasted_argnums,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
            donate_argnums=donate_argnums,
            transform_metadata=transform_metadata,
            graph=graph,
            graph_updates=graph_updates,
        )
    static = argnums(static_broadcasted_argnums, "nnx.pmap: static_broadcasted_argnums")
    donated = argnums(donate_argnums, "nnx.pmap: donate_argnums")
    options = {
        "axis_name": axis_name,
        "devices": devices,
        "backend": backend,
        "axis_size": axis_size,
        "donate": frozenset(donated),
    }
    if not static:
        mapped = _mapped_call(
            "pmap", jax.pmap, f, in_axes, out_axes, axis_names, check_sizes=False,
            **options,
        )  # fmt: skip
        return with_calling_conventions(mode, f, mapped)

    @functools.wraps(f)
    def with_statics(*args: Any) -> Any:
        held = _static_arguments(static, args, f)
        specs = per_argument("pmap", "in_axes", in_axes, args)

        @functools.wraps(f)
        def bound(*dynamic: Any) -> Any:
            return f(*(held[i] if i in held else a for i, a in enumerate(dynamic)))

        # one program per set of static values: the body sees them as constants
        mapped = _mapped_call(
            "pmap",
            jax.pmap,
            bound,
            tuple(None if i in held else spec for i, spec in enumerate(specs)),
            out_axes,
            axis_names,
            check_sizes=False,
            **options,
        )
        return mapped(*(None if i in held else a for i, a in enumerate(args)))

    return with_calling_conventions(mode, f, with_statics)


def _static_arguments(
    static: tuple[int, ...], args: tuple, f: Callable[..., Any]
) -> dict[int, Any]:
    """``{position: value}`` of the static arguments of a call: each position in
    range, each value hashable (``jax.pmap``'s rules, and its errors)."""
    held = {}
    if out_of_range(static, len(args)):
        raise ValueError(
            f"pmapped function has static_broadcasted_argnums={static} but was "
            f"called with only {len(args)} positional arguments. All static "
            "broadcasted arguments must be passed positionally."
        )
    for i in static:
        i %= len(args)
        try:
            hash(args[i])
        except TypeError:
            raise ValueError(
                "Non-hashable static arguments are not supported, as this can lead "
                f"to unexpected cache-misses. Static argument (index {i}) of type "
                f"{type(args[i])} for function {getattr(f, '__name__', f)} is "
                "non-hashable.\nnnx.pmap: pass a hashable value (a tuple, not a "
                "list), or make it a broadcast argument (in_axes None)."
            ) from None
        held[i] = args[i]
    return held


def per_argument(name: str, option: str, spec: Any, args: tuple) -> tuple:
    """One spec per positional argument: a tuple as given, or one spec for all."""
    specs = spec if isinstance(spec, tuple) else (spec,) * len(args)
    if len(specs) != len(args):
        raise ValueError(
            f"nnx.{name}: {option} has {len(specs)} entries for {len(args)} "
            f"arguments.\nGive one {option} entry per positional argument, as a tuple."
        )
    return specs


class StructureChanged(Exception):  # noqa: N818 - a signal, not an error
    """Raised out of a mapped body's trace when ``f`` changed its arguments'
    structure (new variables or submodules, e.g. an ``__init__`` under vmap): the
    transform traces again, mapping the new state out (see :func:`mapped_body`)."""

    def __init__(self, changed: Any, specs: list[Any]):
        super().__init__("structure changed")
        self.changed = changed
        self.specs = specs


def mapped_body(
    name: str,
    f: Callable[..., Any],
    skel: Skeleton,
    specs: tuple,
    out_spec: Any,
    describe: Callable[[Any], str],
    axis_names: AxisNames | None = None,
    expect_change: StructureChanged | None = None,
) -> Callable[[Carrier], Any]:
    """The pure function a transform with per-argument specs (vmap, shard_map)
    maps: it rebuilds the arguments, calls ``f``, and returns the arguments' new
    graph values and the outputs (new objects as carriers).

    If ``f`` changes the arguments' structure, the first trace raises
    :class:`StructureChanged` with the new structure and its values' specs; traced
    again with ``expect_change``, the body returns the new structure's values."""

    def pure(carrier: Carrier) -> Any:
        table: dict[int, Any] = {}
        with frame(name) as fr:
            args = rebuild(skel, carrier.values, table)
            done = axis_names.enter(args, specs) if axis_names else []
            out = f(*args)
            if axis_names:
                # a second trace (the first found new state) is for the values
                # only: the first already ran the Variables' add_axis hooks
                axis_names.exit(
                    done, out, out_spec, fr, args, specs, expect_change is None
                )
            w = Walker(axes_resolver, describe=describe, transform=name)
            after, entries = split_args(args, specs, w)
            changed = changed_structure(skel, after, table, w.nodes)
            if changed is not None and _strict.enabled():
                check_unmapped_additions(name, skel, after, entries)
            if changed is not None and expect_change is None:
                new_specs = [e.spec for e in entries if e.leaf is not None]
                raise StructureChanged(changed, new_specs)
            w.frame = fr
            outs = split_outputs(out, out_spec, w)
        return [e.value for e in entries if e.leaf is not None], outs

    return pure


def _check_ranks(entries: list[Entry]) -> None:
    for e in entries:
        if e.leaf is None or not isinstance(e.spec, int):
            continue
        if not hasattr(e.value, "shape") and not jax.tree.leaves(e.value):
            continue  # a Variable holding an empty pytree (a capture buffer)
        ndim = len(getattr(e.value, "shape", ()))
        if not -ndim <= e.spec < max(ndim, 1) or ndim == 0:
            kind = (
                type(e.leaf.variable).__name__
                if e.leaf.variable is not None
                else "array"
            )
            raise ValueError(
                f"nnx.vmap cannot map {path_str(e.leaf.path)} ({kind}, shape "
                f"{tuple(getattr(e.value, 'shape', ()))}) on axis {e.spec}.\nGive "
                f"that module a StateAxes, e.g. StateAxes({{{kind}: None, ...: "
                f"{e.spec}}}) to broadcast it."
            )


def _entry_name(e: Entry) -> str:
    if e.leaf is not None:
        kind = (
            type(e.leaf.variable).__name__ if e.leaf.variable is not None else "array"
        )
        return f"{path_str(e.leaf.path)} ({kind})"
    return f"an array in args[{e.arg}]"


def _check_sizes(entries: list[Entry]) -> None:
    """All mapped values must agree on the mapped size; name two that do not."""
    first: tuple[int, Entry] | None = None
    for e in entries:
        if not isinstance(e.spec, int) or not hasattr(e.value, "shape"):
            continue
        shape = e.value.shape
        if not -len(shape) <= e.spec < len(shape):
            continue  # jax.vmap reports it
        size = shape[e.spec]
        if first is None:
            first = (size, e)
        elif size != first[0]:
            a = first[1]
            raise ValueError(
                "vmap got inconsistent sizes for array axes to be mapped:\n"
                f"  * {_entry_name(a)} has size {first[0]} on axis {a.spec};\n"
                f"  * {_entry_name(e)} has size {size} on axis {e.spec}.\n"
                "nnx.vmap: map values of one size; give broadcast ones the axis "
                "None (in_axes, or a StateAxes for a module's variables)."
            )


def transform_metadata(
    f: Callable[..., Any] | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    partition: str | None,
    graph: bool | None = None,
) -> Any:
    """``f`` with the axis ``partition`` taken out of its arguments' variables'
    sharding metadata at ``in_axes`` while it runs, and put back (in the
    outputs' at ``out_axes``) after (flax.nnx's ``transform_metadata``): what
    ``vmap(transform_metadata=...)`` does, without mapping.

    Example:
        >>> from lens import nnx
        >>> import jax.numpy as jnp
        >>> p = nnx.Param(jnp.ones((3, 4)))
        >>> p.set_metadata(out_sharding=("layers", "dout"))
        >>> @nnx.transform_metadata(in_axes=0, out_axes=0, partition="layers")
        ... def inner(p):
        ...     return p.get_metadata("out_sharding")
        >>> inner(p), p.get_metadata("out_sharding")
        (('dout',), ('layers', 'dout'))
    """
    if f is None:
        return functools.partial(
            transform_metadata,
            in_axes=in_axes,
            out_axes=out_axes,
            partition=partition,
            graph=graph,
        )
    mode = transform_mode("transform_metadata", f, graph, False)
    names = AxisNames("transform_metadata", {PARTITION_NAME: partition})

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        specs = per_argument("transform_metadata", "in_axes", in_axes, args)
        done = names.enter(args, specs)
        try:
            out = f(*args)
        finally:
            names.exit(done, None, None, None)
        names.exit([], out, out_axes, None)
        return out

    return with_calling_conventions(mode, f, wrapper)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
