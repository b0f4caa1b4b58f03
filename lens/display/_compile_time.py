"""The compile-time view: stages, cache, repeats, and equations per module as bars.

Data: :mod:`lens._instruments.compile_time`. One picture, top to bottom: the
headline; the three stages as one stacked bar with a legend (lens's clock and
JAX's own timer for each); the persistent cache's answer; the unrolled repeats;
then one row per module path, sorted, its equations as a horizontal bar on a
shared scale with a labelled axis. Modules inside a repeat are drawn in the
repeat's colour, equations outside any module in grey.

Script-free HTML, every style inline and no CSS variables (JupyterLab's
sanitizer drops ``<style>`` and ``var(...)`` from untrusted notebooks): text
keeps the theme's colour, bars are mid-tones that read on light and dark
backgrounds. Rows are flex lines whose path column gives way (wraps) in a narrow
cell, so the picture reads at 600 px and 1200 px alike.
"""

from __future__ import annotations

import math
from typing import Any

from lens._instruments.compile_time import (
    OUTSIDE,
    CompileTime,
    ModuleEquations,
    seconds,
)
from lens.display._base import View, e

ROWS = 30
"""Module rows drawn before the rest fold into a ``<details>``."""

STAGE_COLOURS = {"trace": "#4e79a7", "lower": "#b07aa1", "compile": "#59a14f"}
BAR = "#4e79a7"
REPEAT = "#e08a1e"
OUTSIDE_BAR = "#8c8c8c"
CACHE_STYLE = {
    "hit": "background:rgba(46,125,50,.22)",
    "miss": "background:rgba(178,106,0,.22)",
    "off": "background:rgba(128,128,128,.2)",
}
BADGE = "border-radius:2px;padding:0 3px"
TRACK = "flex-grow:1;flex-shrink:1;min-width:80px;position:relative"


class CompileTimeView(View):
    """A :class:`~lens._instruments.compile_time.CompileTime` record, drawn."""

    def __init__(self, record: CompileTime):
        self.record = record

    def text(self) -> str:
        return self.record.text()

    def html_body(self) -> str:
        r = self.record
        parts = [
            f"<div class='c'>Compile time of {e(r.headline())}</div>",
            _stages_html(r),
            _cache_html(r),
        ]
        if not r.fresh:
            parts.append(
                "<div class='hint'>JAX may have answered from its in-memory caches "
                "(this JAX offers no fresh trace context)</div>"
            )
        for rep in r.repeats:
            parts.append(
                f"<div style='margin:2px 0'><span style='background:rgba(224,138,30,"
                f".22);{BADGE}'>{e(rep.line())}</span></div>"
            )
        parts.append(_modules_html(r))
        return "".join(parts)

    def rich(self) -> Any:
        from rich.text import Text

        r = self.record
        out = Text(f"Compile time of {r.headline()}\n", style="bold")
        for stage, ours, theirs in r.stages():
            out.append(f"  {stage:<8}", style=_rich_colour(STAGE_COLOURS[stage]))
            jax_text = f"   (JAX {seconds(theirs)})" if theirs is not None else ""
            out.append(f"{seconds(ours):>9}{jax_text}\n")
        out.append(f"  {r.cache_line()}\n")
        for rep in r.repeats:
            out.append(f"  {rep.line()}\n", style="yellow")
        top = max((m.equations for m in r.modules), default=0)
        width = max((len(m.path) for m in r.modules[:ROWS]), default=0)
        repeated = _repeated_paths(r)
        for m in r.modules[:ROWS]:
            n = max(1, round(30 * m.equations / top)) if top else 0
            style = (
                "grey50"
                if m.path == OUTSIDE
                else "yellow"
                if _in_repeat(m.path, repeated)
                else "blue"
            )
            out.append(f"  {m.path:<{width}} {m.equations:>8,} ")
            out.append("█" * n + "\n", style=style)
        if len(r.modules) > ROWS:
            rest = r.modules[ROWS:]
            total = sum(m.equations for m in rest)
            out.append(f"  … {len(rest)} more modules: {total:,} equations\n")
        return out


def _rich_colour(hex_colour: str) -> str:
    return f"bold {hex_colour}"


# -- stages and cache


def _stages_html(r: CompileTime) -> str:
    total = r.total_s or 1.0
    segments = []
    for stage, ours, theirs in r.stages():
        jax_text = f"; JAX's own timer: {seconds(theirs)}" if theirs is not None else ""
        pct = 100 * ours / total
        segments.append(
            f"<span title='{e(f'{stage}: {seconds(ours)}{jax_text}')}' "
            f"style='display:block;width:{pct:.2f}%;min-width:2px;height:100%;"
            f"background:{STAGE_COLOURS[stage]}'></span>"
        )
    bar = (
        "<div style='display:flex;width:100%;max-width:640px;height:12px;"
        "margin:4px 0 2px 0;border-radius:2px;overflow:hidden;"
        f"background:rgba(128,128,128,.15)'>{''.join(segments)}</div>"
    )
    legend = []
    for stage, ours, theirs in r.stages():
        jax_text = (
            f" <span class='m'>(JAX {e(seconds(theirs))})</span>"
            if theirs is not None
            else ""
        )
        legend.append(
            "<span style='white-space:nowrap;margin-right:14px'>"
            f"<span style='display:inline-block;width:9px;height:9px;margin-right:4px;"
            f"background:{STAGE_COLOURS[stage]};border-radius:1px'></span>"
            f"{stage} <b>{e(seconds(ours))}</b>{jax_text}</span>"
        )
    return f"{bar}<div style='display:flex;flex-wrap:wrap'>{''.join(legend)}</div>"


