"""``nnx.vmap`` and ``nnx.pmap``: map a function over objects, each argument on
its own axis (``in_axes``; ``StateAxes`` per filter inside one object), new
objects stacked on ``out_axes``; ``transform_metadata`` names the mapped axis
in the variables' sharding annotations. ``shard_map`` shares the body builder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens.core._freeze import FrozenDict
from lens.nnx._graph import Walker, check_graph_modes, frame, path_str
from lens.nnx._picture import Picture, axis_label, without_axis
from lens.nnx._spmd import PARTITION_NAME, add_axis, remove_axis
from lens.nnx._transforms import (
    StateAxes,
    _axes_resolver,
    _Carrier,
    _check_structure,
    _Entry,
    _merge_outputs,
    _rebuild,
    _Skeleton,
    _split_inputs,
    _split_outputs,
    _write_back,
)
from lens.traceback_util import api_boundary

_NO_METADATA: Mapping[str, Any] = FrozenDict({})


class _AxisNames:
    """``transform_metadata={nnx.PARTITION_NAME: name}``: inside the transform,
    ``name`` is taken out of the ``out_sharding`` of every variable mapped on an
    axis; on the way out it is put back, and put into new objects' variables at
    their out axis (so a stack built by vmap says which axis is the stack)."""

    def __init__(self, name: str, transform_metadata: Mapping[str, Any]):
        self.name = name
        self.meta = transform_metadata if PARTITION_NAME in transform_metadata else None
        if transform_metadata and self.meta is None:
            raise ValueError(
                f"nnx.{name}(transform_metadata={dict(transform_metadata)!r}) names no "
                "axis.\nGive transform_metadata={nnx.PARTITION_NAME: 'axis name'}."
            )

    def enter(self, args: tuple, specs: tuple) -> list[tuple[Any, int]]:
        if self.meta is None:
            return []
        w = Walker(_axes_resolver, transform=self.name)
        _, entries = _split_inputs(args, specs, w)
        done = []
        for e in entries:
            if e.leaf is None or e.leaf.variable is None or not _is_axis(e.spec):
                continue
            v = e.leaf.variable
            remove_axis(v, e.spec, self.meta, path_str(e.leaf.path))
            done.append((v, e.spec))
        return done

    def exit(
        self, done: list[tuple[Any, int]], out: Any, out_spec: Any, fr: Any
    ) -> None:
        if self.meta is None:
            return
        seen = set()
        for v, axis in done:
            add_axis(v, axis, self.meta)
            seen.add(id(v))
        w = Walker(_axes_resolver, transform=self.name)
        w.frame = fr
        _split_outputs(out, out_spec, w)
        for lf in w.leaves:
            if lf.variable is not None and id(lf.variable) not in seen:
                if _is_axis(lf.spec):
                    add_axis(lf.variable, lf.spec, self.meta)
                seen.add(id(lf.variable))


def _is_axis(spec: Any) -> bool:
    return isinstance(spec, int) and not isinstance(spec, bool)


def vmap(
    f: Callable[..., Any] | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
    transform_metadata: Mapping[str, Any] = _NO_METADATA,
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
    check_graph_modes("vmap", graph, graph_updates)
    axis_names = _AxisNames("vmap", transform_metadata)
    if f is None:
        return functools.partial(
            vmap,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
            transform_metadata=transform_metadata,
        )

    return _mapped_call(
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


def _mapped_call(
    name: str,
    jax_map: Callable[..., Any],
    f: Callable[..., Any],
    in_axes: Any,
    out_axes: Any,
    axis_names: _AxisNames,
    *,
    check_sizes: bool,
    **map_kwargs: Any,
) -> Callable[..., Any]:
    """``f`` mapped by ``jax_map`` (jax.vmap or jax.pmap) over objects: the
    arguments split per ``in_axes``, the body rebuilt per member, updates written
    back on their input axes and new objects placed on ``out_axes``."""

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        specs = _per_argument(name, "in_axes", in_axes, args)
        walker = Walker(_axes_resolver, describe=_describe_axes, transform=name)
        skel, entries = _split_inputs(args, specs, walker)
        graph_axes = [e.spec for e in entries if e.leaf is not None]
        _check_ranks(entries)
        if check_sizes:
            _check_sizes(entries)
        options = {"in_axes": in_axes, "out_axes": out_axes, **map_kwargs}
        with Picture(name, options) as picture:
            picture.inputs(
                entries,
                [axis_label(e.spec) for e in entries],
                without_axis(lambda e: e.spec),
            )
            new_values, outs = jax_map(
                _mapped_body(
                    name, f, skel, specs, out_axes, _describe_axes, axis_names
                ),
                in_axes=(_Carrier([e.spec for e in entries], None),),
                out_axes=(graph_axes, _strip_state_axes(out_axes)),
                **map_kwargs,
            )(_Carrier([e.value for e in entries], None))
            _write_back(entries, new_values)
            picture.outputs(new_values)
        return _merge_outputs(_place_state_axes(outs), walker.nodes)

    return wrapper


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
    transform_metadata: Mapping[str, Any] = _NO_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.pmap`` for functions of objects, with ``vmap``'s ``in_axes`` rules:
    each object's variables are split over the devices on their axis (``None``:
    replicated), and updates come back the same way."""
    check_graph_modes("pmap", graph, graph_updates)
    axis_names = _AxisNames("pmap", transform_metadata)
    if global_arg_shapes is not None:
        raise TypeError("nnx.pmap: global_arg_shapes was removed from jax.pmap.")
    if static_broadcasted_argnums or donate_argnums:
        raise NotImplementedError(
            "nnx.pmap(static_broadcasted_argnums=..., donate_argnums=...) is not "
            "supported by lens.nnx.\nClose over static values instead, or use "
            "nnx.shard_map / nnx.jit with shardings."
        )
    if f is None:
        return functools.partial(
            pmap,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
            transform_metadata=transform_metadata,
        )

    if any(
        isinstance(s, StateAxes)
        for s in jax.tree.leaves(out_axes, is_leaf=lambda x: isinstance(x, StateAxes))
    ):
        raise NotImplementedError(
            "nnx.pmap: StateAxes in out_axes is not supported; use nnx.vmap."
        )
    return _mapped_call(
        "pmap",
        jax.pmap,
        f,
        in_axes,
        out_axes,
        axis_names,
        check_sizes=False,
        axis_name=axis_name,
        devices=devices,
        backend=backend,
        axis_size=axis_size,
    )


