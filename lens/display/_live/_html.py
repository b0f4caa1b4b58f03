"""A frame as script-free HTML: progress, curves, per-layer statistics.

Only what JupyterLab's sanitizer keeps in an untrusted notebook (so the stored final
picture looks the same on reopening and in nbconvert HTML): elements with inline
styles, ``title`` attributes and images; no inline SVG,
no ``<style>``, no CSS variables, no script. The charts are drawn by ``_curves``
(lines as one SVG image each, axes and legend as HTML), the heatmaps and bars by
``_heat``. Fixed colours (the sanitizer drops ``currentColor``) that read on light
and dark themes; text keeps the theme's colour.
"""

from __future__ import annotations

import numpy as np

from lens.display._base import e
from lens.display._glossary import Gloss
from lens.display._leaf import fmt_num
from lens.display._live._curves import MIN_PLOT_PX, chart, lines_of
from lens.display._live._frame import Frame, busy_lines, progress_line
from lens.display._live._heat import bars, heatmap
from lens.display._live._layers import Group, Sample
from lens.display._live._marks import BAD, CHAR_PX, MUTED
from lens.display._live._ticks import step_axis


def body(f: Frame) -> str:
    """The whole picture (the part inside lens's root ``div``)."""
    parts = [_header(f)]
    g = Gloss()  # each term explained on hover once per picture
    if f.series:
        lines = {
            metric: lines_of(metric, splits) for metric, splits in f.series.items()
        }
        steps = [ln.steps for ls in lines.values() for ln in ls if len(ln.steps)]
        every = np.concatenate(steps) if steps else np.zeros(1)
        # room for the last step label, centred on its tick, in the narrowest plot
        room = CHAR_PX / 2 / MIN_PLOT_PX
        x = step_axis(float(every.min()), float(every.max()), room=room)
        charts = "".join(chart(m, ls, x, f.smooth, g) for m, ls in lines.items())
        parts.append(
            "<div style='display:flex;flex-wrap:wrap;gap:10px 20px;"
            f"margin:6px 0;max-width:100%'>{charts}</div>"
        )
    if f.samples:
        parts.append(_layers(f.groups, f.samples, g))
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
    fixes = dict(f.retraces)
    for line in busy_lines(f):
        accent = line.startswith(("compiling", "running"))
        style = (
            "background:rgba(178,106,0,.18);border-radius:2px;padding:0 4px"
            if accent
            else MUTED
        )
        if line in fixes:  # a retrace: its fix on hover
            style = "background:rgba(198,40,40,.16);border-radius:2px;padding:0 4px"
            out.append(
                f"<div style='white-space:normal'><span style='{style};cursor:help' "
                f"title='fix: {e(fixes[line])}'>{e(line)}</span></div>"
            )
            continue
        out.append(f"<div><span style='{style}'>{e(line)}</span></div>")
    return "".join(out)


def _layers(groups: list[Group], samples: list[Sample], g: Gloss) -> str:
    """The latest per-group RMS table, then a layer-by-step heatmap per stack."""
    latest = samples[-1]
    # the head first: its terms are explained where the reader meets them
    head = (
        f"<div style='margin-top:6px'><b>layers</b> <span style='{MUTED}'>"
        f"{g(f'RMS at step {int(latest.step)}')}</span></div>"
    )
    rows = []
    for grp in groups:
        p = latest.params.get(grp.name)
        if p is None:
            continue
        grad = latest.grads.get(grp.name) if latest.grads is not None else None
        cells = [_cell(p, grp, "params", g)]
        if grad is not None:
            cells.append(_cell(grad, grp, "grads", g))
        rows.append(
            "<div style='margin:2px 0 2px 12px;white-space:normal;"
            f"word-wrap:break-word'>{e(grp.name)} <span style='{MUTED}'>"
            f"{e(grp.shapes)}</span><div style='display:flex;flex-wrap:wrap;"
            f"gap:0 16px;margin-left:12px'>{''.join(cells)}</div></div>"
        )
    table = "".join(rows)
    whats = ["params"] + (["grads"] if latest.grads is not None else [])
    plain = [grp for grp in groups if not grp.layers]
    heat = []
    for what in whats:
        m = _matrix(samples, what)
        if m is None:
            continue
        heat += [
            _heatmap(grp, m[_rows(groups, grp.name)], samples, what, g)
            for grp in groups
            if grp.layers
        ]
        if len(plain) >= 2:
            rows = np.concatenate([m[_rows(groups, grp.name)] for grp in plain])
            heat.append(_heatmap_plain(plain, rows, samples, what, g))
    grid = (
        "<div style='display:flex;flex-wrap:wrap;gap:8px 16px;margin-top:4px'>"
        + "".join(heat)
        + "</div>"
        if heat
        else ""
    )
    return head + table + grid


def _cell(v: np.ndarray, grp: Group, what: str, g: Gloss) -> str:
    if grp.layers:
        chart = bars(np.asarray(v, np.float64), what, g)
    else:
        chart = f"{what} {g('rms')} {e(fmt_num(float(v)))}"
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


def _heatmap(
    grp: Group, hist: np.ndarray, samples: list[Sample], what: str, g: Gloss
) -> str:
    title = f"{grp.name}: {what} RMS, layer 0..{grp.layers - 1} by step"
    names = [f"layer {i}" for i in range(hist.shape[0])]
    return heatmap(title, hist, names, [s.step for s in samples], True, g)


def _heatmap_plain(
    groups: list[Group], hist: np.ndarray, samples: list[Sample], what: str, g: Gloss
) -> str:
    title = f"{what} RMS, one row per module, by step"
    names = [grp.name for grp in groups]
    return heatmap(title, hist, names, [s.step for s in samples], False, g)
