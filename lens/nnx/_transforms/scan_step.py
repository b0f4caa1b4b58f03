"""One step of ``nnx.scan``, made once per argument structure.

``jax.lax.scan`` caches its trace of a body on the body function, so a
:class:`ScanStep` holds only static facts (the arguments' skeleton, each value's
role, the output axes) and a scanned function keeps one per structure: called
again with arguments of the same structure, it is not traced again (flax.nnx
makes its ``ScanFn`` once per decorated function for the same reason). The
values ride in the loop's carry and inputs, never in the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from lens import errors
from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.axes import AxisNames
from lens.nnx._transforms.lifted import Broadcasted
from lens.nnx._transforms.modes import variables_with_paths
from lens.nnx._transforms.recipe import (
    changed_structure,
    check_structure,
    rebuild,
    split_args,
    split_outputs,
)
from lens.nnx._transforms.specs import Carrier, Entry, Skeleton, axes_resolver
from lens.nnx._variables.static import StaticValue
from lens.nnx.tracers import frame


class Carry:
    """``in_axes``/``out_axes`` marker of :func:`scan`: this argument (and the
    output in the same place) is the loop carry."""

    def __init__(self) -> None:
        raise TypeError("nnx.Carry is a marker: use the class itself, not Carry().")


def describe(spec: Any) -> str:
    return "the carry" if spec is Carry else f"axis {spec!r}"


def loop_values(
    name: str, skel: Any, value: Any, static: frozenset[int] = frozenset()
) -> list[Any]:
    """The values of ``value`` (a loop carry), checked to keep ``skel``'s structure."""
    w = Walker(transform=name)
    after, entries = split_args((value,), (None,), w, static)
    if after != skel:
        # flax.nnx's scan says this first; its other loops raise JAX's TypeError
        flax_first = "Carry references must be the same between iterations. "
        raise errors.LoopCarryStructureError(
            (flax_first if name == "scan" else "")
            + f"nnx.{name}: the loop body must return a value with the structure of "
            "its input (the same pytree, the same objects' variables, the same "
            "statics).\nReturn the updated carry in the input's form; create "
            "submodules and variables before the loop."
        )
    return [e.value for e in entries]


def value_kind(spec: Any, is_state: bool, simple: bool) -> str:
    """A value's role in the loop: ``'carry'`` (read and written by every step),
    ``'broadcast'`` (the same at every step) or ``'scan'`` (sliced per step).

    Broadcast state (in_axes None) is carried in flax's simple modes, where what
    a step writes to it the next step reads and the caller gets back; in the
    graph-updates mode every step sees the value it had before the loop and the
    steps' writes are dropped, as in flax.nnx."""
    if spec is Carry or (spec is None and is_state and simple):
        return "carry"
    return "broadcast" if spec is None else "scan"


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """What a step needs that does not change while the arguments' structure
    does not (the key of a scanned function's steps)."""

    skel: Skeleton
    specs: tuple[Any, ...]
    kinds: tuple[str, ...]  # per value, its value_kind
    entry_args: tuple[tuple[int, bool], ...]  # per value: its argument, is state
    carry_pos: int | None
    carry_skel: Skeleton | None
    out_carry: int | None
    outs_spec: tuple[Any, ...]
    out_is_tuple: bool
    simple: bool


