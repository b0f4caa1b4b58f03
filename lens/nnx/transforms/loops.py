"""Loops over objects: ``scan`` (with ``Carry``), ``while_loop`` and ``fori_loop``.

They follow the recipe of :mod:`lens.nnx.transforms.general`: object state is
carried (or, for ``scan``, scanned or broadcast per ``in_axes``/``StateAxes``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens.nnx.graphwalk import Walker, check_graph_modes, path_str
from lens.nnx.tracers import frame
from lens.nnx.transforms.axes import NO_AXIS_METADATA, AxisNames
from lens.nnx.transforms.general import (
    Entry,
    GraphArg,
    axes_resolver,
    check_structure,
    lift_args,
    merge_outputs,
    rebuild,
    split_args,
    split_outputs,
    wrap_objects,
    write_back,
)
from lens.nnx.transforms.pack_trace import Picture, axis_label, without_axis
from lens.traceback_util import api_boundary


class Carry:
    """``in_axes``/``out_axes`` marker of :func:`scan`: this argument (and the
    output in the same place) is the loop carry."""

    def __init__(self) -> None:
        raise TypeError("nnx.Carry is a marker: use the class itself, not Carry().")


def _same_tree(args: Any, entries: list[Entry], new_values: list[Any]) -> Any:
    """``args`` with its plain leaves replaced by ``new_values`` (graph objects are
    kept: their values are written back separately)."""
    plain = iter(v for e, v in zip(entries, new_values, strict=True) if e.leaf is None)
    wrapped = wrap_objects(args)
    leaves, treedef = jax.tree.flatten(
        wrapped, is_leaf=lambda x: isinstance(x, GraphArg)
    )
    out = [x.node if isinstance(x, GraphArg) else next(plain) for x in leaves]
    return jax.tree.unflatten(treedef, out)


def _loop_values(
    name: str, skel: Any, value: Any, static: frozenset[int] = frozenset()
) -> list[Any]:
    """The values of ``value`` (a loop carry), checked to keep ``skel``'s structure."""
    w = Walker(transform=name)
    after, entries = split_args((value,), (None,), w, static)
    if after != skel:
        raise errors.GraphStructureError(
            f"nnx.{name}: the loop body must return a value with the structure of "
            "its input (the same pytree, the same objects' variables, the same "
            "statics).\nReturn the updated carry in the input's form; create "
            "submodules and variables before the loop."
        )
    return [e.value for e in entries]


