"""A frame as script-free HTML: curves, progress, per-layer heatmaps.

Only what JupyterLab's sanitizer keeps in an untrusted notebook (so the stored final
picture looks the same on reopening, on GitHub and in nbconvert HTML): elements with
inline styles, no SVG, no ``<style>``, no CSS variables. A curve is a box of
absolutely placed segments (percentages, so it fits any width); a heatmap is a CSS
grid of coloured cells. Fixed colours (the sanitizer drops ``currentColor``) that
read on light and dark themes; text keeps the theme's colour.
"""

from __future__ import annotations

import numpy as np

from lens.display._base import e
from lens.display._leaf import fmt_num
from lens.display._live._frame import (
    CURVE_COLUMNS,
    Frame,
    busy_lines,
    progress_line,
    summary,
)
from lens.display._live._layers import Group, Sample
from lens.display._stacked import outliers, spark_html

SPLIT_COLOURS = {"train": "#1f77b4", "eval": "#ff7f0e"}
OTHER_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
BAD = "#d32f2f"
PLOT_PX = 72
HEAT_COLUMNS = 60
HEAT_ROWS = 48
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
MUTED = "opacity:.72"
BOX = "border:1px solid rgba(128,128,128,.35);border-radius:3px"


def body(f: Frame) -> str:
    """The whole picture (the part inside lens's root ``div``)."""
    parts = [_header(f)]
    if f.series:
        charts = "".join(_chart(metric, splits) for metric, splits in f.series.items())
        parts.append(
            "<div style='display:flex;flex-wrap:wrap;gap:8px 16px;"
            f"margin:6px 0;max-width:100%'>{charts}</div>"
        )
    if f.samples:
        parts.append(_layers(f.groups, f.samples))
    return "".join(parts)


def _header(f: Frame) -> str:
    colour = "" if f.status in ("running", "done") else f";color:{BAD}"
    out = [f"<div style='white-space:normal{colour}'>{e(progress_line(f))}</div>"]
    if f.total:
        pct = 100.0 * min(f.done, f.total) / f.total
        out.append(
            "<div style='height:4px;max-width:480px;margin:2px 0;"
            "background:rgba(128,128,128,.25);border-radius:2px'>"
            f"<div style='width:{pct:.0f}%;height:4px;background:#1f77b4;"
            "border-radius:2px'></div></div>"
        )
    for line in busy_lines(f):
        accent = line.startswith(("compiling", "running"))
        style = (
            "background:rgba(178,106,0,.18);border-radius:2px;padding:0 4px"
            if accent
            else MUTED
        )
        out.append(f"<div><span style='{style}'>{e(line)}</span></div>")
    return "".join(out)


def _colour(split: str, i: int) -> str:
    return SPLIT_COLOURS.get(split) or OTHER_COLOURS[i % len(OTHER_COLOURS)]


def _chart(metric: str, splits: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """One metric: its splits as curves on one pair of axes."""
    finite = [v[np.isfinite(v)] for _, v in splits.values()]
    allv = np.concatenate(finite) if finite else np.zeros(0)
    steps = np.concatenate([s for s, _ in splits.values()])
    log = bool(allv.size and allv.min() > 0 and allv.max() / allv.min() > 20)
    lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)
    s0, s1 = (float(steps.min()), float(steps.max())) if steps.size else (0.0, 1.0)
    scale = _Scale(lo, hi, log)
    segments, legend = [], []
    for i, (split, (xs, ys)) in enumerate(splits.items()):
        colour = _colour(split, i)
        segments.append(_curve(xs, ys, s0, s1, scale, colour))
        legend.append(
            f"<span><span style='display:inline-block;"
            f"width:10px;height:3px;vertical-align:middle;background:{colour}'>"
            f"</span> {e(split)} <span style='{MUTED}'>{e(summary(ys))}</span></span>"
        )
    axis = f"steps {int(s0)}..{int(s1)}" + (" · log scale" if log else "")
    return (
        "<div class='lens-live-chart' style='flex:1 1 260px;min-width:0;"
        "max-width:520px'>"
        f"<div style='display:flex;justify-content:space-between;gap:8px'>"
        f"<b>{e(metric)}</b><span style='{MUTED}'>{e(axis)}</span></div>"
        f"<div style='position:relative;height:{PLOT_PX}px;{BOX};overflow:hidden'>"
        f"{''.join(segments)}</div>"
        "<div style='display:flex;flex-wrap:wrap;gap:0 10px;white-space:normal;"
        f"word-wrap:break-word'>{''.join(legend)}</div>"
        "</div>"
    )


