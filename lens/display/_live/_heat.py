"""Per-layer pictures of a live view: layer-by-step heatmaps and per-layer bars.

A heatmap is a CSS grid of coloured cells (one row per layer of a stack, or per
module; one column per sample, binned past ``COLUMNS``), with its rows labelled
(layer index or module path), the steps of its columns below it, and a colour bar
with the range the colours span. Colours are log RMS on viridis. Where rows differ
in size far more than any row changes over time (modules of different widths, in
notebook 06), one shared range would draw every row as a flat band: each row is
then coloured relative to its own median, and the caption says so. The colour
range spans at least ``MIN_DECADES``, so a change of a few percent stays faint.

The bars beside each stack's name start at zero (a spread of 0.246..0.262 looks
as small as it is) and print their range.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from lens.display._base import e
from lens.display._glossary import Gloss
from lens.display._leaf import fmt_num
from lens.display._live._marks import (
    BAD,
    BOX,
    CHAR_PX,
    MUTED,
    centred_tick,
    gutter_px,
    step_row,
)
from lens.display._live._ticks import log_label, nice_ticks
from lens.display._stacked import BAR_PX, MAX_BARS, label, outliers

COLUMNS = 60
ROWS = 48
PER_ROW = 2.0
"""Rows get a scale each when their medians differ this many times more (in
decades) than any row changes over time: one shared range would draw them as
flat bands."""
MIN_DECADES = math.log10(1.5)
"""The least span of the colour range (log10): RMS x1.5 from end to end."""
MIN_GRID_PX = 200
"""The narrowest heatmap grid its step labels must fit in."""
LABEL_CHARS = 24
"""Row labels longer than this are cut at the front (the full path is the title)."""
# viridis at nine stops: dark (small) to yellow (large); readable on both themes
RAMP = np.array(
    [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ],
    np.float64,
)
LEVELS = 256
"""Colours a cell can take (the ramp, quantised: one lookup per cell)."""
GRADIENT = (
    "linear-gradient(to right,"
    + ",".join("#{:02x}{:02x}{:02x}".format(*map(int, c)) for c in RAMP)
    + ")"
)


class _Colours(NamedTuple):
    """What the cells show: log RMS, or log RMS over the row's median."""

    values: np.ndarray  # log10, per cell
    lo: float  # the colour range (log10)
    hi: float
    per_row: bool
    between: float  # decades between the rows' medians