class ScanStep:
    """``jax.lax.scan``'s body for one :class:`StepPlan`: rebuilds the arguments
    from ``((carry, broadcast), scanned)``, calls the function and returns
    ``((new carry, broadcast), (scanned state, outputs, structure change))``
    (the broadcast values ride unchanged in the carry, as a :class:`Broadcasted`)."""

    def __init__(self, f: Callable[..., Any], axis_names: AxisNames, plan: StepPlan):
        self.f = f
        self.axis_names = axis_names
        self.plan = plan

    def __call__(self, carry: tuple[list, Broadcasted], x: list) -> Any:
        p = self.plan
        carried, bcast = carry
        it = {"carry": iter(carried), "scan": iter(x), "broadcast": iter(bcast.data)}
        values = [next(it[k]) for k in p.kinds]
        table: dict[int, Any] = {}
        with frame("scan") as fr:
            args = rebuild(p.skel, values, table)
            done = self.axis_names.enter(args, p.specs)
            outs = self._outputs(self.f(*args))
            ys = tuple(v for i, v in enumerate(outs) if i != p.out_carry)
            y_specs = tuple(a for i, a in enumerate(p.outs_spec) if i != p.out_carry)
            self.axis_names.exit(done, ys, y_specs, fr, args, p.specs)
            w = Walker(axes_resolver, describe=describe, transform="scan")
            after, new_entries = split_args(args, p.specs, w)
            change = None
            if p.simple:
                check_structure(p.skel, after, "scan")
            else:
                change = changed_structure(p.skel, after, table, w.nodes)
            kinds = [
                value_kind(e.spec, e.leaf is not None, p.simple) for e in new_entries
            ]
            new_carry = self._new_carry(args, outs, new_entries, kinds)
            w.frame = fr
            ys = split_outputs(ys, None, w)
        scanned = [
            e.value
            for e, k in zip(new_entries, kinds, strict=True)
            if k == "scan" and e.leaf is not None
        ]
        if change is not None:
            change = StaticValue((change, self._new_roles(new_entries, kinds)))
        return (new_carry, bcast), (scanned, ys, Carrier([], change))

    def _new_roles(self, new_entries: list[Entry], kinds: list[str]) -> tuple:
        """Per state value of the new structure, its kind and spec; the counts
        of carried and broadcast state must not change (only scanned state may
        be replaced, as flax.nnx's scan allows)."""
        p = self.plan
        roles = tuple(
            (k, e.spec) for e, k in zip(new_entries, kinds) if e.leaf is not None
        )
        before = [k for k, (_, s) in zip(p.kinds, p.entry_args) if s]
        for kind in ("carry", "broadcast"):
            if sum(k == kind for k, _ in roles) != before.count(kind):
                raise errors.GraphStructureError(
                    f"nnx.scan: the function added or removed {kind} state (in_axes "
                    f"{'nnx.Carry' if kind == 'carry' else 'None'}) in its "
                    "arguments.\nOnly scanned state (an int axis) may change "
                    "structure inside a scan: create carried and broadcast "
                    "variables before the loop."
                )
        return roles

    def _outputs(self, out: Any) -> tuple[Any, ...]:
        p = self.plan
        n = len(p.outs_spec)
        if p.out_is_tuple and not (isinstance(out, tuple) and len(out) == n):
            raise ValueError(
                f"nnx.scan: out_axes has {n} entries; the function must return a "
                f"tuple of {n}."
            )
        return out if p.out_is_tuple else (out,)

    def _check_same_references(self, before: Any, after: Any) -> None:
        """The carry's objects and variables must come back as themselves."""
        ids = [id(v) for _, v in variables_with_paths(before, "carry")]
        new = [id(v) for _, v in variables_with_paths(after, "carry")]
        if ids == new:
            return
        first = (
            "scan Variable identity must be preserved across iterations."
            if self.plan.simple
            else "Carry references must be the same between iterations."
        )
        raise ValueError(
            f"{first}\nnnx.scan: the function returned new objects or Variables "
            "as the carry. Update the carry's variables in place (x[...] = ...) "
            "and return the same objects."
        )

    def _new_carry(
        self,
        args: tuple[Any, ...],
        outs: tuple[Any, ...],
        new_entries: list[Entry],
        kinds: list[str],
    ) -> list:
        """The next carry, in the order of the input carry: the carry argument's
        values from what the function returned, and the carried state of the
        other arguments (a ``StateAxes`` Carry) from them after the step."""
        p = self.plan
        returned: Iterator[Any] = iter(())
        if p.carry_pos is not None and p.out_carry is not None:
            out_carry = outs[p.out_carry]
            self._check_same_references(args[p.carry_pos], out_carry)
            returned = iter(loop_values("scan", p.carry_skel, out_carry))
        others = iter(
            e.value
            for e, k in zip(new_entries, kinds, strict=True)
            if k == "carry" and e.arg != p.carry_pos
        )
        return [
            next(returned) if arg == p.carry_pos else next(others)
            for k, (arg, _) in zip(p.kinds, p.entry_args, strict=True)
            if k == "carry"
        ]


class ScanSteps:
    """A scanned function's steps, one per :class:`StepPlan` (a few at most)."""

    def __init__(self, f: Callable[..., Any], axis_names: AxisNames):
        self.f = f
        self.axis_names = axis_names
        self.steps: dict[StepPlan, ScanStep] = {}

    def get(self, plan: StepPlan, fresh: bool = False) -> ScanStep:
        """The step for ``plan`` (a new one when ``fresh``: a traced call, whose
        inner transforms are recorded only while the body is traced)."""
        if fresh:
            return ScanStep(self.f, self.axis_names, plan)
        try:
            step = self.steps.get(plan)
        except TypeError:  # a static attribute that cannot be hashed
            return ScanStep(self.f, self.axis_names, plan)
        if step is None:
            if len(self.steps) >= 16:
                self.steps.clear()
            step = self.steps[plan] = ScanStep(self.f, self.axis_names, plan)
        return step


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
