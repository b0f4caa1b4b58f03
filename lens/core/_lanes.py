"""What a pack record means, variable by variable: the lanes of the pack picture.

A raw record (``_trace.Recorder``) lists what ``pack`` saw at each stage. ``describe``
joins those stages per variable into one *lane*: its collection and full path, the
filter group it fell in, its outer and inner value (shape and dtype), the axis the
transform inserted or removed (with its size and metadata name), and what came back
(unchanged, updated, created inside, or dropped because the outer scope could not take
it), and where it was committed. It adds one lane per rng stream (split into N keys or
shared), a note per lifted scope, and the one-line summary that is also the trace's
text/plain form. The JupyterLab extension and the script-free HTML draw these fields;
neither derives them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lens.core import _axes


def _lane_order(lane: Mapping[str, Any]) -> tuple[Any, ...]:
    """Lanes in a stable order: by filter group (none last), scope, collection, path."""
    g = lane["group"]
    return (g < 0, g, lane["scope"], lane["collection"], lane["path"])


def _matches(filt: Any, collection: str) -> bool:
    """Whether a recorded (JSON) filter takes ``collection``."""
    if filt is True:
        return True
    if isinstance(filt, str):
        return filt == collection
    if isinstance(filt, list):
        return any(_matches(f, collection) for f in filt)
    return False


def _axis_of(label: str) -> int | None:
    if label.startswith("axis "):
        try:
            return int(label.split()[1])
        except ValueError:
            return None
    return None


def _role(transform: str, label: str) -> str:
    """``mapped``/``scanned`` for an axis group, else the group's own label."""
    if transform == "map_variables":
        return label or "lifted"
    if _axis_of(label) is not None:
        return "scanned" if transform == "scan" else "mapped"
    return label or "lifted"


def _dims(spec: Mapping[str, Any] | None) -> list[int] | None:
    if not spec or spec.get("dtype") == "pytree":
        return None
    return list(spec.get("shape", []))


def _mapped_axis(
    axis: int | None, stacked: Mapping[str, Any] | None, unstacked: Any
) -> tuple[int | None, int | None, str | None]:
    """The axis index (non-negative), its size and its metadata name, when the
    stacked value has exactly one more dimension than the unstacked one."""
    s, u = _dims(stacked), _dims(unstacked)
    if axis is None or s is None or u is None or len(s) != len(u) + 1:
        return None, None, None
    a = axis if axis >= 0 else axis + len(s)
    if not 0 <= a < len(s):
        return None, None, None
    names = (stacked or {}).get("names")
    name = names[a] if names and a < len(names) else None
    return a, int(s[a]), name


def _where(scope_paths: list[str], ri: int) -> str:
    return scope_paths[ri] if 0 <= ri < len(scope_paths) else "/"


