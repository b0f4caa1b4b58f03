"""Two more facts per pack record, for every renderer to show alike.

``axes``: for a mapping or scanning transform, how each argument goes in
(one entry per argument, by its parameter name where the signature gives it:
carried step to step, split along an axis, or not split), how results come out
(``out_axes``; per part for a scan: the carry, then the stacked ``ys``), the
collective axis name (``axis_name``, for ``lax.psum`` and friends) and the
partition name that ``metadata_params`` / ``transform_metadata`` give boxed
variables' new axis. A lens.core transform says per call how its arguments go in
(:class:`CallAxes`, recorded as ``arg_axes``); for lens.nnx it is read from the
``in_axes`` option and the parameter names (``args``).

``passes``: for a transform that passes its state through whole and unchanged in
shape (``jit``, ``remat``, ...), one sentence of what it does and the variables that
flow, so a renderer draws a compact box instead of a table of identical lanes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax

PARTITION_NAME = "partition_name"
CARRY = "Carry"  # the axis of an argument carried from one step to the next
KEYWORD = "keyword"  # the axis of a keyword argument: passed whole to every slice
EMPTY = "empty"  # the axis of an argument with no arrays (None, ()): nothing to split

_AXES_OPTIONS = ("in_axes", "out_axes", "axis_name")
_DOES = {
    "jit": "traced once and compiled; state passed through",
    "remat": "recomputed in the backward pass instead of stored; state passed through",
    "checkpoint": "recomputed in the backward pass instead of stored; state passed through",
    "named_call": "named in profiles; state passed through",
}


def axis_text(a: Any) -> str:
    """``0``, ``None (broadcast)``, ``Carry``, ``(0, None)``, ``{params: 0}``."""
    if a is None:
        return "None (broadcast)"
    if isinstance(a, bool):
        return str(a)
    if isinstance(a, int):
        return str(a)
    if isinstance(a, str):
        if a.startswith("<function ") and a.endswith(">"):
            return a[len("<function ") : -1]  # a class recorded by name: Carry
        return a
    if isinstance(a, list):
        if a and all(isinstance(p, list) and len(p) == 2 for p in a):
            return (
                "{" + ", ".join(f"{axis_text(k)}: {axis_text(v)}" for k, v in a) + "}"
            )
        return "(" + ", ".join(axis_text(x) for x in a) + ")"
    return str(a)


class CallAxes(NamedTuple):
    """How one call's arguments go in and its results come out: ``(name, axis)``
    pairs, the axis as the transform takes it (an int, ``None``, ``broadcast``, a
    pytree of them, :data:`CARRY`, :data:`KEYWORD` or :data:`EMPTY`). ``outs`` is
    None when ``out_axes`` covers the whole result."""

    ins: list[tuple[str, Any]]
    outs: list[tuple[str, Any]] | None = None


def arg_names(fn: Callable[..., Any], n: int, skip: int = 1) -> list[str]:
    """Names for the ``n`` positional arguments ``fn`` gets after its first ``skip``
    (the scope or module): its parameter names, then ``xs[0]``, ``xs[1]`` ... for
    a ``*xs`` parameter; ``args[i]`` where the signature says nothing."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    star = None
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            star = p.name
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    if len(names) < skip:  # the scope itself comes in through *args
        return [f"args[{i}]" for i in range(n)]
    names = names[skip : n + skip]
    if star is None:
        return names + [f"args[{i}]" for i in range(len(names), n)]
    return names + [f"{star}[{j}]" for j in range(n - len(names))]


def per_argument(axes: Any, args: Sequence[Any]) -> list[Any]:
    """The axis of each argument: a tuple or list gives one per position, anything
    else applies to every argument; an argument with no arrays (``None``, ``()``)
    has :data:`EMPTY`, nothing to split."""
    n = len(args)
    each = list(axes)[:n] if isinstance(axes, tuple | list) else [axes] * n
    return [
        EMPTY if not jax.tree_util.tree_leaves(x) else a for a, x in zip(each, args)
    ]


def _partition(opts: Mapping[str, Any]) -> str | None:
    for key in ("metadata_params", "transform_metadata"):
        pairs = opts.get(key)
        if isinstance(pairs, list):
            for p in pairs:
                if isinstance(p, list) and len(p) == 2 and p[0] == PARTITION_NAME:
                    return None if p[1] is None else str(p[1])
    return None


def _arg(i: int, names: Sequence[str]) -> str:
    return names[i] if 0 <= i < len(names) else f"args[{i}]"


def _is_carry(a: Any) -> bool:
    return axis_text(a) == "Carry"


