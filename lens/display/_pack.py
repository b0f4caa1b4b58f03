"""Pack traces: a text summary, a script-free HTML picture, and the extension's MIME type.

The bundle carries ``application/vnd.lens.pack+json`` (drawn interactively by the
JupyterLab extension), ``text/html`` and ``text/plain``. Both static forms draw the
same lanes (``lens.core._lanes``): one per variable, grouped by filter group, outer
and inner value side by side with the mapped axis marked, what came back and where
it was committed; each rng stream; nested transforms as nested boxes.

The HTML uses inline styles only (no ``<style>``, no scripts, no external assets),
so it reads the same where no extension runs and stylesheets are stripped (GitHub,
nbviewer, VS Code); colours are mid-tones and borders translucent, so it reads on
light and dark backgrounds alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from lens.core import MIME_TYPE, PackTrace
from lens.core import pack_trace as _lanes
from lens.display._base import View, e
from lens.display._glossary import Gloss, meaning, term_html
from lens.display._leaf import printable, short_dtype

_PALETTE = json.loads(
    resources.files("lens.display").joinpath("palette.json").read_text()
)
# One file for lens's static pictures and the JupyterLab extension (which ships a
# copy, extension/src/palette.json): tests keep the two equal and their colours the same.
_FIXED: dict[str, str] = _PALETTE["fixed"]
_OTHERS: list[str] = _PALETTE["others"]
PALETTE = list(_FIXED.values()) + _OTHERS

TEXT_LANES = 24
"""Lanes listed per transform in the text form before the rest are counted."""


def color(collection: str) -> str:
    """A stable colour per collection name (the same in every diagram)."""
    fixed = _FIXED.get(collection)
    if fixed is not None:
        return fixed
    h = int(hashlib.sha1(collection.encode()).hexdigest()[:6], 16)
    return _OTHERS[h % len(_OTHERS)]


def shape_text(spec: Mapping[str, Any] | None, axis: int | None = None) -> str:
    """``f32[8,4,3]``; with ``axis``, that dimension in asterisks: ``f32[*8*,4,3]``."""
    return "".join(t for t, _ in _shape_parts(spec, axis))


def _shape_parts(
    spec: Mapping[str, Any] | None, axis: int | None
) -> list[tuple[str, bool]]:
    """The pieces of a shape's text, each flagged when it is the mapped axis."""
    if not spec:
        return [("-", False)]
    if spec.get("dtype") == "pytree":
        n = len(spec.get("leaves", []))
        return [(f"pytree of {n} leaves", False)]
    dims = [str(d) for d in spec.get("shape", [])]
    parts: list[tuple[str, bool]] = [(f"{short_dtype(spec.get('dtype', '?'))}[", False)]
    for i, d in enumerate(dims):
        if i:
            parts.append((",", False))
        parts.append((f"*{d}*", True) if i == axis else (d, False))
    parts.append(("]", False))
    names = spec.get("names")
    if names:
        parts.append(
            (
                " (" + ",".join("None" if n is None else repr(n) for n in names) + ")",
                False,
            )
        )
    return parts