def _relative(path: str, root: str) -> str:
    if root in ("", "/"):
        return path.lstrip("/")
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def lanes(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One lane per variable the record saw, in group order (created ones last)."""
    transform = rec.get("transform", "")
    roots = [s["path"] for s in rec.get("scopes", []) if s.get("root")]
    groups = rec.get("groups", [])
    out: dict[tuple[int, str, str], dict[str, Any]] = {}

    def lane(gi: int, col: str, ri: int, path: str) -> dict[str, Any]:
        g = groups[gi] if 0 <= gi < len(groups) else {}
        label = str(g.get("label") or "")
        root = _where(roots, ri)
        return {
            "key": f"{col}:{path}",
            "collection": col,
            "path": path,
            "relative": _relative(path, root),
            "scope": ri,
            "group": gi,
            "role": _role(transform, label),
            "axis": None,
            "size": None,
            "axis_name": None,
            "outer": None,
            "inner": None,
            "out": None,
            "fate": "unchanged",
            "committed": None,
            "note": "",
            "fate_text": "",
        }

    for gi, g in enumerate(groups):
        for v in g.get("variables", []):
            k = (v["scope"], v["collection"], v["path"])
            item = lane(gi, v["collection"], v["scope"], v["path"])
            item["outer"], item["inner"] = v.get("outer"), v.get("inner")
            out[k] = item

    def group_of(col: str) -> int:
        for gi, g in enumerate(groups):
            if col in g.get("collections", []) or _matches(g.get("filter"), col):
                return gi
        return -1

    rp = rec.get("repack", {})
    for fate, entries in (
        ("created", rp.get("created", [])),
        ("updated", rp.get("mutated", [])),
    ):
        for e in entries:
            k = (e["scope"], e["collection"], e["path"])
            if k not in out:
                out[k] = lane(
                    group_of(e["collection"]), e["collection"], e["scope"], e["path"]
                )
            item = out[k]
            item["fate"] = fate
            item["inner"] = e.get("inner") or item["inner"]
    for c in rec.get("commit", []):
        k = (c["scope"], c["collection"], c["path"])
        item = out.get(k)
        if item is None:  # written back without being seen inside (kept as is)
            item = out[k] = lane(
                group_of(c["collection"]), c["collection"], c["scope"], c["path"]
            )
        item["out"] = c.get("outer")
        item["committed"] = _where(roots, c["scope"])
    for item in out.values():
        if item["fate"] in ("created", "updated") and item["committed"] is None:
            item["fate"] = "dropped"
        if item["role"] in ("mapped", "scanned"):
            label = str(groups[item["group"]].get("label") or "")
            stacked = item["outer"] or item["out"]
            a, size, name = _mapped_axis(_axis_of(label), stacked, item["inner"])
            item["axis"], item["size"], item["axis_name"] = a, size, name
        item["note"] = _note(transform, item)
        item["fate_text"] = _fate_text(item)
    return list(out.values())


_ROLE_NOTES = {
    "broadcast": "broadcast: the same value in every slice",
    "carry": "carry: in → out, threaded through the steps",
    "all": "passed in whole (the same value inside)",
    "differentiated": "differentiated: a tangent or cotangent flows through it",
    "tangent": "differentiated: a tangent flows through it",
    "constant": "held constant (not differentiated)",
    "lifted": "passed in whole (the same value inside)",
    "returned": "built inside and returned",
}
_MAP_VARIABLES_NOTES = {
    "mapped": "passed through trans_in_fn, back through trans_out_fn",
    "unchanged": "passed as is",
}


def _note(transform: str, item: Mapping[str, Any]) -> str:
    """How the transform lifted the lane: ``vmap axis 0, size 8 ('ens')``."""
    role = item["role"]
    if transform == "map_variables" and role in _MAP_VARIABLES_NOTES:
        return _MAP_VARIABLES_NOTES[role]
    if role in ("mapped", "scanned"):
        if item["axis"] is None:
            return f"{transform} {role}"
        word = "length" if role == "scanned" else "size"
        named = f" ('{item['axis_name']}')" if item["axis_name"] else ""
        return f"{transform} axis {item['axis']}, {word} {item['size']}{named}"
    if role in ("all", "lifted") and _shape_changes(item):
        # lift_transpose and other transforms with their own in/out functions
        return "passed in through the transform's function (its shape changes inside)"
    return _ROLE_NOTES.get(role) or str(role)


def _shape_changes(item: Mapping[str, Any]) -> bool:
    outer, inner = item.get("outer") or item.get("out"), item.get("inner")
    if not outer or not inner:
        return False
    return list(outer.get("shape", ())) != list(inner.get("shape", ()))


def _fate_text(item: Mapping[str, Any]) -> str:
    where = item["committed"]
    return {
        "unchanged": "unchanged" + (f", written back to {where}" if where else ""),
        "updated": f"updated inside, written back to {where}",
        "created": f"created inside, written back to {where}",
        "dropped": "changed inside but dropped: the outer scope cannot take it "
        "(its collection is not mutable there)",
    }[item["fate"]]


def size(rec: Mapping[str, Any], lanes_: list[dict[str, Any]]) -> int | None:
    """The size of the mapped or scanned axis: from the options, else a lane."""
    opts = rec.get("options", {})
    for k in ("axis_size", "length"):
        if isinstance(opts.get(k), int):
            return opts[k]
    for item in lanes_:
        if item["size"] is not None:
            return item["size"]
    return None


def rng_lanes(rec: Mapping[str, Any], n: int | None) -> list[dict[str, Any]]:
    """Each rng stream: split into ``n`` keys (one per mapped slice or step), or shared."""
    return [
        {
            "stream": r["stream"],
            "group": r.get("group", 0),
            "split": bool(r.get("split")),
            "keys": n if r.get("split") else None,
            "text": (
                (f"split into {n} keys" if n is not None else "split")
                if r.get("split")
                else "shared (the same key inside)"
            ),
        }
        for r in rec.get("rngs", [])
    ]


def scope_notes(
    rec: Mapping[str, Any], lanes_: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Which scopes' variables go through the transform (or are all created inside
    it), and which go in as part of another (a scope inside a lifted one is taken
    in with it, not twice)."""
    scopes = rec.get("scopes", [])
    roots = [s["path"] for s in scopes if s.get("root")]
    notes = []
    for s in scopes:
        if s.get("root"):
            mine = [x for x in lanes_ if x["scope"] == s.get("root_index")]
            built = bool(mine) and all(x["fate"] == "created" for x in mine)
            text = (
                "its variables are created inside and written back"
                if built
                else "its variables go through the transform"
            )
            notes.append({"path": s["path"], "root": True, "text": text})
        else:
            base = _where(roots, s.get("root_index", 0))
            rel = "/".join(s.get("relative_path", []))
            text = f"goes in as part of {base}" if rel else f"goes in as {base}"
            notes.append({"path": s["path"], "root": False, "text": text})
    return notes


def _group_phrase(g: Mapping[str, Any]) -> str | None:
    filt = g.get("filter")
    if filt is False or filt is None:
        return None
    if filt is True:
        names = "all collections"
    elif isinstance(filt, list):
        names = ", ".join(str(f) for f in filt) or "nothing"
    else:
        names = str(filt)
    label = str(g.get("label") or "")
    if label.startswith("axis "):
        return f"{names} on {label}"
    if label == "all":
        return ("all collections" if filt is True else names) + " passed in whole"
    return f"{names} {label}" if label else names


def summary(rec: Mapping[str, Any], lanes_: list[dict[str, Any]], n: int | None) -> str:
    """``vmap over 8 slices of /m: params on axis 0, batch_stats broadcast; rngs
    params split; 4 created``: one line that says what the transform did, to the
    variables of which scopes."""
    transform = rec.get("transform", "?")
    unit = "steps" if transform == "scan" else "slices"
    head = transform + (f" over {n} {unit}" if n is not None else "")
    roots = [s["path"] for s in rec.get("scopes", []) if s.get("root")]
    parts = [p for p in (_group_phrase(g) for g in rec.get("groups", [])) if p]
    text = f"{head} of {', '.join(roots) or '/'}" + (
        ": " + ", ".join(parts) if parts else ""
    )
    merged = sum(1 for s in rec.get("scopes", []) if not s.get("root"))
    if merged:
        text += f" ({merged} nested scope{'s' if merged != 1 else ''} taken along)"
    rngs = rec.get("rngs", [])
    if rngs:
        text += "; rngs " + ", ".join(f"{r['stream']} {r['label']}" for r in rngs)
    counts = {
        f: sum(1 for x in lanes_ if x["fate"] == f)
        for f in ("created", "updated", "dropped")
    }
    said = [f"{c} {f}" for f, c in counts.items() if c]
    if said:
        text += "; " + ", ".join(said)
    return text


def describe(rec: Mapping[str, Any]) -> dict[str, Any]:
    """``rec`` with ``summary``, ``lanes``, ``rng_lanes``, ``scope_notes``,
    ``size``, ``axes`` and ``passes`` added (children described too; iterative,
    any depth)."""
    top = dict(rec)
    stack = [top]
    while stack:
        r = stack.pop()
        ls = sorted(lanes(r), key=_lane_order)
        n = size(r, ls)
        r["lanes"] = ls
        r["axes"] = _axes.axes(r)
        r["passes"] = _axes.passes(r, ls)
        r["size"] = n
        r["rng_lanes"] = rng_lanes(r, n)
        r["scope_notes"] = scope_notes(r, ls)
        r["summary"] = summary(r, ls, n)
        kids = [dict(k) for k in r.get("children", [])]
        r["children"] = kids
        stack.extend(kids)
    return top
