"""Pack traces: a text summary, a static HTML diagram, and the extension's MIME type.

The bundle carries ``application/vnd.lens.pack+json`` (drawn interactively by the
JupyterLab extension), ``text/html`` (this module's static diagram: the six stages
of ``pack`` as columns, nested transforms nested) and ``text/plain``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from lens.core._trace import MIME_TYPE, PackTrace
from lens.display._base import View, e
from lens.display._leaf import printable

PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
]
STAGES = [
    "1 scopes",
    "2 filter: groups",
    "3-4 inside the transform",
    "5 repack",
    "6 commit",
]

DIAGRAM_CSS = """<style>
.lens-pack{border:1px solid #ccc;border-radius:4px;margin:4px 0;padding:4px}
.lens-pack .t{font-weight:bold}.lens-pack .stages{display:flex;gap:6px;align-items:stretch}
.lens-pack .st{flex:1;min-width:120px;border-left:3px solid #ddd;padding:0 4px}
.lens-pack .sh{font-size:11px;color:#777;text-transform:uppercase}
.lens-pack .v{white-space:nowrap}.lens-pack .ar{color:#aaa;align-self:center}
.lens-pack .kids{margin-left:16px}
</style>"""


def color(collection: str) -> str:
    """A stable colour per collection name (the same in every diagram)."""
    fixed = {
        "params": PALETTE[0],
        "batch_stats": PALETTE[1],
        "cache": PALETTE[2],
        "intermediates": PALETTE[3],
    }
    if collection in fixed:
        return fixed[collection]
    h = int(hashlib.sha1(collection.encode()).hexdigest()[:6], 16)
    return PALETTE[4 + h % 4]


def _shape(spec: Any) -> str:
    if not spec:
        return "?"
    from lens.display._leaf import short_dtype

    s = f"{short_dtype(spec.get('dtype', '?'))}[{','.join(str(d) for d in spec.get('shape', []))}]"
    if spec.get("names"):
        s += (
            " ("
            + ",".join("None" if n is None else repr(n) for n in spec["names"])
            + ")"
        )
    return s


def _options(rec: dict[str, Any]) -> str:
    opts = rec.get("options", {})
    keys = [
        k
        for k in (
            "variable_axes",
            "variable_broadcast",
            "variable_carry",
            "split_rngs",
            "length",
            "axis_size",
        )
        if opts.get(k) not in (None, False, [], {})
    ]
    return " · ".join(f"{k}={_opt(opts[k])}" for k in keys)


def _opt(v: Any) -> str:
    if (
        isinstance(v, list)
        and v
        and all(isinstance(p, list) and len(p) == 2 for p in v)
    ):
        return "{" + ", ".join(f"{_opt(a)}: {_opt(b)}" for a, b in v) + "}"
    return str(v)


def _where(rec: dict[str, Any]) -> str:
    roots = [s["path"] for s in rec.get("scopes", []) if s.get("root")]
    return printable(", ".join(roots) or "/")


def _mapped_size(rec: dict[str, Any]) -> int | None:
    """The size of the mapped (vmap) or scanned axis, from the options or from
    a variable's outer and inner shapes."""
    opts = rec.get("options", {})
    for k in ("axis_size", "length"):
        if isinstance(opts.get(k), int):
            return opts[k]
    created = {
        (c["collection"], c["path"]): c
        for c in rec.get("repack", {}).get("created", [])
    }
    for g in rec.get("groups", []):
        label = str(g.get("label") or "")
        if not label.startswith("axis "):
            continue
        try:
            axis = int(label.split()[1])
        except ValueError:
            continue
        pairs = [(v.get("outer"), v.get("inner")) for v in g.get("variables", [])]
        for c in rec.get("commit", []):
            if c["collection"] in g.get("collections", []) or c["collection"] == g.get(
                "filter"
            ):
                made = created.get((c["collection"], c["path"]))
                if made:
                    pairs.append((c.get("outer"), made.get("inner")))
        for outer, inner in pairs:
            o = (outer or {}).get("shape")
            i = (inner or {}).get("shape")
            if (
                o is not None
                and i is not None
                and len(o) == len(i) + 1
                and axis < len(o)
            ):
                return int(o[axis])
    return None


def _group_phrase(g: dict[str, Any]) -> str | None:
    """``params on axis 0``, ``batch_stats broadcast``: what one filter group did."""
    filt = g.get("filter")
    if filt is False or filt is None:
        return None
    names = "all collections" if filt is True else printable(str(filt))
    label = str(g.get("label") or "")
    if label.startswith("axis "):
        return f"{names} on {label}"
    return f"{names} {label}" if label else names


def summary(rec: dict[str, Any]) -> str:
    """One line for one transform: ``vmap over 8 at /: params on axis 0,
    batch_stats broadcast; rngs params split; 4 created``."""
    size = _mapped_size(rec)
    unit = " steps" if rec.get("transform") == "scan" else ""
    head = f"{rec['transform']}" + (f" over {size}{unit}" if size is not None else "")
    parts = [p for p in (_group_phrase(g) for g in rec.get("groups", [])) if p]
    text = f"{head} at {_where(rec)}" + (": " + ", ".join(parts) if parts else "")
    rngs = rec.get("rngs", [])
    if rngs:
        text += "; rngs " + printable(
            ", ".join(f"{r['stream']} {r['label']}" for r in rngs)
        )
    rp = rec.get("repack", {})
    counts = []
    if rp.get("created"):
        counts.append(f"{len(rp['created'])} created")
    if rp.get("mutated"):
        counts.append(f"{len(rp['mutated'])} updated")
    if counts:
        text += "; " + ", ".join(counts)
    return text


def text_lines(records: Sequence[dict[str, Any]], depth: int = 0) -> list[str]:
    """One block of lines per pack record, children indented."""
    pad = "  " * depth
    out: list[str] = []
    for rec in records:
        out.append(pad + summary(rec))
        if _options(rec):
            out.append(f"{pad}  options: {_options(rec)}")
        for g in rec.get("groups", []):
            if not g["collections"] and not g["variables"]:
                continue
            vs = g["variables"]
            ex = (
                f"; e.g. {printable(vs[0]['path'])} {_shape(vs[0]['outer'])} -> {_shape(vs[0]['inner'])}"
                if vs
                else ""
            )
            out.append(
                f"{pad}  [{g['label'] or g['index']}] {printable(', '.join(g['collections']))}: {len(vs)} variables{ex}"
            )
        rngs = rec.get("rngs", [])
        if rngs:
            out.append(
                f"{pad}  rngs: "
                + printable(", ".join(f"{r['stream']} {r['label']}" for r in rngs))
            )
        hidden = rec.get("hidden_collections", []) + [
            f"rng {r}" for r in rec.get("hidden_rngs", [])
        ]
        if hidden:
            out.append(f"{pad}  not lifted: {printable(', '.join(hidden))}")
        rp = rec.get("repack", {})
        created = rp.get("created", [])
        commits = {c["path"]: c for c in rec.get("commit", [])}
        ex = ""
        if created:
            c0 = created[0]
            outer = commits.get(c0["path"], {}).get("outer")
            ex = f"; e.g. {printable(c0['collection'] + ':' + c0['path'])} inner {_shape(c0['inner'])} -> outer {_shape(outer)}"
        out.append(
            f"{pad}  repack: {len(created)} created, {len(rp.get('mutated', []))} mutated · "
            f"commit: {len(rec.get('commit', []))} variables{ex}"
        )
        out += text_lines(rec.get("children", []), depth + 1)
    return out


def _var_html(v: dict[str, Any], shape_key: str, extra: str = "") -> str:
    c = color(v["collection"])
    return (
        f"<div class='v' title='{e(v['collection'])}'><span style='color:{c}'>&#9632;</span> "
        f"{e(v['path'])} {e(_shape(v.get(shape_key)))}{extra}</div>"
    )


def _record_html(rec: dict[str, Any]) -> str:
    head = f"<div class='t'>{e(rec['transform'])} at {e(_where(rec))}</div>"
    if _options(rec):
        head += f"<div class='m'>{e(_options(rec))}</div>"
    scopes = "".join(
        f"<div class='v'>{e(s['path'])}{'' if s['root'] else ' <span class=m>(rebuilt by path)</span>'}</div>"
        for s in rec.get("scopes", [])
    )
    groups = "".join(
        f"<div><b>{e(g['label'] or g['index'])}</b> <span class='m'>{e(_opt(g['filter']))}</span>: "
        + ", ".join(
            f"<span style='color:{color(c)}'>{e(c)}</span>" for c in g["collections"]
        )
        + "</div>"
        for g in rec.get("groups", [])
    )
    hidden = rec.get("hidden_collections", [])
    if hidden:
        groups += f"<div class='m'>not lifted: {e(', '.join(hidden))}</div>"
    inside = "".join(
        _var_html(v, "inner", f" <span class='m'>({e(g['label'])})</span>")
        for g in rec.get("groups", [])
        for v in g["variables"]
    )
    inside += "".join(
        f"<div class='v'>rng {e(r['stream'])}: {e(r['label'])}</div>"
        for r in rec.get("rngs", [])
    )
    rp = rec.get("repack", {})
    repack = "".join(
        _var_html(v, "inner", " <span class='add'>created</span>")
        for v in rp.get("created", [])
    )
    repack += "".join(
        _var_html(v, "inner", " <span class='sh'>mutated</span>")
        for v in rp.get("mutated", [])
    )
    commit = "".join(_var_html(v, "outer") for v in rec.get("commit", []))
    cols = [scopes, groups, inside, repack, commit]
    stages = "<span class='ar'>&#8594;</span>".join(
        f"<div class='st'><div class='sh'>{e(name)}</div>{body or '<span class=m>none</span>'}</div>"
        for name, body in zip(STAGES, cols)
    )
    kids = "".join(_record_html(k) for k in rec.get("children", []))
    kids_html = f"<div class='kids'>{kids}</div>" if kids else ""
    return f"<div class='lens-pack'>{head}<div class='stages'>{stages}</div>{kids_html}</div>"


class PackTraceView(View):
    """Displays a :class:`~lens.core.PackTrace` (or its JSON)."""

    def __init__(self, trace: PackTrace | dict[str, Any]):
        self.doc = trace.to_json() if isinstance(trace, PackTrace) else trace

    def text(self) -> str:
        """One summary line per pack call (nested calls indented), each with its
        details below."""
        recs = self.doc.get("packs", [])
        return "\n".join([f"PackTrace: {len(recs)} pack call(s)"] + text_lines(recs))

    def html_body(self) -> str:
        """The static diagram."""
        recs = self.doc.get("packs", [])
        if not recs:
            return "<div class='m'>PackTrace: no pack calls were recorded.</div>"
        return DIAGRAM_CSS + "".join(_record_html(r) for r in recs)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(include, exclude)
        bundle[MIME_TYPE] = self.doc
        return bundle


def pack_mimebundle(trace: PackTrace) -> dict[str, Any]:
    """The MIME bundle of a trace (used by ``PackTrace._repr_mimebundle_``)."""
    return PackTraceView(trace)._repr_mimebundle_()
