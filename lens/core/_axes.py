"""Two more facts per pack record, for every renderer to show alike.

``axes``: for a mapping or scanning transform, how each argument goes in
(``in_axes``, one entry per argument, by its parameter name when lens.nnx knows
it), how results come out (``out_axes``), the collective axis name (``axis_name``,
for ``lax.psum`` and friends) and the partition name that ``metadata_params`` /
``transform_metadata`` give boxed variables' new axis.

``passes``: for a transform that passes its state through whole and unchanged in
shape (``jit``, ``remat``, ...), one sentence of what it does and the variables that
flow, so a renderer draws a compact box instead of a table of identical lanes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PARTITION_NAME = "partition_name"

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
    (broadcast)``, ``carried step to step``, ``split by (0, None)``."""
    if a is None or a == "broadcast":
        return "not split (broadcast)"
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
    """``{in, out, name, partition, text}`` for a transform with axes, else None.

    ``text`` reads as English: ``inputs: x split along axis 0, y not split
    (broadcast) · outputs stacked along axis 0 · axis_name 'batch'``.
    """
    opts = rec.get("options", {})
    partition = _partition(opts)
    if not any(k in opts for k in _AXES_OPTIONS) and partition is None:
        return None
    names = [str(n) for n in rec.get("args", [])]
    ins = _per_argument(opts["in_axes"], names) if "in_axes" in opts else []
    out = say_out(opts["out_axes"]) if "out_axes" in opts else None
    name = opts.get("axis_name")
    name = None if name is None else axis_text(name)
    parts = []
    if ins:
        parts.append("inputs: " + ", ".join(f"{a['arg']} {a['axis']}" for a in ins))
    if out is not None:
        parts.append(f"outputs {out}")
    if name is not None:
        parts.append(f"axis_name '{name}'")
    if partition is not None:
        parts.append(f"partition name '{partition}'")
    return {
        "in": ins,
        "out": out,
        "name": name,
        "partition": partition,
        "text": " · ".join(parts),
    }


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