@api_boundary
def while_loop(
    cond_fun: Callable[[Any], Any],
    body_fun: Callable[[Any], Any],
    init_val: Any,
    *,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.lax.while_loop`` whose carry may hold objects: ``body_fun`` updates
    them (in place or by returning them); their final values come back."""
    check_graph_modes("while_loop", graph, graph_updates)
    skel, entries, _ = lift_args("while_loop", (init_val,))

    def body(values: list[Any]) -> list[Any]:
        with frame("while_loop"):
            (val,) = rebuild(skel, values)
            return _loop_values("while_loop", skel, body_fun(val))

    def test(values: list[Any]) -> Any:
        with frame("while_loop"):
            (val,) = rebuild(skel, values)
            return cond_fun(val)

    with Picture("while_loop", {}) as picture:
        picture.whole(entries, "carry")
        final = jax.lax.while_loop(test, body, [e.value for e in entries])
    graph_values = [v for e, v in zip(entries, final, strict=True) if e.leaf]
    write_back(entries, graph_values)
    picture.outputs(graph_values)
    return _same_tree((init_val,), entries, final)[0]


@api_boundary
def fori_loop(
    lower: int,
    upper: int,
    body_fun: Callable[[Any, Any], Any],
    init_val: Any,
    *,
    unroll: int | bool | None = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.lax.fori_loop`` whose carry may hold objects (see :func:`while_loop`);
    with static bounds it is reverse-differentiable, as JAX's is."""
    check_graph_modes("fori_loop", graph, graph_updates)
    skel, entries, _ = lift_args("fori_loop", (init_val,))

    def body(i: Any, values: list[Any]) -> list[Any]:
        with frame("fori_loop"):
            (val,) = rebuild(skel, values)
            return _loop_values("fori_loop", skel, body_fun(i, val))

    kw = {} if unroll is None else {"unroll": unroll}
    with Picture("fori_loop", {"lower": lower, "upper": upper}) as picture:
        picture.whole(entries, "carry")
        final = jax.lax.fori_loop(lower, upper, body, [e.value for e in entries], **kw)
    graph_values = [v for e, v in zip(entries, final, strict=True) if e.leaf]
    write_back(entries, graph_values)
    picture.outputs(graph_values)
    return _same_tree((init_val,), entries, final)[0]


def _describe(spec: Any) -> str:
    return "the carry" if spec is Carry else f"axis {spec!r}"


def scan(
    f: Callable[..., Any] | None = None,
    *,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
    in_axes: Any = (Carry, 0),
    out_axes: Any = (Carry, 0),
    transform_metadata: Mapping[str, Any] = NO_AXIS_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.lax.scan`` for functions of objects, with ``in_axes``/``out_axes``.

    Each argument is the loop carry (``nnx.Carry``), scanned over an axis (an
    int: its arrays, and an object's variables, are sliced per step; their
    updates come back stacked on that axis), or broadcast (``None``: the same at
    every step, not updated). ``StateAxes`` gives per-filter choices inside one
    object. The function returns what ``out_axes`` describes: the new carry where
    it says ``Carry``, and per-step outputs stacked on the given axis elsewhere.

    The layer-stack pattern::

        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def forward(x, block):
            return block(x)
    """
    check_graph_modes("scan", graph, graph_updates)
    axis_names = AxisNames("scan", transform_metadata)
    if f is None:
        return functools.partial(
            scan,
            length=length,
            reverse=reverse,
            unroll=unroll,
            in_axes=in_axes,
            out_axes=out_axes,
            transform_metadata=transform_metadata,
        )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        n = len(args)
        specs = in_axes if isinstance(in_axes, tuple) else (in_axes,) * n
        if len(specs) != n:
            raise ValueError(
                f"nnx.scan: in_axes has {len(specs)} entries for {n} arguments."
            )
        carry_pos = [i for i, s in enumerate(specs) if s is Carry]
        if len(carry_pos) > 1:
            raise ValueError("nnx.scan: in_axes may name nnx.Carry once.")
        out_is_tuple = isinstance(out_axes, tuple)
        outs_spec = out_axes if out_is_tuple else (out_axes,)
        out_carry = [i for i, s in enumerate(outs_spec) if s is Carry]
        if bool(carry_pos) != bool(out_carry) or len(out_carry) > 1:
            raise ValueError(
                "nnx.scan: nnx.Carry must appear once in in_axes and once in "
                f"out_axes, or in neither (in_axes={in_axes!r}, out_axes={out_axes!r})."
            )
        for s in outs_spec:
            if s is not Carry and not isinstance(s, int):
                raise ValueError(
                    f"nnx.scan: out_axes entries are nnx.Carry or ints, got {s!r}."
                )
        walker = Walker(axes_resolver, describe=_describe, transform="scan")
        skel, entries = split_args(args, specs, walker)
        kinds = []
        sizes: set[int] = set()
        for e in entries:
            if e.spec is Carry:
                kinds.append("carry")
            elif e.spec is None:
                kinds.append("broadcast")
            else:
                ndim = jnp.ndim(e.value)
                if not -ndim <= e.spec < max(ndim, 1) or ndim == 0:
                    where = path_str(e.leaf.path) if e.leaf else f"argument {e.arg}"
                    raise ValueError(
                        f"nnx.scan cannot scan {where} (shape {jnp.shape(e.value)}) "
                        f"over axis {e.spec}.\nGive it in_axes None (broadcast) or "
                        "nnx.Carry, or a StateAxes for that object."
                    )
                kinds.append("scan")
                sizes.add(jnp.shape(e.value)[e.spec])
        if length is not None:
            sizes.add(length)
        if len(sizes) != 1:
            raise ValueError(
                "nnx.scan needs one length: "
                + (
                    f"the scanned axes have sizes {sorted(sizes)}."
                    if sizes
                    else "nothing is scanned; pass length=."
                )
            )
        carry_skel = None
        if carry_pos:
            w = Walker(transform="scan")
            carry_skel, _ = split_args((args[carry_pos[0]],), (None,), w)
        bcast = [
            e.value for e, k in zip(entries, kinds, strict=True) if k == "broadcast"
        ]
        init = [e.value for e, k in zip(entries, kinds, strict=True) if k == "carry"]
        xs = [
            jnp.moveaxis(e.value, e.spec, 0)
            for e, k in zip(entries, kinds, strict=True)
            if k == "scan"
        ]
        y_axes: list[int] = []

        def body(carry: list[Any], x: list[Any]) -> Any:
            it = {"carry": iter(carry), "scan": iter(x), "broadcast": iter(bcast)}
            values = [next(it[k]) for k in kinds]
            with frame("scan") as fr:
                args2 = rebuild(skel, values)
                done = axis_names.enter(args2, specs)
                out = f(*args2)
                if axis_names.meta is not None:
                    outs_ = out if out_is_tuple else (out,)
                    axis_names.exit(
                        done,
                        tuple(o for i, o in enumerate(outs_) if i not in out_carry),
                        tuple(a for i, a in enumerate(outs_spec) if i not in out_carry),
                        fr,
                    )
                w2 = Walker(axes_resolver, describe=_describe, transform="scan")
                after, new_entries = split_args(args2, specs, w2)
                check_structure(skel, after, "scan")
                outs = out if out_is_tuple else (out,)
                if out_is_tuple and not (
                    isinstance(out, tuple) and len(out) == len(outs_spec)
                ):
                    raise ValueError(
                        f"nnx.scan: out_axes has {len(outs_spec)} entries; the "
                        f"function must return a tuple of {len(outs_spec)}."
                    )
                new_carry: list[Any] = []
                if carry_pos:
                    new_carry = _loop_values("scan", carry_skel, outs[out_carry[0]])
                ys = [o for i, o in enumerate(outs) if i not in out_carry]
                w2.frame = fr
                ys = split_outputs(tuple(ys), None, w2)
            scanned_state = []
            for e, e_new, k in zip(entries, new_entries, kinds, strict=True):
                if e.leaf is None:
                    continue
                if k == "broadcast" and e_new.value is not e.value:
                    raise errors.TraceContextError(
                        f"nnx.scan: {path_str(e.leaf.path)} is broadcast (in_axes "
                        "None) but was updated inside the loop.\nBroadcast state is "
                        "read-only: scan it (an int axis), or make it the carry."
                    )
                if k == "scan":
                    scanned_state.append(e_new.value)
            return new_carry, (scanned_state, ys)

        picture = Picture(
            "scan",
            {
                "in_axes": in_axes,
                "out_axes": out_axes,
                "length": length,
                "reverse": reverse,
            },
        )
        with picture:
            picture.inputs(
                entries,
                [
                    k if k != "scan" else axis_label(e.spec)
                    for e, k in zip(entries, kinds)
                ],
                without_axis(lambda e: e.spec if e.spec is not Carry else None),
            )
            carry_out, (scanned_out, ys) = jax.lax.scan(
                body,
                init,
                xs,
                length=sizes.pop(),
                reverse=reverse,
                unroll=unroll,
                _split_transpose=_split_transpose,
            )
        # write back: carry objects from the final carry, scanned ones restacked
        it_c, it_s = iter(carry_out), iter(scanned_out)
        new_values = []
        for e, k in zip(entries, kinds, strict=True):
            if k == "carry":
                new_values.append(next(it_c))
            elif k == "scan" and e.leaf is not None:
                new_values.append(jnp.moveaxis(next(it_s), 0, e.spec))
            else:
                new_values.append(e.value)
        graph_values = [v for e, v in zip(entries, new_values, strict=True) if e.leaf]
        write_back(entries, graph_values)
        picture.outputs(graph_values)  # the record is closed; it is filled in place
        y_specs = [s for i, s in enumerate(outs_spec) if i not in out_carry]
        ys = tuple(
            jax.tree.map(lambda a, ax=ax: jnp.moveaxis(a, 0, ax), y) if ax else y
            for y, ax in zip(ys, y_specs, strict=True)
        )
        ys = merge_outputs(ys, walker.nodes)
        del y_axes
        if not out_is_tuple:
            if carry_pos:
                return _carry_result(args, carry_pos[0], entries, new_values)
            return ys[0]
        result, it_y = [], iter(ys)
        for i in range(len(outs_spec)):
            if i in out_carry:
                result.append(_carry_result(args, carry_pos[0], entries, new_values))
            else:
                result.append(next(it_y))
        return tuple(result)

    return wrapper


def _carry_result(
    args: tuple[Any, ...], pos: int, entries: list[Entry], new_values: list[Any]
) -> Any:
    mine = [(e, v) for e, v in zip(entries, new_values, strict=True) if e.arg == pos]
    return _same_tree((args[pos],), [e for e, _ in mine], [v for _, v in mine])[0]
