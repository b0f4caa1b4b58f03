"""One live chart: a metric's series on labelled axes, as script-free HTML.

Axes, ticks, gridlines, the legend and the points of a sparse series are HTML
elements with inline styles (text in the theme's colour). The lines are one SVG
image per chart (``<img src='data:image/svg+xml,...'>``): an untrusted notebook's
sanitizer drops inline ``<svg>`` but keeps an image, and the browser draws an image
with no script. The image is stretched to the plot box (``preserveAspectRatio
none``) with strokes of a fixed width (``non-scaling-stroke``), so the chart fits
any width; points are round HTML dots on top (a stretched SVG circle would not be).

Every series is drawn as logged: straight segments from point to point (never a
staircase), a point at each value of a sparse one (logged every N steps), a red
bar where a value is NaN or infinite. A long series keeps per pixel column its
first, last, smallest and largest point (the line looks as if drawn whole). Hover
shows exact values: a point's ``title``, and one ``title`` per strip of the plot.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from lens.display._base import e
from lens.display._glossary import Gloss
from lens.display._live._frame import series_name, summary
from lens.display._live._marks import (
    BAD,
    BOX,
    GRID,
    MUTED,
    centred_tick,
    gutter_px,
    step_row,
)
from lens.display._live._ticks import Axis, value_axis

SPLIT_COLOURS = {"train": "#1f77b4", "eval": "#ff7f0e"}
OTHER_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
PLOT_PX = 96
COLUMNS = 240
"""Pixel columns a long series is thinned to (four points each)."""
MARKERS = 40
"""A series of at most this many points, logged every few steps (or at most 12
points in all), is drawn as points joined by lines."""
STRIPS = 24
"""Hover strips per chart, each titled with the values nearest its middle."""
GUTTER_CHARS = 6
"""The y labels' gutter holds at least this many characters (``0.0102``): charts
one above the other line up, and a label a digit longer does not move the plot."""
MIN_PLOT_PX = 220
"""The narrowest plot the step axis leaves room for its last label in."""


@dataclasses.dataclass
class Line:
    """One series as drawn: its name as logged, colour, points sorted by step."""

    name: str
    colour: str
    steps: np.ndarray
    values: np.ndarray
    sparse: bool


def lines_of(
    metric: str, splits: dict[str, tuple[np.ndarray, np.ndarray]]
) -> list[Line]:
    """A metric's splits as lines, in the order first logged."""
    out = []
    for i, (split, (xs, ys)) in enumerate(splits.items()):
        order = np.argsort(xs, kind="stable")
        xs, ys = xs[order], ys[order]
        colour = SPLIT_COLOURS.get(split) or OTHER_COLOURS[i % len(OTHER_COLOURS)]
        out.append(Line(series_name(metric, split), colour, xs, ys, _sparse(xs)))
    return out


def _sparse(steps: np.ndarray) -> bool:
    n = len(steps)
    if n > MARKERS:
        return False
    return n <= 12 or float(np.median(np.diff(steps))) > 1