class _Scale:
    def __init__(self, lo: float, hi: float, log: bool) -> None:
        self.log = log
        self.lo, self.hi = (np.log10(lo), np.log10(hi)) if log else (lo, hi)

    def __call__(self, v: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.log10(v) if self.log else v
            span = self.hi - self.lo
            out = (x - self.lo) / span if span > 0 else np.full_like(x, 0.5)
        return np.clip(out * 92 + 4, 0, 100)  # percent of the box, 4% margins


def _curve(
    xs: np.ndarray, ys: np.ndarray, s0: float, s1: float, scale: _Scale, colour: str
) -> str:
    """A staircase of absolutely placed segments, one column per bin of steps:
    across from the last column at its value, then up or down over the bin's range.
    A bin holding NaN or inf is a red bar across the whole height."""
    cols = CURVE_COLUMNS
    if not len(ys):
        return ""
    order = np.argsort(xs, kind="stable")
    xs, ys = xs[order], ys[order]
    idx = (
        np.zeros(len(xs), int)
        if s1 <= s0
        else np.minimum(((xs - s0) / (s1 - s0) * cols).astype(int), cols - 1)
    )
    columns, starts = np.unique(idx, return_index=True)
    ends = np.append(starts[1:], len(ys))
    bad = np.add.reduceat((~np.isfinite(ys)).astype(int), starts) > 0
    y = scale(np.where(np.isfinite(ys), ys, 0.0))
    low = np.minimum.reduceat(y, starts)
    high = np.maximum.reduceat(y, starts)
    last = y[ends - 1]
    out: list[str] = []
    prev: tuple[int, float] | None = None
    w = 100.0 / cols
    rows = zip(
        columns.tolist(), bad.tolist(), low.tolist(), high.tolist(), last.tolist()
    )
    for col, b, lo, hi, la in rows:
        if b:
            out.append(_seg(col * w, 0.0, w, 100.0, BAD))
            prev = None
            continue
        if prev is not None:
            pc, py = prev
            if col > pc + 1:
                out.append(_seg((pc + 1) * w, py, (col - pc - 1) * w, 0.0, colour))
            lo, hi = min(lo, py), max(hi, py)
        out.append(_seg(col * w, lo, w, hi - lo, colour))
        prev = (col, la)
    return "".join(out)


def _seg(left: float, bottom: float, width: float, height: float, colour: str) -> str:
    return (
        f"<i style='position:absolute;left:{left:.2f}%;width:{min(width + 0.3, 100 - left):.2f}%;"
        f"bottom:{bottom:.1f}%;height:{height:.1f}%;min-height:2px;min-width:2px;"
        f"background:{colour}'></i>"
    )


def _layers(groups: list[Group], samples: list[Sample]) -> str:
    """The latest per-group RMS table, then a layer-by-step heatmap per stack."""
    latest = samples[-1]
    rows = []
    for g in groups:
        p = latest.params.get(g.name)
        if p is None:
            continue
        grad = latest.grads.get(g.name) if latest.grads is not None else None
        cells = [_cell(p, g, "params")]
        if grad is not None:
            cells.append(_cell(grad, g, "grads"))
        rows.append(
            "<div style='margin:2px 0 2px 12px;white-space:normal;"
            f"word-wrap:break-word'>{e(g.name)} <span style='{MUTED}'>"
            f"{e(g.shapes)}</span><div style='display:flex;flex-wrap:wrap;"
            f"gap:0 16px;margin-left:12px'>{''.join(cells)}</div></div>"
        )
    head = (
        f"<div style='margin-top:6px'><b>layers</b> <span style='{MUTED}'>"
        f"RMS at step {int(latest.step)}</span></div>"
    )
    table = "".join(rows)
    whats = ["params"] + (["grads"] if latest.grads is not None else [])
    plain = [g for g in groups if not g.layers]
    heat = []
    for what in whats:
        m = _matrix(samples, what)
        if m is None:
            continue
        heat += [
            _heatmap(g, m[_rows(groups, g.name)], samples, what)
            for g in groups
            if g.layers
        ]
        if len(plain) >= 2:
            rows = np.concatenate([m[_rows(groups, g.name)] for g in plain])
            heat.append(_heatmap_plain(plain, rows, samples, what))
    grid = (
        "<div style='display:flex;flex-wrap:wrap;gap:8px 16px;margin-top:4px'>"
        + "".join(heat)
        + "</div>"
        if heat
        else ""
    )
    return head + table + grid


def _cell(v: np.ndarray, g: Group, what: str) -> str:
    if g.layers:
        chart = spark_html(np.asarray(v, np.float64), f"{what} rms")
    else:
        chart = f"{what} rms {e(fmt_num(float(v)))}"
    return f"<span style='white-space:normal;word-wrap:break-word'>{chart}</span>"


def _matrix(samples: list[Sample], what: str) -> np.ndarray | None:
    """``[entries, samples]``: every group's RMS (see ``Sample.vectors``) by sample."""
    cols = [s.vectors.get(what) for s in samples]
    if not cols or any(c is None for c in cols):
        return None
    if len({c.shape for c in cols if c is not None}) != 1:
        return None
    return np.stack([c for c in cols if c is not None], axis=1)


def _rows(groups: list[Group], name: str) -> slice:
    """Where a group's entries are in ``Sample.vectors``."""
    start = 0
    for g in groups:
        size = max(g.layers, 1)
        if g.name == name:
            return slice(start, start + size)
        start += size
    raise KeyError(name)


def _heatmap(g: Group, hist: np.ndarray, samples: list[Sample], what: str) -> str:
    title = f"{g.name}: {what} RMS, layer 0..{g.layers - 1} (top to bottom) by step"
    return _grid(hist, title, [f"layer {i}" for i in range(hist.shape[0])], samples)


def _heatmap_plain(
    groups: list[Group], hist: np.ndarray, samples: list[Sample], what: str
) -> str:
    title = f"{what} RMS, one row per module (top to bottom as listed) by step"
    return _grid(hist, title, [g.name for g in groups], samples)


def _bin(a: np.ndarray, n: int, axis: int) -> np.ndarray:
    """At most ``n`` entries along ``axis``: the max of each bin (NaN kept)."""
    if a.shape[axis] <= n:
        return a
    edges = np.linspace(0, a.shape[axis], n + 1).astype(int)[:-1]
    return np.maximum.reduceat(a, edges, axis=axis)


def _grid(hist: np.ndarray, title: str, names: list[str], samples: list[Sample]) -> str:
    """A heatmap: one row per layer, one column per sample; log colour scale."""
    latest = hist[:, -1]
    bad = outliers(latest)
    note = f"; stands out now: {', '.join(names[i] for i in bad[:5])}" if bad else ""
    h = _bin(_bin(hist, HEAT_ROWS, 0), HEAT_COLUMNS, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log10(h)
    finite = lg[np.isfinite(lg)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0, 1)
    cells = [f"<i style='background:{c}'></i>" for c in _ramp(lg, lo, hi).ravel()]
    rows, cols = h.shape
    first, last = int(samples[0].step), int(samples[-1].step)
    return (
        "<div class='lens-live-heat' style='flex:1 1 260px;min-width:0;"
        "max-width:520px'>"
        f"<div style='white-space:normal;word-wrap:break-word'>{e(title)}"
        f"<span style='color:{BAD}'>{e(note)}</span></div>"
        f"<div style='display:grid;grid-template-columns:repeat({cols},minmax(0,1fr));"
        f"grid-auto-rows:{max(3, min(10, 96 // rows))}px;{BOX};overflow:hidden'>"
        f"{''.join(cells)}</div>"
        f"<div style='display:flex;justify-content:space-between;{MUTED}'>"
        f"<span>step {first}</span><span>step {last}</span></div></div>"
    )


def _ramp(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``#rrggbb`` per value on the viridis ramp between ``lo`` and ``hi``; NaN and
    +inf red, -inf (an RMS of exactly zero: a dead layer) the darkest colour."""
    t = (v - lo) / (hi - lo) if hi > lo else np.full_like(v, 0.5)
    t = np.where(v == -np.inf, 0.0, t)
    x = np.clip(np.nan_to_num(t, nan=0.0, posinf=1.0), 0.0, 1.0) * (len(RAMP) - 1)
    i = np.minimum(x.astype(int), len(RAMP) - 2)
    rgb = RAMP[i] + (RAMP[i + 1] - RAMP[i]) * (x - i)[..., None]
    rgb = np.rint(rgb).astype(int)
    out = np.array(
        [f"#{r:02x}{g:02x}{b:02x}" for r, g, b in rgb.reshape(-1, 3).tolist()],
        dtype=object,
    ).reshape(v.shape)
    out[np.isnan(v) | (v == np.inf)] = BAD
    return out