def say_in(a: Any) -> str:
    """How one argument goes in, in words: ``split along axis 0``, ``not split
    (broadcast)``, ``carried step to step``, ``split by (0, None)``, ``not split
    (keyword argument)``."""
    if a is None or a == "broadcast":
        return "not split (broadcast)"
    if a == KEYWORD:
        return "not split (keyword argument)"
    if a == EMPTY:
        return "nothing to split (no arrays)"
    if isinstance(a, int) and not isinstance(a, bool):
        return f"split along axis {a}"
    if _is_carry(a):
        return "carried step to step"
    return f"split by {axis_text(a)}"


def say_out(a: Any) -> str:
    """How results come out, in words: ``stacked along axis 0``, ``not stacked
    (broadcast)``, ``carried``, ``stacked by (0, None)``."""
    if a is None or a == "broadcast":
        return "not stacked (broadcast)"
    if isinstance(a, int) and not isinstance(a, bool):
        return f"stacked along axis {a}"
    if _is_carry(a):
        return "carried"
    return f"stacked by {axis_text(a)}"


def _say_part(a: Any) -> str:
    """How one part of the results comes out: the carry ``from the last step``,
    else as :func:`say_out` says."""
    return "from the last step" if _is_carry(a) else say_out(a)


def _words(pairs: Any, say: Callable[[Any], str]) -> list[dict[str, str]]:
    """Recorded ``{arg, axis}`` pairs with the axis in words."""
    return [{"arg": str(p["arg"]), "axis": say(p["axis"])} for p in pairs]


def _per_argument(ins: Any, names: Sequence[str]) -> list[dict[str, str]]:
    """One ``{arg, axis}`` per argument (``axis`` in words): a tuple of axes is
    per position; one axis applies to every argument (named when the names are
    known)."""
    is_mapping = (
        isinstance(ins, list)
        and ins
        and all(isinstance(p, list) and len(p) == 2 for p in ins)
    )
    if isinstance(ins, list) and not is_mapping:
        return [{"arg": _arg(i, names), "axis": say_in(a)} for i, a in enumerate(ins)]
    if names:
        return [{"arg": n, "axis": say_in(ins)} for n in names]
    return [{"arg": "every argument", "axis": say_in(ins)}]


def axes(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{in, out, name, partition, text}`` for a transform with axes, else None;
    ``out_parts`` too when the results come out part by part (a scan's carry and
    ``ys``).

    ``text`` reads as English: ``inputs: x split along axis 0, y not split
    (broadcast) · outputs stacked along axis 0 · axis_name 'batch'``, or for a
    scan ``inputs: c carried step to step, x split along axis 0 · outputs: carry
    from the last step, ys stacked along axis 0``.
    """
    opts = rec.get("options", {})
    partition = _partition(opts)
    if not any(k in opts for k in _AXES_OPTIONS) and partition is None:
        return None
    call = rec.get("arg_axes")
    out_parts: list[dict[str, str]] | None = None
    if call is not None:  # a lens.core transform said how this call went
        ins = _words(call["in"], say_in)
        if call.get("out") is not None:
            out_parts = _words(call["out"], _say_part)
    else:
        names = [str(n) for n in rec.get("args", [])]
        ins = _per_argument(opts["in_axes"], names) if "in_axes" in opts else []
    if out_parts is not None:
        out = ", ".join(f"{a['arg']} {a['axis']}" for a in out_parts)
    else:
        out = say_out(opts["out_axes"]) if "out_axes" in opts else None
    name = opts.get("axis_name")
    name = None if name is None else axis_text(name)
    parts = []
    if ins:
        parts.append("inputs: " + ", ".join(f"{a['arg']} {a['axis']}" for a in ins))
    if out is not None:
        parts.append(f"outputs: {out}" if out_parts is not None else f"outputs {out}")
    if name is not None:
        parts.append(f"axis_name '{name}'")
    if partition is not None:
        parts.append(f"partition name '{partition}'")
    said: dict[str, Any] = {
        "in": ins,
        "out": out,
        "name": name,
        "partition": partition,
        "text": " · ".join(parts),
    }
    if out_parts is not None:
        said["out_parts"] = out_parts
    return said


def passes(
    rec: Mapping[str, Any], lanes: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """``{text, keys}`` when the transform passes every variable through whole
    with its shape unchanged (``jit``, ``remat``, ...), else None."""
    transform = str(rec.get("transform", ""))
    through = all(
        lane["role"] in ("all", "lifted")
        and (lane.get("outer") or lane.get("out") or {}).get("shape")
        == (lane.get("inner") or lane.get("outer") or lane.get("out") or {}).get(
            "shape"
        )
        for lane in lanes
    )
    if not through or (not lanes and transform not in _DOES):
        return None
    does = _DOES.get(transform, "state passed through")
    n = len(lanes)
    flow = f"{n} variable{'s' if n != 1 else ''} flow through" if n else "no state"
    return {
        "text": does,
        "flow": flow,
        "keys": [x["key"] for x in lanes],
    }