def _cache_html(r: CompileTime) -> str:
    detail = f" <span class='m'>{e(r.cache_detail)}</span>" if r.cache_detail else ""
    return (
        "<div style='margin:2px 0'>persistent cache: "
        f"<span style='{CACHE_STYLE.get(r.cache, CACHE_STYLE['off'])};{BADGE}'>"
        f"<b>{e(r.cache)}</b></span>{detail}</div>"
    )


# -- equations per module


def _repeated_paths(r: CompileTime) -> tuple[str, ...]:
    return tuple(p for rep in r.repeats for p in rep.paths)


def _in_repeat(path: str, repeated: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in repeated)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``x``."""
    if x <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(x))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= x:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def _modules_html(r: CompileTime) -> str:
    if not r.modules:
        return "<div class='m'>no equations</div>"
    top = nice_ceiling(max(m.equations for m in r.modules))
    label = min(max(len(m.path) for m in r.modules), 48)
    count = max(len(f"{m.equations:,}") for m in r.modules)
    repeated = _repeated_paths(r)

    def row(m: ModuleEquations) -> str:
        colour = (
            OUTSIDE_BAR
            if m.path == OUTSIDE
            else REPEAT
            if _in_repeat(m.path, repeated)
            else BAR
        )
        pct = 100 * m.equations / top
        share = 100 * m.equations / r.equations if r.equations else 0
        title = (
            f"{m.path}: {m.equations:,} equations of its own ({share:.1f}% of "
            f"{r.equations:,})"
            + (
                f"; {m.subtree:,} with its submodules"
                if m.subtree != m.equations
                else ""
            )
        )
        return (
            f"<div title='{e(title)}' style='display:flex;align-items:center;"
            "column-gap:8px;margin:1px 0'>"
            f"<span style='{_label_style(label)}'>{e(m.path)}</span>"
            f"<span style='{TRACK};height:11px'><span style='display:block;"
            f"height:100%;width:{pct:.2f}%;min-width:1px;background:{colour};"
            "border-radius:0 2px 2px 0'></span></span>"
            f"<span style='{_count_style(count)}'>{m.equations:,}</span></div>"
        )

    shown = "".join(row(m) for m in r.modules[:ROWS])
    rest = r.modules[ROWS:]
    more = ""
    if rest:
        n = sum(m.equations for m in rest)
        more = (
            f"<details style='margin-left:0'><summary class='m'>{len(rest)} more "
            f"modules: {n:,} equations</summary>{''.join(row(m) for m in rest)}"
            "</details>"
        )
    heading = (
        "<div style='margin:6px 0 2px 0'>equations per module <span class='m'>"
        "(each module's own, not its submodules'; they sum to the jaxpr's "
        f"{r.equations:,}, sub-jaxprs included)</span></div>"
    )
    legend = _legend(r)
    return (
        f"{heading}<div style='max-width:880px'>{shown}"
        f"{_axis(top, label, count)}{more}</div>{legend}"
    )


def _em(width_ch: int) -> str:
    """A width of ``width_ch`` monospace characters, in em: JupyterLab's sanitizer
    drops a ``ch`` width from untrusted outputs (0.6 em is a monospace digit)."""
    return f"{0.6 * width_ch + 0.2:.1f}em"


def _label_style(width_ch: int) -> str:
    return (
        f"flex-shrink:0;width:{_em(width_ch)};max-width:45%;overflow-wrap:anywhere;"
        "text-align:right"
    )


def _count_style(width_ch: int) -> str:
    return f"flex-shrink:0;width:{_em(width_ch)};text-align:right"


def _axis(top: float, label: int, count: int) -> str:
    ticks = []
    for i in range(5):
        value = top * i / 4
        text = f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"
        if i < 4:
            place = f"left:{25 * i}%;border-left:1px solid rgba(128,128,128,.7);"
            place += "padding-left:2px"
        else:
            place = "right:0;border-right:1px solid rgba(128,128,128,.7);"
            place += "padding-right:2px"
        ticks.append(
            f"<span class='m' style='position:absolute;top:0;{place};"
            f"line-height:1.2;font-size:11px'>{text}</span>"
        )
    return (
        "<div style='display:flex;column-gap:8px;margin:2px 0 0 0'>"
        f"<span style='{_label_style(label)}' class='m'>equations</span>"
        f"<span style='{TRACK};height:15px;border-top:1px solid rgba(128,128,128,.7)'>"
        f"{''.join(ticks)}</span>"
        f"<span style='{_count_style(count)}'></span></div>"
    )


def _legend(r: CompileTime) -> str:
    items = [(BAR, "a module's own equations")]
    if r.repeats:
        items.append((REPEAT, "inside an unrolled repeat"))
    if any(m.path == OUTSIDE for m in r.modules):
        items.append((OUTSIDE_BAR, "outside any module"))
    swatches = "".join(
        "<span style='white-space:nowrap;margin-right:14px'>"
        f"<span style='display:inline-block;width:9px;height:9px;margin-right:4px;"
        f"background:{colour};border-radius:1px'></span>"
        f"<span class='m'>{e(text)}</span></span>"
        for colour, text in items
    )
    return f"<div style='margin-top:4px'>{swatches}</div>"