def chart(
    metric: str,
    lines: list[Line],
    x: Axis,
    smooth: float = 0.0,
    gloss: Gloss | None = None,
) -> str:
    """The chart of one metric: title, y ticks, plot, step ticks, legend (``gloss``
    explains ``log scale`` on hover, once per picture)."""
    y = value_axis(np.concatenate([ln.values for ln in lines]))
    ypos = [float(p) * 100 for p in y.where(np.asarray(y.ticks))]
    xpos = [float(p) * 100 for p in x.where(np.asarray(x.ticks))]
    gutter = gutter_px(list(y.labels), least=GUTTER_CHARS)
    notes = ["log scale" if y.log else "", "smoothed, raw faint" if smooth else ""]
    note = " · ".join(n for n in notes if n)
    note = f" <span style='{MUTED}'>{(gloss or Gloss())(note)}</span>" if note else ""
    drawn = [_draw(ln, x, y, smooth) for ln in lines]
    plot = (
        "".join(
            f"<i style='position:absolute;left:0;right:0;bottom:{p:.2f}%;"
            f"border-top:1px solid {GRID}'></i>"
            for p in ypos
        )
        + "".join(
            f"<i style='position:absolute;top:0;bottom:0;left:{p:.2f}%;"
            f"border-left:1px solid {GRID}'></i>"
            for p in xpos
        )
        + _image([d.polylines for d in drawn])
        + "".join(d.bad for d in drawn)
        + _strips(lines, x)
        + "".join(d.points for d in drawn)
    )
    yticks = "".join(
        f"<span class='lens-live-tick' style='position:absolute;right:4px;"
        f"bottom:{p:.2f}%;line-height:0;white-space:nowrap'>{e(t)}</span>"
        for p, t in zip(ypos, y.labels)
    )
    xticks = "".join(centred_tick(p, t) for p, t in zip(xpos, x.labels))
    return (
        "<div class='lens-live-chart' style='flex:1 1 280px;min-width:0;"
        "max-width:560px'>"
        f"<div style='white-space:normal;word-wrap:break-word'><b>{e(metric)}</b>"
        f"{note}"
        "</div>"
        "<div style='display:flex;font-size:11px'>"
        f"<div class='lens-live-yaxis' style='position:relative;flex:none;"
        f"width:{gutter}px;height:{PLOT_PX}px;{MUTED}'>{yticks}</div>"
        "<div class='lens-live-plot' style='position:relative;flex:1 1 auto;"
        f"min-width:0;height:{PLOT_PX}px;{BOX}'>{plot}</div></div>"
        f"{step_row(gutter, xticks)}"
        "<div style='display:flex;flex-wrap:wrap;gap:0 12px;white-space:normal;"
        f"word-wrap:break-word'>{''.join(_legend(ln) for ln in lines)}</div>"
        "</div>"
    )


@dataclasses.dataclass
class _Drawn:
    polylines: list[tuple[str, float, str]]  # (colour, opacity, points)
    points: str  # the HTML dots of a sparse line
    bad: str  # red bars where a value is NaN or infinite


def _draw(ln: Line, x: Axis, y: Axis, smooth: float) -> _Drawn:
    """A line's polylines (in a 1000x1000 box), dots and red bars."""
    if not len(ln.values):
        return _Drawn([], "", "")
    xs = x.where(ln.steps)
    finite = np.isfinite(ln.values)
    polylines = []
    if smooth and not ln.sparse:
        polylines += [(ln.colour, 0.28, p) for p in _polylines(xs, y, ln.values)]
        polylines += [
            (ln.colour, 1.0, p) for p in _polylines(xs, y, ema(ln.values, smooth))
        ]
    else:
        polylines += [(ln.colour, 1.0, p) for p in _polylines(xs, y, ln.values)]
    points = ""
    if ln.sparse:
        ys = y.where(np.where(finite, ln.values, np.nan))
        points = "".join(
            f"<i class='lens-live-point' title='{e(ln.name)} at step {s:.0f}: "
            f"{v:.6g}' style='position:absolute;left:{100 * px:.2f}%;"
            f"bottom:{100 * py:.2f}%;width:5px;height:5px;margin:0 0 -3.5px -3.5px;"
            f"border:1px solid {ln.colour};border-radius:50%;"
            f"background:{ln.colour}'></i>"
            for s, v, px, py in zip(
                ln.steps[finite].tolist(),
                ln.values[finite].tolist(),
                xs[finite].tolist(),
                ys[finite].tolist(),
            )
        )
    bad = ""
    if not finite.all():
        at = np.flatnonzero(~finite)
        _, first = np.unique(np.round(xs[at] * 200), return_index=True)
        bad = "".join(
            f"<i title='{e(ln.name)} at step {ln.steps[i]:.0f}: {ln.values[i]}' "
            f"style='position:absolute;top:0;bottom:0;left:{100 * xs[i]:.2f}%;"
            f"width:2px;margin-left:-1px;background:{BAD}'></i>"
            for i in at[first[:50]].tolist()
        )
    return _Drawn(polylines, points, bad)


