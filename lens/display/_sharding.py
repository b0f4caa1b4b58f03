"""``lens.sharding``'s view: the problems first, the replicated arrays worth
sharding, a bar per device, then each array's layout with a picture of its
blocks, each cell coloured by the device that holds it.

Script-free HTML with inline styles (trusted or not, nbconvert, GitHub): the
bars and the pictures are inline blocks sized in pixels, no SVG. Rows wrap in a
narrow cell instead of clipping: an array's picture moves under its text.
"""

from __future__ import annotations

from typing import Any

from lens._instruments.sharding import (
    ArrayLayout,
    Block,
    ShardingReport,
    array_line,
    type_str,
    where_str,
)
from lens._instruments.units import fmt_bytes
from lens.display._base import View, e
from lens.display._glossary import Gloss

# one colour per device (by its place in the mesh), translucent so that text in
# the theme's colour reads on it, light or dark
PALETTE = (
    "rgba(31,119,180,.55)",
    "rgba(255,127,14,.55)",
    "rgba(44,160,44,.55)",
    "rgba(214,39,40,.5)",
    "rgba(148,103,189,.55)",
    "rgba(140,86,75,.55)",
    "rgba(227,119,194,.55)",
    "rgba(127,127,127,.55)",
    "rgba(188,189,34,.55)",
    "rgba(23,190,207,.55)",
)
PROBLEM = "background:rgba(198,40,40,.18);border-radius:2px;padding:0 3px"
FLAG = "background:rgba(178,106,0,.2);border-radius:2px;padding:0 3px"
BAR_PX = 200
"""The widest device bar."""
ROWS = 200
"""Arrays listed; the rest are counted."""
PICTURES = 64
"""Arrays drawn; the rows after these have no picture."""
MAX_CELLS = 16
"""Blocks drawn along one dimension; past this the picture says how many more."""
PICTURE_PX = (176, 96)
"""The most a picture takes (width, height) before its cells reach their minimum."""
LABELLED_PX = 400
"""The widest a picture grows to show its cells' labels."""
CHAR_PX = 6.2
"""A cell label's character width (10px monospace)."""
WRAP = "white-space:normal;overflow-wrap:anywhere"
TEXT_PX = 560
"""The widest an array's text column grows; its picture comes after it."""


def _ranges(ids: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5)`` -> ``0-2,5``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


