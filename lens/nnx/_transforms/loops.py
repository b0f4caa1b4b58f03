"""Loops over objects: ``scan`` (with ``Carry``), ``while_loop`` and ``fori_loop``.

They follow the recipe of :mod:`lens.nnx._transforms.recipe`: object state is
carried (or, for ``scan``, scanned or broadcast per ``in_axes``/``StateAxes``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker, path_str
from lens.nnx._transforms.axes import NO_AXIS_METADATA, AxisNames
from lens.nnx._transforms.lifted import Broadcasted
from lens.nnx._transforms.modes import (
    check_prefix,
    transform_mode,
    variables_with_paths,
    with_calling_conventions,
)
from lens.nnx._transforms.pack_trace import Picture, axis_label, without_axis
from lens.nnx._transforms.recipe import (
    apply_graph_updates,
    lift_args,
    merge_outputs,
    rebuild,
    split_args,
    write_back,
)
from lens.nnx._transforms.scan_step import (
    Carry,
    ScanStep,
    ScanSteps,
    StepPlan,
    describe,
    loop_values,
    value_kind,
)
from lens.nnx._transforms.specs import (
    Entry,
    GraphArg,
    StateAxes,
    axes_resolver,
    wrap_objects,
)
from lens.nnx.tracers import frame
from lens.traceback_util import api_boundary


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


def _variable_ids(value: Any) -> list[int]:
    return [id(v) for _, v in variables_with_paths(value, "carry")]


def _loop_body(
    name: str, skel: Any, step: Callable[[Any], Any]
) -> Callable[[list[Any]], list[Any]]:
    """One step of a loop over the carry rebuilt from ``skel``: its new values,
    checked to be the same Variables (flax.nnx's rule) in the same structure."""
    return lambda values: _loop_step(name, skel, step, values)


def _loop_step(
    name: str, skel: Any, step: Callable[[Any], Any], values: list[Any]
) -> list[Any]:
    with frame(name):
        (val,) = rebuild(skel, values)
        before = _variable_ids(val)
        out = step(val)
        if _variable_ids(out) != before:
            raise ValueError(
                f"{name} Variable identity must be preserved across iterations.\n"
                f"nnx.{name}: the loop body returned other Variables than it got "
                "(a Variable or object replaced). Update the carry's variables in "
                "place (v[...] = ...) and return the same objects."
            )
        return loop_values(name, skel, out)


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
    transform_mode("while_loop", None, graph, graph_updates).check_inputs(
        init_val=init_val
    )
    skel, entries, _ = lift_args("while_loop", (init_val,))

    body = _loop_body("while_loop", skel, body_fun)

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
    transform_mode("fori_loop", None, graph, graph_updates).check_inputs(
        init_val=init_val
    )
    skel, entries, _ = lift_args("fori_loop", (init_val,))

    def body(i: Any, values: list[Any]) -> list[Any]:
        with frame("fori_loop"):  # flax.nnx's fori_loop takes new Variables
            (val,) = rebuild(skel, values)
            return loop_values("fori_loop", skel, body_fun(i, val))

    kw = {} if unroll is None else {"unroll": unroll}
    with Picture("fori_loop", {"lower": lower, "upper": upper}) as picture:
        picture.whole(entries, "carry")
        final = jax.lax.fori_loop(lower, upper, body, [e.value for e in entries], **kw)
    graph_values = [v for e, v in zip(entries, final, strict=True) if e.leaf]
    write_back(entries, graph_values)
    picture.outputs(graph_values)
    return _same_tree((init_val,), entries, final)[0]


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
    every step; in flax's simple modes what a step writes to broadcast state the
    next step reads, in the graph-updates mode the writes are dropped, as in
    flax.nnx). ``StateAxes`` gives per-filter choices inside one
    object, ``nnx.Carry`` included (seed 001: a layer stack whose params are
    scanned and whose BatchStat counter is carried through the loop). The
    function returns what ``out_axes`` describes: the new carry where it says
    ``Carry``, and per-step outputs stacked on the given axis elsewhere.

    A second call with arguments of the same structure is not traced again. In
    the graph-updates mode the function may replace scanned state (a Param by a
    pytree of Params, as qwix's quantization does): the new state comes back
    stacked on the argument's axis.

    The layer-stack pattern::

        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def forward(x, block):
            return block(x)
    """
    mode = transform_mode("scan", f, graph, graph_updates)
    if f is None:
        return functools.partial(
            scan,
            length=length,
            reverse=reverse,
            unroll=unroll,
            _split_transpose=_split_transpose,
            in_axes=in_axes,
            out_axes=out_axes,
            transform_metadata=transform_metadata,
            graph=graph,
            graph_updates=graph_updates,
        )
    check_prefix(in_axes, "in_axes", mode)
    check_prefix(out_axes, "out_axes", mode)
    _check_scan_axes(in_axes, out_axes)
    axis_names = AxisNames("scan", transform_metadata)
    options = _ScanOptions(
        f,
        in_axes,
        out_axes,
        length,
        reverse,
        unroll,
        _split_transpose,
        axis_names,
        mode.simple,
        ScanSteps(f, axis_names),  # one step per structure: traced once
    )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        return _ScanCall(options, args).run()

    # the carry comes back as the same objects: checked by the loop itself
    return with_calling_conventions(mode, f, wrapper, check_outputs=False)


def _check_scan_axes(in_axes: Any, out_axes: Any) -> None:
    """flax.nnx's checks of scan's axes, when the function is decorated."""
    ins = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    outs = out_axes if isinstance(out_axes, tuple) else (out_axes,)
    for name, axes in (("in_axes", ins), ("out_axes", outs)):
        at = [i for i, a in enumerate(axes) if a is Carry]
        if len(at) > 1:  # flax.nnx's words, naming the first two
            raise ValueError(
                f"Found multiple Carry definitions at {name}[{at[0]}] and "
                f"{name}[{at[1]}]\nnnx.scan has one carry: mark one argument "
                "(and the output in the same place) nnx.Carry."
            )
    if any(a is Carry for a in ins) != any(a is Carry for a in outs):
        raise ValueError(
            "If one of in_axes or out_axes has Carry, the other must also have "
            f"Carry (in_axes={in_axes!r}, out_axes={out_axes!r}).\nMark the "
            "carry in both, or in neither."
        )
    for a in outs:
        if a is None:
            raise ValueError(
                "Cannot broadcast output state: out_axes entries are nnx.Carry or "
                f"ints (out_axes={out_axes!r}).\nReturn per-step outputs stacked "
                "on an axis, or pass broadcast values through the carry."
            )
        if isinstance(a, StateAxes) and any(ax is None for ax in a.axes):
            raise ValueError(
                f"Cannot broadcast output state. Got StateAxes {a!r} with None.\n"
                "Give every filter an axis or nnx.Carry."
            )


@dataclasses.dataclass(frozen=True)
class _ScanOptions:
    f: Callable[..., Any]
    in_axes: Any
    out_axes: Any
    length: int | None
    reverse: bool
    unroll: int | bool
    split_transpose: bool
    axis_names: AxisNames
    simple: bool = False
    steps: ScanSteps | None = None


class _ScanCall:
    """One call of a scanned function, in stages: the specs, what each value is
    (carry, scanned, broadcast), the step (reused while the structure repeats),
    the loop, the write-back."""

    def __init__(self, options: _ScanOptions, args: tuple[Any, ...]):
        self.o = options
        self.args = args
        self._specs(len(args))
        self.walker = Walker(axes_resolver, describe=describe, transform="scan")
        self.skel, self.entries = split_args(args, self.specs, self.walker)
        self.kinds, self.length = _kinds_and_length(
            self.entries, options.length, options.simple
        )
        carry_skel = None
        if self.carry_pos:
            w = Walker(transform="scan")
            carry_skel, _ = split_args((args[self.carry_pos[0]],), (None,), w)
        self.plan = StepPlan(
            self.skel,
            tuple(self.specs),
            tuple(self.kinds),
            tuple((e.arg, e.leaf is not None) for e in self.entries),
            self.carry_pos[0] if self.carry_pos else None,
            carry_skel,
            self.out_carry[0] if self.out_carry else None,
            tuple(self.outs_spec),
            self.out_is_tuple,
            options.simple,
        )

    def _specs(self, n: int) -> None:
        in_axes, out_axes = self.o.in_axes, self.o.out_axes
        if in_axes is Carry and n != 1:
            raise ValueError(
                "When in_axes=Carry, the function must take exactly one argument "
                f"(the carry); it was called with {n}.\nUse in_axes=(nnx.Carry, "
                "0, ...) to scan over the other arguments."
            )
        specs = in_axes if isinstance(in_axes, tuple) else (in_axes,) * n
        if len(specs) != n:
            raise ValueError(
                f"nnx.scan: in_axes has {len(specs)} entries for {n} arguments."
            )
        self.specs = specs
        self.carry_pos = [i for i, s in enumerate(specs) if s is Carry]
        if len(self.carry_pos) > 1:
            raise ValueError("nnx.scan: in_axes may name nnx.Carry once.")
        self.out_is_tuple = isinstance(out_axes, tuple)
        self.outs_spec = out_axes if self.out_is_tuple else (out_axes,)
        self.out_carry = [i for i, s in enumerate(self.outs_spec) if s is Carry]
        if bool(self.carry_pos) != bool(self.out_carry) or len(self.out_carry) > 1:
            raise ValueError(
                "nnx.scan: nnx.Carry must appear once in in_axes and once in "
                f"out_axes, or in neither (in_axes={in_axes!r}, out_axes={out_axes!r})."
            )
        for s in self.outs_spec:
            if s is not Carry and not isinstance(s, int):
                raise ValueError(
                    f"nnx.scan: out_axes entries are nnx.Carry or ints, got {s!r}."
                )

    def _of(self, kind: str) -> list[Any]:
        return [e.value for e, k in zip(self.entries, self.kinds) if k == kind]

    def run(self) -> Any:
        xs = [
            _move_axis(e.value, e.spec, 0)
            for e, k in zip(self.entries, self.kinds, strict=True)
            if k == "scan"
        ]
        with self._picture() as picture:
            step = self._step(picture.active)
            (carry_out, _), (scanned_out, ys, change) = jax.lax.scan(
                step,
                (self._of("carry"), Broadcasted(self._of("broadcast"))),
                xs,
                length=self.length,
                reverse=self.o.reverse,
                unroll=self.o.unroll,
                _split_transpose=self.o.split_transpose,
            )
        nodes = self._write_back(carry_out, scanned_out, change.aux)
        picture.outputs(self._graph_values)
        return self._result(ys, carry_out, nodes)

    def _step(self, traced: bool) -> ScanStep:
        steps = self.o.steps
        if steps is None:
            return ScanStep(self.o.f, self.o.axis_names, self.plan)
        return steps.get(self.plan, fresh=traced)

    def _picture(self) -> Picture:
        o = self.o
        picture = Picture(
            "scan",
            {
                "in_axes": o.in_axes,
                "out_axes": o.out_axes,
                "length": o.length,
                "reverse": o.reverse,
                "transform_metadata": o.axis_names.meta,
            },
            o.f,
        )
        picture.inputs(
            self.entries,
            [
                k if k != "scan" else axis_label(e.spec)
                for e, k in zip(self.entries, self.kinds)
            ],
            without_axis(lambda e: e.spec if e.spec is not Carry else None),
        )
        return picture

    def _write_back(
        self, carry_out: list[Any], scanned_out: list[Any], change: Any
    ) -> list[Any]:
        """Carried state from the final carry, scanned state restacked on its
        axis, broadcast state as it was; in the caller's objects, rebuilt in a
        new structure when the function changed one (returns the nodes)."""
        carry_args = [
            a for k, a in zip(self.kinds, self.plan.entry_args) if k == "carry"
        ]
        carried = iter(
            v for v, (_, state) in zip(carry_out, carry_args, strict=True) if state
        )
        broadcast = iter(
            e.value
            for e, k in zip(self.entries, self.kinds)
            if k == "broadcast" and e.leaf is not None
        )
        roles = (
            change.value[1]
            if change is not None
            else [(k, e.spec) for e, k in zip(self.entries, self.kinds) if e.leaf]
        )
        it_s = iter(scanned_out)
        values = []
        for kind, spec in roles:
            if kind == "carry":
                values.append(next(carried))
            elif kind == "scan":
                values.append(_move_axis(next(it_s), 0, spec))
            else:
                values.append(next(broadcast))
        self._graph_values = values
        if change is None:
            write_back(self.entries, values)
            return self.walker.nodes
        return apply_graph_updates([], values, change.value[0], self.walker.nodes)

    def _result(self, ys: tuple[Any, ...], carry_out: list[Any], nodes: list) -> Any:
        y_specs = [s for i, s in enumerate(self.outs_spec) if i not in self.out_carry]
        ys = tuple(
            jax.tree.map(lambda a, ax=ax: jnp.moveaxis(a, 0, ax), y) if ax else y
            for y, ax in zip(ys, y_specs, strict=True)
        )
        ys = merge_outputs(ys, nodes)

        def carry() -> Any:
            pos = self.carry_pos[0]
            carried = [e for e, k in zip(self.entries, self.kinds) if k == "carry"]
            mine = [
                (e, v) for e, v in zip(carried, carry_out, strict=True) if e.arg == pos
            ]
            entries, values = [e for e, _ in mine], [v for _, v in mine]
            return _same_tree((self.args[pos],), entries, values)[0]

        if not self.out_is_tuple:
            return carry() if self.carry_pos else ys[0]
        it_y = iter(ys)
        return tuple(
            carry() if i in self.out_carry else next(it_y)
            for i in range(len(self.outs_spec))
        )


def _move_axis(value: Any, source: int, destination: int) -> Any:
    """``jnp.moveaxis`` on an array, or on each array of a Variable's pytree."""
    return jax.tree.map(lambda a: jnp.moveaxis(a, source, destination), value)


def _kinds_and_length(
    entries: list[Entry], length: int | None, simple: bool
) -> tuple[list, int]:
    """Each value's role (carry, broadcast, scan) and the one loop length."""
    kinds = []
    sizes: set[int] = set()
    scanned: list[int] = []  # each scanned value's length, in order (JAX's message)
    for e in entries:
        kind = value_kind(e.spec, e.leaf is not None, simple)
        kinds.append(kind)
        if kind != "scan":
            continue
        if not hasattr(e.value, "shape") and not jax.tree.leaves(e.value):
            continue  # an empty pytree (a capture buffer): no length
        ndim = jnp.ndim(e.value)
        if not -ndim <= e.spec < max(ndim, 1) or ndim == 0:
            where = path_str(e.leaf.path) if e.leaf else f"argument {e.arg}"
            # NumPy's AxisError: a ValueError and, as flax's (an IndexError
            # inside JAX), an IndexError
            raise np.exceptions.AxisError(
                f"nnx.scan cannot scan {where} (shape {jnp.shape(e.value)}) "
                f"over axis {e.spec}.\nGive it in_axes None (broadcast) or "
                "nnx.Carry, or a StateAxes for that object."
            )
        sizes.add(jnp.shape(e.value)[e.spec])
        scanned.append(jnp.shape(e.value)[e.spec])
    hint = "\nnnx.scan: scan values of one length along their in_axes"
    if length is not None and sizes and sizes != {length}:
        raise ValueError(
            f"scan got `length` argument of {length} which disagrees with leading "
            f"axis sizes {scanned}.{hint}, and pass that length (or none)."
        )
    if length is not None:
        sizes.add(length)
    if len(sizes) > 1:
        raise ValueError(
            "scan got values with different leading axis sizes: "
            f"{', '.join(map(str, scanned))}.{hint}."
        )
    if not sizes:
        raise ValueError(
            "scan got no values to scan over and `length` not provided.\n"
            "nnx.scan: pass length=, or scan an argument (in_axes 0)."
        )
    return kinds, sizes.pop()


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