def heatmap(
    title: str,
    hist: np.ndarray,
    names: list[str],
    steps: list[float],
    stacked: bool,
    gloss: Gloss | None = None,
) -> str:
    """``hist[row, sample]`` (RMS) as a labelled heatmap with its colour bar; its
    caption's terms explained on hover by ``gloss`` (the picture's)."""
    g = gloss or Gloss()
    note = _standing_out(hist[:, -1], names)
    h, row_of = _bin(hist, ROWS, 0)
    h, col_of = _bin(h, COLUMNS, 1)
    rows, cols = h.shape
    colours = _colours(h)
    cells = "".join(_ramp(colours.values, colours.lo, colours.hi).ravel().tolist())
    px = max(3, min(12, 120 // rows)) if stacked else 12
    labels, gutter = _row_labels(names, row_of, hist, stacked, px)
    xticks = _step_ticks([steps[b - 1] for _, b in col_of])
    scale = (
        f"log colour, each row relative to its own median (the rows differ "
        f"{_times(colours.between)}, more than any row changes)"
        if colours.per_row
        else "log colour"
    )
    what = "layer" if stacked else "module"
    return (
        "<div class='lens-live-heat' style='flex:1 1 280px;min-width:0;"
        "max-width:560px'>"
        f"<div style='white-space:normal;word-wrap:break-word'>{g(title)}"
        f"<span style='color:{BAD}'>{e(note)}</span></div>"
        f"<div style='{MUTED};white-space:normal;word-wrap:break-word'>"
        f"rows: {what}, columns: step; {g(scale)}</div>"
        "<div style='display:flex;font-size:11px'>"
        f"<div style='position:relative;flex:none;width:{gutter}px;"
        f"height:{rows * px + 2}px;{MUTED}'>{labels}</div>"
        "<div class='lens-live-cells' style='display:grid;flex:1 1 auto;"
        f"min-width:0;grid-template-columns:repeat({cols},minmax(0,1fr));"
        f"grid-auto-rows:{px}px;{BOX}'>{cells}</div></div>"
        f"{step_row(gutter, xticks, 'lens-live-heat-steps')}"
        f"{_colour_bar(colours, gutter)}"
        "</div>"
    )


def _colours(h: np.ndarray) -> _Colours:
    """Log RMS with one range for all rows, or each row over its own median
    where the rows differ far more than any of them changes (``PER_ROW``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log10(h)
    ref = _row_medians(lg)
    known = ref[np.isfinite(ref)]
    between = float(known.max() - known.min()) if known.size > 1 else 0.0
    per_row = between > MIN_DECADES and between > PER_ROW * _largest_change(lg)
    if per_row:
        lg = lg - np.where(np.isfinite(ref), ref, 0.0)[:, None]
    lo, hi = _colour_range(lg)
    return _Colours(lg, lo, hi, per_row, between)


def _row_labels(
    names: list[str],
    row_of: list[tuple[int, int]],
    hist: np.ndarray,
    stacked: bool,
    px: int,
) -> tuple[str, int]:
    """The rows' labels (each ``every`` rows where rows are thin), placed at the
    rows' middles, each titled with its RMS range; and the gutter's width."""
    labels = [_row_name(names, row_of, i, stacked) for i in range(len(row_of))]
    every = max(1, math.ceil(11 / px))
    html = "".join(
        f"<span class='lens-live-row' title='{e(_row_title(names, row_of, i, hist))}' "
        f"style='position:absolute;right:4px;top:{(i + 0.5) * px + 1:.1f}px;"
        f"line-height:0;white-space:nowrap'>{e(labels[i])}</span>"
        for i in range(0, len(labels), every)
    )
    return html, gutter_px(labels)


def _step_ticks(at: list[float]) -> str:
    """Nice steps below the columns (``at``: each column's step), each centred
    where it falls between the columns' steps; none so near an end that its
    label would leave the grid (at its narrowest, ``MIN_GRID_PX``)."""
    cols = len(at)
    if at[-1] <= at[0]:
        values, _ = [at[0]], 1.0
    else:
        values, _ = nice_ticks(at[0], at[-1], 4, least=1.0)
    out = []
    for v in values:
        p = float(np.interp(v, at, np.arange(cols) + 0.5)) / cols
        text = f"{v:.0f}"
        if min(p, 1 - p) * MIN_GRID_PX >= len(text) * CHAR_PX / 2:
            out.append(centred_tick(100 * p, text))
    return "".join(out)


def _bin(a: np.ndarray, n: int, axis: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """At most ``n`` entries along ``axis`` (the max of each bin, NaN kept), and
    each entry's ``(start, stop)`` in the input."""
    size = a.shape[axis]
    if size <= n:
        return a, [(i, i + 1) for i in range(size)]
    edges = np.linspace(0, size, n + 1).astype(int)
    spans = list(zip(edges[:-1].tolist(), edges[1:].tolist()))
    return np.maximum.reduceat(a, edges[:-1], axis=axis), spans


def _row_medians(lg: np.ndarray) -> np.ndarray:
    """Each row's median over its finite entries (NaN for a row with none)."""
    masked = np.where(np.isfinite(lg), lg, np.nan)
    out = np.full(lg.shape[0], np.nan)
    has = np.isfinite(masked).any(axis=1)
    out[has] = np.nanmedian(masked[has], axis=1)
    return out


def _largest_change(lg: np.ndarray) -> float:
    """The largest range (decades) of a row over time."""
    masked = np.where(np.isfinite(lg), lg, np.nan)
    has = np.isfinite(masked).any(axis=1)
    if not has.any():
        return 0.0
    return float(np.max(np.nanmax(masked[has], 1) - np.nanmin(masked[has], 1)))


def _colour_range(val: np.ndarray) -> tuple[float, float]:
    finite = val[np.isfinite(val)]
    if not finite.size:
        return 0.0, MIN_DECADES
    lo, hi = float(finite.min()), float(finite.max())
    if hi - lo < MIN_DECADES:
        mid = (lo + hi) / 2
        lo, hi = mid - MIN_DECADES / 2, mid + MIN_DECADES / 2
    return lo, hi


def _colour_bar(colours: _Colours, gutter: int) -> str:
    """The ramp with the values (or ratios to the row's median) at its ends."""

    def name(x: float) -> str:
        return f"x{10.0**x:.3g}" if colours.per_row else fmt_num(10.0**x)

    return (
        f"<div class='lens-live-scale' style='display:flex;align-items:center;"
        f"gap:6px;margin:1px 0 0 {gutter}px;font-size:11px'>"
        f"<span class='lens-live-scale-lo'>{e(name(colours.lo))}</span>"
        "<div style='flex:1 1 auto;min-width:24px;max-width:240px;height:8px;"
        f"background-image:{GRADIENT};{BOX}'></div>"
        f"<span class='lens-live-scale-hi'>{e(name(colours.hi))}</span></div>"
    )


def _row_name(
    names: list[str], row_of: list[tuple[int, int]], i: int, stacked: bool
) -> str:
    a, b = row_of[i]
    if stacked:
        return f"{a}" if b - a == 1 else f"{a}-{b - 1}"
    name = names[a] if b - a == 1 else f"{names[a]}..{names[b - 1]}"
    return name if len(name) <= LABEL_CHARS else "…" + name[-(LABEL_CHARS - 1) :]


def _row_title(
    names: list[str], row_of: list[tuple[int, int]], i: int, hist: np.ndarray
) -> str:
    a, b = row_of[i]
    v = hist[a:b]
    finite = v[np.isfinite(v)]
    who = names[a] if b - a == 1 else f"{names[a]}..{names[b - 1]}"
    if not finite.size:
        return f"{who}: no finite RMS"
    return (
        f"{who} RMS: {finite.min():.4g}..{finite.max():.4g}, "
        f"latest {float(np.nanmax(v[:, -1])):.4g}"
    )


def _times(decades: float) -> str:
    """``over 10x``, ``over 2x``: a floor that float noise rarely moves."""
    x = 10.0**decades
    nice = max(
        m * 10.0**k for k in range(-1, 12) for m in (1, 2, 5) if m * 10.0**k <= x
    )
    return f"over {log_label(nice)}x"


def _standing_out(latest: np.ndarray, names: list[str]) -> str:
    bad = outliers(latest)
    return f"; stands out now: {', '.join(names[i] for i in bad[:5])}" if bad else ""


def _ramp(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Each value's cell (an ``<i>`` in its colour): viridis between ``lo`` and
    ``hi`` at ``LEVELS`` steps; NaN and +inf red, -inf (an RMS of exactly zero: a
    dead layer) the darkest colour."""
    t = (v - lo) / (hi - lo) if hi > lo else np.full_like(v, 0.5)
    t = np.where(v == -np.inf, 0.0, t)
    k = np.rint(np.clip(np.nan_to_num(t, nan=0.0, posinf=1.0), 0.0, 1.0) * (LEVELS - 1))
    k = k.astype(int)
    k[np.isnan(v) | (v == np.inf)] = LEVELS  # the last entry: red
    return _CELLS[k]


def _cells() -> np.ndarray:
    x = np.linspace(0.0, 1.0, LEVELS) * (len(RAMP) - 1)
    i = np.minimum(x.astype(int), len(RAMP) - 2)
    rgb = np.rint(RAMP[i] + (RAMP[i + 1] - RAMP[i]) * (x - i)[:, None]).astype(int)
    colours = ["#{:02x}{:02x}{:02x}".format(*c) for c in rgb.tolist()] + [BAD]
    return np.array([f"<i style='background:{c}'></i>" for c in colours], object)


_CELLS = _cells()


def bars(values: np.ndarray, what: str, gloss: Gloss | None = None) -> str:
    """One bar per layer (binned past ``MAX_BARS``), from zero to the largest,
    with the range in words; NaN, inf and outliers red and full height."""
    shown = values
    if len(values) > MAX_BARS:
        edges = np.linspace(0, len(values), MAX_BARS + 1).astype(int)
        shown = np.maximum.reduceat(values, edges[:-1])
    finite = shown[np.isfinite(shown)]
    top = float(finite.max()) if finite.size else 0.0
    bad = set(outliers(shown))
    width = 3 if len(shown) > 32 else 4
    out = []
    for i, v in enumerate(shown.tolist()):
        full = i in bad or not np.isfinite(v)
        px = BAR_PX if full else (round(v / top * BAR_PX) if top > 0 else 0)
        colour = BAD if full else "#808080"
        out.append(
            f"<span style='display:inline-block;width:{width - 1}px;"
            f"height:{px}px;margin-right:1px;background:{colour}'></span>"
        )
    title = ", ".join(f"{x:.4g}" for x in values[:16].tolist())
    title += " ..." if len(values) > 16 else ""
    return (
        f"<span class='lens-live-bars' title='{e(what)} RMS by layer, bars from 0: "
        f"{e(title)}'>"
        f"<span style='display:inline-flex;align-items:flex-end;height:{BAR_PX}px;"
        "vertical-align:middle;border-bottom:1px solid rgba(128,128,128,.6);"
        f"opacity:.85'>{''.join(out)}</span> "
        f"<span>{(gloss or Gloss())(label(values, what))}</span></span>"
    )