class ShardingView(View):
    """A :class:`~lens._instruments.sharding.ShardingReport`, drawn."""

    def __init__(self, report: ShardingReport):
        self.report = report
        order = {d.id: i for i, d in enumerate(report.devices)}
        self._order = order
        self._process = {d.id: d.process for d in report.devices}

    # -- shared

    def colour(self, ids: tuple[int, ...]) -> str:
        """The colour of a block held by ``ids``: its first device's."""
        first = min(ids, key=lambda i: self._order.get(i, i))
        return PALETTE[self._order.get(first, first) % len(PALETTE)]

    def devices_str(self, ids: tuple[int, ...]) -> str:
        """``d0-3``, or ``p0:d0-3 p1:d4-7`` with several processes."""
        if self.report.processes <= 1:
            return "d" + _ranges(ids)
        by: dict[int, list[int]] = {}
        for i in ids:
            by.setdefault(self._process.get(i, 0), []).append(i)
        return " ".join(f"p{p}:d{_ranges(tuple(v))}" for p, v in sorted(by.items()))

    def text(self) -> str:
        return self.report.text()

    # -- HTML

    def html_body(self) -> str:
        r = self.report
        g = Gloss()
        parts = [f"<div class=c style='{WRAP}'>{g(r.headline())}</div>"]
        if r.rules:
            rules = ", ".join(f"({k!r}, {v!r})" for k, v in r.rules)
            parts.append(f"<div class=m style='{WRAP}'>rules: {e(rules)}</div>")
        parts.append(self._problems_html())
        parts.append(self._flagged_html(g))
        parts.append(self._devices_html())
        parts.append(self._arrays_html(g))
        return "".join(parts)

    def _problems_html(self) -> str:
        r = self.report
        if not r.problems:
            return "<div class=m style='margin-top:4px'>no problems found</div>"
        rows = []
        for p, same in r.problem_groups():
            head, *rest = p.message.splitlines()
            more = "".join(
                f"<div class={'hint' if line.startswith('fix:') else 'm'}>"
                f"{e(line)}</div>"
                for line in rest
            )
            if same:
                paths = "".join(f"<div>{e(q.path)}</div>" for q in same[:ROWS])
                rest_n = len(same) - ROWS
                tail = f"<div>… and {rest_n} more</div>" if rest_n > 0 else ""
                more += (
                    f"<details style='margin-left:0'><summary class=m>the same for "
                    f"{len(same)} more array{'s' if len(same) != 1 else ''}"
                    f"</summary><div class=m style='margin-left:1em'>{paths}{tail}"
                    "</div></details>"
                )
            rows.append(
                f"<div style='margin:3px 0 3px 16px;{WRAP}'>"
                f"<span style='{PROBLEM}'>{e(p.kind)}</span> {_head_html(head, p.path)}"
                f"<div style='margin-left:1.5em'>{more}</div></div>"
            )
        n = len(r.problems)
        return (
            f"<div style='margin-top:4px'><b>{n} problem{'s' if n != 1 else ''}"
            "</b> <span class=m>found before compiling</span></div>" + "".join(rows)
        )

    def _flagged_html(self, g: Gloss) -> str:
        r = self.report
        if not r.flagged:
            return ""
        rows = "".join(
            f"<div style='margin:2px 0 2px 16px;{WRAP}'><span style='{FLAG}'>"
            f"{e(f.path)}</span> {e(fmt_bytes(f.nbytes))} on each of {f.devices} "
            "devices; "
            + (
                f"shard dim {f.dim} over {e(repr(f.axis))}: saves "
                f"<b>{e(fmt_bytes(f.saved))}</b> per device"
                if f.axis is not None
                else "no mesh axis divides any of its dimensions"
            )
            + "</div>"
            for f in r.flagged
        )
        return (
            f"<div style='margin-top:4px'>{g('replicated')}, "
            f"{e(fmt_bytes(r.threshold))} or more</div>{rows}"
        )

    def _devices_html(self) -> str:
        r = self.report
        groups = r.device_groups()
        if not groups:
            return ""
        most = max(x.bytes for x in groups) or 1
        rows = []
        for x in groups:
            width = round(BAR_PX * x.bytes / most)
            each = " each" if len(x.ids) > 1 else ""
            outside = "" if x.in_mesh else " <span class=m>(outside the mesh)</span>"
            title = f"{x.name(r.processes)}: {fmt_bytes(x.bytes)}{each}"
            rows.append(
                f"<tr title='{e(title)}'><td>{e(x.name(r.processes))}</td>"
                f"<td><span style='display:inline-block;vertical-align:middle;"
                f"height:10px;width:{width}px;background:{self.colour(x.ids)}'>"
                "</span></td>"
                f"<td style='text-align:right'>{e(fmt_bytes(x.bytes))}{each}</td>"
                f"<td class=m>{x.arrays} arrays{outside}</td></tr>"
            )
        uncounted = r.uncounted
        tail = (
            f"<div class=hint>not on any device: {len(uncounted)} "
            f"array{'s' if len(uncounted) != 1 else ''} "
            f"({e(fmt_bytes(sum(a.nbytes for a in uncounted)))}): on the host, or "
            "not laid out because of a problem</div>"
            if uncounted
            else ""
        )
        return (
            "<div style='margin-top:4px'>bytes per device</div>"
            f"<table>{''.join(rows)}</table>{tail}"
        )

    def _arrays_html(self, g: Gloss) -> str:
        r = self.report
        shown = r.arrays[:ROWS]
        rows = [
            self._array_html(a, g, picture=i < PICTURES) for i, a in enumerate(shown)
        ]
        rest = r.arrays[ROWS:]
        tail = (
            f"<div class=hint>and {len(rest)} more arrays "
            f"({e(fmt_bytes(sum(a.nbytes for a in rest)))}); .text() lists all</div>"
            if rest
            else ""
        )
        return (
            f"<div style='margin-top:4px'>arrays ({len(r.arrays)})</div>"
            + "".join(rows)
            + tail
        )

    def _array_html(self, a: ArrayLayout, g: Gloss, picture: bool) -> str:
        words = [f"<b>{e(a.path)}</b>", f"<span>{e(type_str(a))}</span>"]
        if a.names is not None:
            names = "(" + ",".join(repr(n) for n in a.names) + ")"
            words.append(f"<span class=ax>{e(names)}</span>")
        if a.state == "host":
            words.append("<span class=m>on the host (not placed)</span>")
        elif a.state == "unresolved":
            if a.spec:
                words.append(f"<span class=sh>{e(a.spec)}</span>")
            words.append(
                f"<span style='{PROBLEM}'>not laid out: see the problems</span>"
            )
        else:
            if a.spec is not None:
                words.append(f"<span class=sh>{e(a.spec)}</span>")
                words.append(f"<span class=m>{e(a.split())}</span>")
            else:
                words.append(f"<span class=sh>{e(where_str(a))}</span>")
            if a.shard_shape is not None and a.shard_shape != a.shape:
                words.append(
                    f"<span class=m>shard {e(type_str(a, a.shard_shape))} "
                    f"({e(fmt_bytes(a.shard_bytes))})</span>"
                )
            if a.replicated:
                words.append(
                    f"<span class=m>{g('replicated')} on {a.devices} devices</span>"
                )
            elif a.replicas > 1:
                words.append(f"<span class=m>{a.replicas} copies of each part</span>")
            if a.state != "placed":
                state, means = _STATE[a.state]
                words.append(
                    f"<span class=m title='{e(means)}' style='cursor:help;"
                    f"border-bottom:1px dotted rgba(128,128,128,.9)'>{state}</span>"
                )
        # the text in a column of its own (so that the pictures line up), which
        # gives way in a narrow cell until the picture moves under it
        text = (
            f"<div style='flex:1 1 260px;max-width:{TEXT_PX}px;min-width:0;{WRAP}'>"
            + " ".join(words)
            + "</div>"
        )
        pic = self.picture(a) if picture and a.blocks else ""
        return (
            "<div style='display:flex;flex-wrap:wrap;align-items:flex-start;"
            f"column-gap:12px;row-gap:2px;margin:3px 0 5px 16px'>{text}{pic}</div>"
        )

    def picture(self, a: ArrayLayout) -> str:
        """The blocks of ``a`` over (at most) two of its dimensions: a grid of
        cells, each coloured by the device that holds it and labelled with the
        devices when the label fits."""
        dims = _shown_dims(a)
        cells, rows, cols = _grid(a.blocks, dims)
        nr, nc = min(len(rows), MAX_CELLS), min(len(cols), MAX_CELLS)
        w = max(14, min(44, PICTURE_PX[0] // max(nc, 1)))
        h = max(14, min(24, PICTURE_PX[1] // max(nr, 1)))
        # wider cells where the labels are long (several processes), if the
        # picture stays within LABELLED_PX
        longest = max((len(self.devices_str(ids)) for ids in cells.values()), default=0)
        want = round(longest * CHAR_PX) + 4
        if want > w and want * nc <= LABELLED_PX:
            w = want
        lines = []
        for i in range(nr):
            row = []
            for j in range(nc):
                ids = cells.get((i, j), ())
                label = self.devices_str(ids) if ids else ""
                where = _where(a, dims, rows[i], cols[j])
                fits = len(label) * CHAR_PX <= w - 2
                row.append(
                    f"<span title='{e(where)} on {e(label)}' style='display:"
                    f"inline-block;box-sizing:border-box;width:{w}px;height:{h}px;"
                    f"background:{self.colour(ids) if ids else 'none'};"
                    "border:1px solid rgba(128,128,128,.55);font-size:10px;"
                    f"line-height:{h - 2}px;text-align:center;overflow:hidden;"
                    f"white-space:nowrap;vertical-align:top'>{e(label) if fits else ''}"
                    "</span>"
                )
            lines.append(
                f"<div style='height:{h}px;white-space:nowrap'>{''.join(row)}</div>"
            )
        more = []
        if len(rows) > nr:
            more.append(f"{len(rows)} parts down")
        if len(cols) > nc:
            more.append(f"{len(cols)} parts across")
        caption = _caption(a, dims) + (
            f"; first {MAX_CELLS} of {', '.join(more)}" if more else ""
        )
        return (
            "<div style='flex:none;line-height:1.2'>"
            f"<div style='display:inline-block;border:1px solid rgba(128,128,128,.7)'>"
            f"{''.join(lines)}</div>"
            f"<div class=m style='font-size:10px;max-width:{max(nc * w, 120)}px;"
            f"{WRAP}'>{e(caption)}</div></div>"
        )

    # -- rich

    def rich(self) -> Any:
        from rich.text import Text

        r = self.report
        out = Text(r.headline() + "\n", style="bold")
        if r.problems:
            out.append(f"{len(r.problems)} problems, found before compiling:\n")
            for p, same in r.problem_groups():
                head, *rest = p.message.splitlines()
                out.append(f"  {p.kind}", style="bold red")
                out.append(f": {head}\n")
                for line in rest:
                    style = "italic" if line.startswith("fix:") else "dim"
                    out.append(f"      {line}\n", style=style)
                if same:
                    out.append(f"      the same for {len(same)} more\n", style="dim")
        else:
            out.append("no problems found\n", style="dim")
        if r.flagged:
            out.append(f"replicated, {fmt_bytes(r.threshold)} or more:\n")
            for f in r.flagged:
                out.append(f"  {f.line()}\n", style="yellow")
        groups = r.device_groups()
        if groups:
            out.append("bytes per device:\n")
            most = max(x.bytes for x in groups) or 1
            width = max(len(x.name(r.processes)) for x in groups)
            for x in groups:
                out.append(f"  {x.name(r.processes):<{width}}  ")
                out.append(
                    "█" * round(24 * x.bytes / most), style=_rich(self.colour(x.ids))
                )
                out.append(f" {fmt_bytes(x.bytes)}\n")
        out.append("arrays:\n")
        width = min(40, max((len(a.path) for a in r.arrays), default=0))
        for a in r.arrays[:ROWS]:
            out.append(f"  {a.path:<{width}}", style="bold")
            out.append(f"  {array_line(a)}\n")
        if len(r.arrays) > ROWS:
            out.append(f"  … and {len(r.arrays) - ROWS} more arrays\n", style="dim")
        return out


_STATE = {  # an array not placed yet: the word shown, and its hover text
    "abstract": (
        "abstract",
        "an abstract array (ShapeDtypeStruct): as its sharding says",
    ),
    "annotated": (
        "planned",
        "not placed yet: as its annotation asks, under the rules, on the mesh",
    ),
    "default": (
        "default",
        "no annotation: replicated on the mesh, as nn.get_sharding lays it out",
    ),
    "deleted": (
        "deleted",
        "donated to a jitted call (donate_argnums) or deleted: laid out as it "
        "was, its bytes freed and not counted",
    ),
}


def _head_html(head: str, path: str) -> str:
    """A problem's first line, its variable's path in bold."""
    if head.startswith(path):
        return f"<b>{e(path)}</b>{e(head[len(path) :])}"
    return e(head)


def _rich(rgba: str) -> str:
    r, g, b = (int(v) for v in rgba[5:-1].split(",")[:3])
    return f"rgb({r},{g},{b})"


def _shown_dims(a: ArrayLayout) -> tuple[int, ...]:
    """The dimensions a picture draws: a 1-D or 2-D array's own; of a larger
    one, its first two split dimensions (or the first two)."""
    if len(a.shape) <= 2:
        return tuple(range(len(a.shape)))
    split = [i for i, axes in enumerate(a.axes) if axes]
    return tuple(split[:2]) if split else (0, 1)


def _grid(
    blocks: tuple[Block, ...], dims: tuple[int, ...]
) -> tuple[
    dict[tuple[int, int], tuple[int, ...]], list[tuple[int, int]], list[tuple[int, int]]
]:
    """Cells ``(row, column) -> device ids`` over the distinct ranges along the
    shown dimensions (one row for a 1-D picture, one cell for a scalar)."""

    def span(b: Block, d: int | None) -> tuple[int, int]:
        return (0, 1) if d is None else (b.start[d], b.stop[d])

    down = dims[0] if len(dims) == 2 else None
    across = dims[-1] if dims else None
    rows = sorted({span(b, down) for b in blocks})
    cols = sorted({span(b, across) for b in blocks})
    at_r = {s: i for i, s in enumerate(rows)}
    at_c = {s: j for j, s in enumerate(cols)}
    cells: dict[tuple[int, int], set[int]] = {}
    for b in blocks:
        key = (at_r[span(b, down)], at_c[span(b, across)])
        cells.setdefault(key, set()).update(b.devices)
    return {k: tuple(sorted(v)) for k, v in cells.items()}, rows, cols


def _where(
    a: ArrayLayout, dims: tuple[int, ...], row: tuple[int, int], col: tuple[int, int]
) -> str:
    """``[0:4, 8:12]`` (``:`` for a dimension the picture does not split)."""
    spans = [":"] * len(a.shape)
    if len(dims) == 2:
        spans[dims[0]] = f"{row[0]}:{row[1]}"
    if dims:
        spans[dims[-1]] = f"{col[0]}:{col[1]}"
    for i, (lo_hi, n) in enumerate(zip(spans, a.shape, strict=True)):
        if lo_hi == f"0:{n}":
            spans[i] = ":"
    return "[" + ", ".join(spans) + "]"


def _caption(a: ArrayLayout, dims: tuple[int, ...]) -> str:
    if not dims:
        return "a scalar"
    if len(a.blocks) == 1:
        return "all of it"
    if len(dims) == 1:
        return f"dim {dims[0]} →"
    head = f"dim {dims[0]} ↓ dim {dims[1]} →"
    hidden = [i for i in range(len(a.shape)) if i not in dims and a.axes[i]]
    if hidden:
        head += f" (dims {', '.join(map(str, hidden))} split too: devices merged)"
    return head