def _records(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records, described (lanes, summary) when the payload predates them."""
    return [r if "lanes" in r else _lanes.describe(r) for r in doc.get("packs", [])]


def _group_title(rec: Mapping[str, Any], gi: int) -> str:
    groups = rec.get("groups", [])
    if not 0 <= gi < len(groups):
        return "no group"
    g = groups[gi]
    filt = g.get("filter")
    if filt is True and g.get("label") in ("all", "", None):
        return "all collections"
    names = (
        "all"
        if filt is True
        else ", ".join(map(str, filt))
        if isinstance(filt, list)
        else str(filt)
    )
    return f"{names}: {g.get('label') or 'lifted'}"


def _grouped(rec: Mapping[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    by: dict[int, list[dict[str, Any]]] = {}
    for lane in rec.get("lanes", []):
        by.setdefault(lane["group"], []).append(lane)
    return sorted(by.items(), key=lambda kv: (kv[0] < 0, kv[0]))


def _roots(rec: Mapping[str, Any]) -> list[str]:
    return [s["path"] for s in rec.get("scopes", []) if s.get("root")]


def fate_text(lane: Mapping[str, Any], many_roots: bool) -> str:
    """``created``; with several lifted scopes, also where: ``created → /b``."""
    where = lane.get("committed")
    return lane["fate"] + (f" → {where}" if many_roots and where else "")


def flowing(rec: Mapping[str, Any]) -> list[str]:
    """A pass-through box's variables, one short entry each: ``Param linear/bias``
    (``, updated`` when it came back changed)."""
    out = []
    for lane in rec.get("lanes", []):
        fate = "" if lane["fate"] == "unchanged" else f" ({lane['fate']})"
        out.append(f"{lane['collection']} {lane['relative'] or lane['path']}{fate}")
    return out


def _commits_to(rec: Mapping[str, Any]) -> str | None:
    """``writes the variables back to /mlp`` when one scope is lifted and something
    is written back (with several, each lane says where)."""
    roots = _roots(rec)
    if len(roots) == 1 and any(lane.get("committed") for lane in rec.get("lanes", [])):
        return f"writes the variables back to {roots[0]}"
    return None


def scope_lines(rec: Mapping[str, Any]) -> list[str]:
    """``/a: its variables go through the transform``, ``/a/inner: goes in as part
    of /a``: a line per scope when there are several (one root says nothing new)."""
    notes = rec.get("scope_notes", [])
    return [
        f"{note['path']}: {note['text']}"
        for note in notes
        if not note["root"] or len(notes) > 1
    ]


def _outer_inner(lane: Mapping[str, Any]) -> tuple[Any, Any]:
    """The outer value shown: what came in, else what was committed."""
    return lane.get("outer") or lane.get("out"), lane.get("inner")


# --- text ----------------------------------------------------------------------

_OPTION_KEYS = (
    "variable_axes",
    "variable_broadcast",
    "variable_carry",
    "split_rngs",
    "length",
    "axis_size",
)


def _opt(v: Any) -> str:
    """A recorded option: mappings were recorded as ``[[key, value], ...]``."""
    if (
        isinstance(v, list)
        and v
        and all(isinstance(p, list) and len(p) == 2 for p in v)
    ):
        return "{" + ", ".join(f"{_opt(a)}: {_opt(b)}" for a, b in v) + "}"
    return str(v)


def options_text(rec: Mapping[str, Any]) -> str:
    """``variable_axes={params: 0} · split_rngs={params: True}``"""
    opts = rec.get("options", {})
    return " · ".join(
        f"{k}={_opt(opts[k])}"
        for k in _OPTION_KEYS
        if opts.get(k) not in (None, False, [], {})
    )


def text_lines(records: Sequence[Mapping[str, Any]], depth: int = 0) -> list[str]:
    """One summary line per pack record, then its lanes; children indented."""
    out: list[str] = []
    stack = [(r, depth) for r in reversed(records)]
    while stack:
        rec, d = stack.pop()
        pad = "  " * d
        out.append(pad + printable(rec.get("summary", rec.get("transform", "?"))))
        if options_text(rec):
            out.append(f"{pad}  options: {printable(options_text(rec))}")
        axes = rec.get("axes")
        if axes and axes.get("text"):
            out.append(f"{pad}  {printable(axes['text'])}")
        for line in scope_lines(rec):
            out.append(f"{pad}  {printable(line)}")
        many = len(_roots(rec)) > 1
        if _commits_to(rec):
            out.append(f"{pad}  {printable(_commits_to(rec))}")
        shown = 0
        total = len(rec.get("lanes", []))
        passes = rec.get("passes")
        if passes:
            out.append(f"{pad}  {printable(passes['text'])} · {passes['flow']}")
            names = flowing(rec)
            if names:
                more = (
                    f", ... {len(names) - TEXT_LANES} more"
                    if len(names) > TEXT_LANES
                    else ""
                )
                out.append(f"{pad}    {printable(', '.join(names[:TEXT_LANES]))}{more}")
            total = 0
        for gi, lanes in _grouped(rec) if not passes else ():
            out.append(
                f"{pad}  [{printable(_group_title(rec, gi))}] {len(lanes)} variable{'s' if len(lanes) != 1 else ''}"
            )
            for lane in lanes:
                if shown >= TEXT_LANES:
                    break
                shown += 1
                outer, inner = _outer_inner(lane)
                out.append(
                    f"{pad}    {printable(lane['collection'])} {printable(lane['relative'])}  "
                    f"{shape_text(outer, lane['axis'])} → {shape_text(inner)}  "
                    f"{printable(lane['note'])}; {printable(fate_text(lane, many))}"
                )
        if total > shown:
            out.append(f"{pad}    ... {total - shown} more variables")
        for r in rec.get("rng_lanes", []):
            out.append(f"{pad}  rng {printable(r['stream'])}: {r['text']}")
        hidden = list(rec.get("hidden_collections", [])) + [
            f"rng {r}" for r in rec.get("hidden_rngs", [])
        ]
        if hidden:
            out.append(f"{pad}  not lifted: {printable(', '.join(hidden))}")
        for child in reversed(rec.get("children", [])):
            stack.append((child, d + 1))
    return out


# --- script-free HTML ----------------------------------------------------------

_BOX = (
    "border:1px solid rgba(128,128,128,.45);border-radius:4px;margin:4px 0;"
    "padding:2px 6px;max-width:100%;box-sizing:border-box"
)
_MUTED = "opacity:.72"
_WRAP = "white-space:normal;overflow-wrap:break-word"  # what the sanitizer keeps
# A shape never breaks inside its brackets (f32[5,\n32] misreads as two values);
# only before its axis names. A cell too narrow for one scrolls with the root.
_TOKENS = "white-space:normal;overflow-wrap:normal;word-break:keep-all"
# A path breaks at "/" (and inside a name only where one name is wider than its
# cell); the sanitizer keeps only normal and break-word for overflow-wrap.
_PATH = "white-space:normal;overflow-wrap:break-word;min-width:12em"
# Text keeps the theme's colour (AA contrast light and dark); a translucent
# background says the fate.
_FATE_STYLE = {
    "created": "background:rgba(46,125,50,.22);border-radius:2px;padding:0 2px",
    "updated": "background:rgba(178,106,0,.22);border-radius:2px;padding:0 2px",
    "dropped": "background:rgba(198,40,40,.22);border-radius:2px;padding:0 2px",
    "unchanged": _MUTED,
}


def _shape_html(spec: Mapping[str, Any] | None, axis: int | None = None) -> str:
    return "".join(
        f"<b style='text-decoration:underline'>{e(t.strip('*'))}</b>"
        if mapped
        else e(t)
        for t, mapped in _shape_parts(spec, axis)
    )


def _lane_html(
    lane: Mapping[str, Any], many_roots: bool, g: Gloss, note: bool = True
) -> str:
    outer, inner = _outer_inner(lane)
    c = color(lane["collection"])
    full = f"{lane['collection']} {lane['path']}"
    return (
        f"<tr title='{e(full)}' style='vertical-align:top'>"
        f"<td style='{_PATH};padding:1px 8px 1px 0'>"
        f"<span style='color:{c}'>&#9632;</span> <span style='{_MUTED}'>"
        f"{e(lane['collection'])}</span> {'/<wbr>'.join(e(p) for p in lane['path'].split('/'))}</td>"
        f"<td style='{_TOKENS};padding:1px 4px'>{_shape_html(outer, lane['axis'])}</td>"
        f"<td style='{_MUTED};padding:1px 2px'>&#8594;</td>"
        f"<td style='{_TOKENS};padding:1px 4px'>{_shape_html(inner)}</td>"
        f"<td style='{_WRAP};min-width:12em;padding:1px 0 1px 8px'>"
        f"{g(lane['note']) + '; ' if note else ''}"
        f"<span style='{_FATE_STYLE[lane['fate']]}' title='{e(lane['fate_text'])}'>"
        f"{e(fate_text(lane, many_roots))}</span></td></tr>"
    )


def _passes_html(rec: Mapping[str, Any], passes: Mapping[str, Any], g: Gloss) -> str:
    """A pass-through box (jit, remat): what it does, then the variables that flow."""
    chips = " ".join(
        f"<span style='white-space:nowrap;{_FATE_STYLE[lane['fate']]}' "
        f"title='{e(lane['collection'] + ' ' + lane['path'] + ': ' + lane['fate_text'])}'>"
        f"<span style='color:{color(lane['collection'])}'>&#9632;</span> "
        f"{e(lane['relative'] or lane['path'])}</span>"
        for lane in rec.get("lanes", [])
    )
    return (
        f"<div style='{_WRAP}'>{g(passes['text'])} "
        f"<span style='{_MUTED}'>· {g(passes['flow'])}</span></div>"
        + (f"<div style='{_WRAP};margin-left:8px'>{chips}</div>" if chips else "")
    )


def _record_html(rec: Mapping[str, Any], crumbs: list[str], g: Gloss) -> str:
    """One transform's box, its terms explained on hover by ``g`` (the view's)."""
    trail = crumbs + [f"{rec.get('transform', '?')}"]
    head = (
        f"<summary style='cursor:pointer;{_WRAP}'><b>{e(rec.get('transform', '?'))}</b> "
        f"<span>{g(str(rec.get('summary', '')))}</span></summary>"
    )
    body = []
    if options_text(rec):
        body.append(f"<div style='{_MUTED};{_WRAP}'>{e(options_text(rec))}</div>")
    axes = rec.get("axes")
    if axes and axes.get("text"):
        body.append(f"<div style='{_WRAP}'>{g(axes['text'])}</div>")
    if len(trail) > 1:
        body.append(f"<div style='{_MUTED};{_WRAP}'>in: {e(' › '.join(trail))}</div>")
    for line in scope_lines(rec):
        body.append(f"<div style='{_WRAP}'>{g(line)}</div>")
    if _commits_to(rec):
        body.append(f"<div style='{_MUTED};{_WRAP}'>{g(str(_commits_to(rec)))}</div>")
    many = len(_roots(rec)) > 1
    passes = rec.get("passes")
    if passes:
        body.append(_passes_html(rec, passes, g))
    for gi, lanes in _grouped(rec) if not passes else ():
        # one note for the whole group ("vmap axis 0, size 3") is said once, in its
        # head, as the extension does; each lane then shows only what came back
        notes = {lane["note"] for lane in lanes}
        shared = lanes[0]["note"] if len(lanes) > 1 and len(notes) == 1 else None
        title = g(_group_title(rec, gi))
        each = f" · each {g(shared)}" if shared else ""
        rows = "".join(_lane_html(lane, many, g, shared is None) for lane in lanes)
        body.append(
            f"<details open style='margin:0 0 0 4px'><summary style='cursor:pointer'>{title} "
            f"<span style='{_MUTED}'>· {len(lanes)} variable{'s' if len(lanes) != 1 else ''}"
            f"{each}</span></summary><table style='border-collapse:collapse;width:auto;"
            f"margin:0;table-layout:auto'>{rows}</table></details>"
        )
    for r in rec.get("rng_lanes", []):
        body.append(f"<div>rng <b>{e(r['stream'])}</b>: {g(r['text'])}</div>")
    hidden = list(rec.get("hidden_collections", [])) + [
        f"rng {r}" for r in rec.get("hidden_rngs", [])
    ]
    if hidden:
        body.append(
            f"<div style='{_MUTED}'>not {g('lifted')}: {e(', '.join(hidden))}</div>"
        )
    kids = "".join(_record_html(k, trail, g) for k in rec.get("children", []))
    return f"<details open style='{_BOX};margin-left:0'>{head}{''.join(body)}{kids}</details>"


LEGEND = (
    "<div style='opacity:.72;overflow-wrap:break-word'>"
    f"{term_html('outer value → inner value', meaning('outer value → inner value'))}; "
    "<b style='text-decoration:underline'>underlined</b>: the axis the transform maps "
    f"or scans over · <span style='{_FATE_STYLE['created']}'>created</span> · "
    f"<span style='{_FATE_STYLE['updated']}'>updated</span> · "
    f"<span style='{_FATE_STYLE['dropped']}'>dropped</span></div>"
)


def _header(recs: Sequence[Mapping[str, Any]]) -> str:
    """``Pack trace · 2 transforms · 9 variable lanes`` (the extension's header too)."""
    n = lanes = 0
    stack = list(recs)
    while stack:
        r = stack.pop()
        n += 1
        lanes += len(r.get("lanes", []))
        stack.extend(r.get("children", []))
    return (
        f"<div><b>Pack trace</b> · {n} transform{'s' if n != 1 else ''} · "
        f"{lanes} variable lane{'s' if lanes != 1 else ''}</div>"
    )


class PackTraceView(View):
    """Displays a :class:`~lens.core.PackTrace` (or its JSON)."""

    def __init__(self, trace: PackTrace | dict[str, Any]):
        doc = trace.to_json() if isinstance(trace, PackTrace) else trace
        self.doc = {**doc, "packs": _records(doc)}

    def text(self) -> str:
        """One summary line per pack call (nested calls indented), its lanes below."""
        recs = self.doc.get("packs", [])
        return "\n".join([f"PackTrace: {len(recs)} pack call(s)"] + text_lines(recs))

    def html_body(self) -> str:
        """The static picture: nested boxes, lanes per filter group, a legend."""
        recs = self.doc.get("packs", [])
        if not recs:
            return "<div class='m'>PackTrace: no pack calls were recorded.</div>"
        g = Gloss()
        g.seen.add("outer value → inner value")  # the legend explains it
        return _header(recs) + LEGEND + "".join(_record_html(r, [], g) for r in recs)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(include, exclude)
        bundle[MIME_TYPE] = self.doc
        return bundle


def pack_mimebundle(trace: PackTrace) -> dict[str, Any]:
    """The MIME bundle of a trace (used by ``PackTrace._repr_mimebundle_``)."""
    return PackTraceView(trace)._repr_mimebundle_()