def _per_argument(name: str, option: str, spec: Any, args: tuple) -> tuple:
    """One spec per positional argument: a tuple as given, or one spec for all."""
    specs = spec if isinstance(spec, tuple) else (spec,) * len(args)
    if len(specs) != len(args):
        raise ValueError(
            f"nnx.{name}: {option} has {len(specs)} entries for {len(args)} "
            f"arguments.\nGive one {option} entry per positional argument, as a tuple."
        )
    return specs


def _mapped_body(
    name: str,
    f: Callable[..., Any],
    skel: _Skeleton,
    specs: tuple,
    out_spec: Any,
    describe: Callable[[Any], str],
    axis_names: _AxisNames | None = None,
) -> Callable[[_Carrier], Any]:
    """The pure function a transform with per-argument specs (vmap, shard_map)
    maps: it rebuilds the arguments, calls ``f``, and returns the arguments' new
    graph values and the outputs (new objects as carriers)."""

    def pure(carrier: _Carrier) -> Any:
        with frame(name) as fr:
            args = _rebuild(skel, carrier.values)
            done = axis_names.enter(args, specs) if axis_names else []
            out = f(*args)
            if axis_names:
                axis_names.exit(done, out, out_spec, fr)
            w = Walker(_axes_resolver, describe=describe, transform=name)
            after, entries = _split_inputs(args, specs, w)
            _check_structure(skel, after, name)
            w.frame = fr
            outs = _split_outputs(out, out_spec, w)
        return [e.value for e in entries if e.leaf is not None], outs

    return pure


def _check_ranks(entries: list[_Entry]) -> None:
    for e in entries:
        if e.leaf is None or not isinstance(e.spec, int):
            continue
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


def _entry_name(e: _Entry) -> str:
    if e.leaf is not None:
        kind = (
            type(e.leaf.variable).__name__ if e.leaf.variable is not None else "array"
        )
        return f"{path_str(e.leaf.path)} ({kind})"
    return f"an array in args[{e.arg}]"


def _check_sizes(entries: list[_Entry]) -> None:
    """All mapped values must agree on the mapped size; name two that do not."""
    first: tuple[int, _Entry] | None = None
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
                "nnx.vmap got inconsistent sizes for the mapped axes: "
                f"{_entry_name(a)} has size {first[0]} on axis {a.spec}, "
                f"{_entry_name(e)} has size {size} on axis {e.spec}.\nMap values "
                "of one size; give broadcast ones the axis None (in_axes, or a "
                "StateAxes for a module's variables)."
            )


def _describe_axes(spec: Any) -> str:
    return f"axis {spec!r}"


def _place_state_axes(out: Any) -> Any:
    """Moves the values of new objects returned under a StateAxes to their axes
    (they left ``jax.vmap`` on axis 0; a ``None`` axis keeps one copy)."""

    def place(c: Any) -> Any:
        if not isinstance(c, _Carrier) or c.axes is None:
            return c
        values = [
            v[0] if ax is None else jnp.moveaxis(v, 0, ax)
            for v, ax in zip(c.values, c.axes, strict=True)
        ]
        return _Carrier(values, c.aux)

    return jax.tree.map(place, out, is_leaf=lambda x: isinstance(x, _Carrier))


def _strip_state_axes(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: 0 if isinstance(x, StateAxes) else x,
        tree,
        is_leaf=lambda x: x is None or isinstance(x, StateAxes),
    )


__all__ = ["pmap", "vmap"]