def _polylines(xs: np.ndarray, y: Axis, values: np.ndarray) -> list[str]:
    """``x,y`` point lists (0..1000, y down), one per run of finite values; a
    long run keeps each pixel column's first, last, lowest and highest point."""
    finite = np.isfinite(values)
    if y.log:
        finite &= values > 0
    idx = np.flatnonzero(finite)
    if not idx.size:
        return []
    keep = idx[_thin(xs[idx], values[idx])]
    px = np.rint(xs[keep] * 1000).astype(int)
    py = np.rint((1 - y.where(values[keep])) * 1000).astype(int)
    gaps = np.cumsum(~finite)[keep]  # a gap between two kept points breaks the line
    cuts = np.flatnonzero(np.diff(gaps)) + 1
    return [
        " ".join(map("{},{}".format, a.tolist(), b.tolist()))
        for a, b in zip(np.split(px, cuts), np.split(py, cuts))
    ]


def _thin(xs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Indices to keep: all of a short series; per column of a long one its
    first, last, lowest and highest point (in order)."""
    n = len(xs)
    if n <= 4 * COLUMNS:
        return np.arange(n)
    col = np.clip((xs * COLUMNS).astype(int), 0, COLUMNS - 1)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ends = np.r_[starts[1:], n] - 1
    order = np.lexsort((values, col))  # by column, then by value
    return np.unique(np.concatenate([starts, ends, order[starts], order[ends]]))


def ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing: a debiased exponential moving average (NaN and
    inf are skipped; the average holds over them)."""
    out = np.empty(len(values))
    acc = norm = 0.0
    for i, v in enumerate(values.tolist()):
        if np.isfinite(v):
            acc = weight * acc + (1 - weight) * v
            norm = weight * norm + (1 - weight)
        out[i] = acc / norm if norm else np.nan
    return out


def _image(polylines: list[list[tuple[str, float, str]]]) -> str:
    """Every line of a chart as one stretched SVG image (a data URI)."""
    shapes = "".join(
        f"<polyline points='{pts}' fill='none' stroke='{colour}' "
        f"stroke-opacity='{opacity}' stroke-width='1.6' stroke-linejoin='round' "
        "stroke-linecap='round' vector-effect='non-scaling-stroke'/>"
        for colour, opacity, pts in itertools.chain.from_iterable(polylines)
    )
    if not shapes:
        return ""
    svg = (
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 1000 1000' "
        f"preserveAspectRatio='none'>{shapes}</svg>"
    )
    data = svg.replace("%", "%25").replace("#", "%23").replace("<", "%3C")
    data = data.replace(">", "%3E").replace('"', "%22")
    return (
        f'<img class="lens-live-lines" alt="" src="data:image/svg+xml,{data}" '
        "style='position:absolute;left:0;top:0;width:100%;height:100%'>"
    )


def _strips(lines: list[Line], x: Axis) -> str:
    """Transparent strips across the plot, each titled with every line's value
    nearest its middle (exact values on hover, no script)."""
    out = []
    placed = [(ln, x.where(ln.steps)) for ln in lines if len(ln.steps)]
    for j in range(STRIPS):
        lo, hi = j / STRIPS, (j + 1) / STRIPS
        rows = []
        for ln, xs in placed:
            i = int(np.searchsorted(xs, (lo + hi) / 2))
            near = [k for k in (i - 1, i) if 0 <= k < len(xs) and lo <= xs[k] < hi]
            if near:
                k = min(near, key=lambda k: abs(xs[k] - (lo + hi) / 2))
                rows.append(f"{ln.name} at step {ln.steps[k]:.0f}: {ln.values[k]:.6g}")
        if rows:
            out.append(
                f"<i title='{'&#10;'.join(e(r) for r in rows)}' style='position:absolute;"
                f"top:0;bottom:0;left:{100 * lo:.2f}%;width:{100 / STRIPS:.2f}%'></i>"
            )
    return "".join(out)


def _legend(ln: Line) -> str:
    """A swatch (a dot on it for a sparse line), the name as logged, the values."""
    dot = (
        f"<span style='display:inline-block;width:6px;height:6px;margin:0 0 -2px;"
        f"border-radius:50%;background:{ln.colour}'></span>"
        if ln.sparse
        else ""
    )
    swatch = (
        "<span style='display:inline-flex;align-items:center;width:14px;"
        f"height:2px;vertical-align:middle;background:{ln.colour};"
        f"justify-content:center'>{dot}</span>"
    )
    return (
        f"<span><span class='lens-live-legend'>{swatch} "
        f"<span class='lens-live-name'>{e(ln.name)}</span></span> "
        f"<span style='{MUTED}'>{e(summary(ln.values))}</span></span>"
    )
