"""Pictures over a stacked axis: one number per layer (scan) or member (vmap).

A scanned layer stack or a vmapped ensemble stores each variable with a leading
axis of layers or members. Per leaf, ``profile`` reduces every slice along that axis
to its RMS (root mean square, comparable between leaves of different sizes), and the
displays draw the numbers as a small labelled bar chart, bars from zero, with the
range in words: inline-styled HTML, block characters in text, so a layer that blew
up (or went NaN) shows at a glance, and layers that differ by a few percent look
alike.

Which leaves are stacked: all leaves of one module share a leading axis of the same
size (at least 2), each with at least one more axis (a lone bias ``[4]`` beside a
kernel ``[4,4]`` is a plain layer, not a stack of four); or their boxes name the same
leading axis (``metadata_params``'s partition name).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from lens.display._glossary import Gloss
from lens.display._leaf import Leaf, fmt_num, numeric_array

BLOCKS = "▁▂▃▄▅▆▇█"
MAX_BARS = 64
"""Slices drawn one bar each; longer stacks are binned (the max of each bin)."""
OUTLIER = 4.0
"""A slice whose RMS exceeds this many times the median is marked (as is NaN/inf)."""


def stacked_leaves(leaves: Iterable[Leaf]) -> set[int]:
    """``id`` of every leaf that belongs to a stack (see the module docstring)."""
    modules: dict[tuple[str, tuple[str, ...]], list[Leaf]] = {}
    for leaf in leaves:
        modules.setdefault((leaf.collection, leaf.path), []).append(leaf)
    out: set[int] = set()
    for group in modules.values():
        named = {x.names[0] if x.names else None for x in group}
        by_name = len(named) == 1 and None not in named
        lead = {x.shape[0] if x.shape else None for x in group}
        by_shape = (
            len(group) >= 2
            and all(len(x.shape) >= 2 for x in group)
            and len(lead) == 1
            and (next(iter(lead)) or 0) >= 2
        )
        if by_name or by_shape:
            out.update(id(x) for x in group if len(x.shape) >= 1 and x.shape[0] >= 2)
    return out


def profile(value: Any) -> np.ndarray | None:
    """The RMS of each slice along axis 0 (None when there is nothing to measure)."""
    a = numeric_array(value)
    if a is None or a.ndim < 1 or a.shape[0] < 2:
        return None
    flat = a.reshape(a.shape[0], -1)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sqrt(np.mean(flat * flat, axis=1))


def slice_change(before: Any, after: Any) -> np.ndarray | None:
    """The RMS of ``after - before`` per slice along axis 0 (which layers changed)."""
    a, b = numeric_array(before), numeric_array(after)
    if a is None or b is None or a.shape != b.shape or a.ndim < 1 or a.shape[0] < 2:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        d = (b - a).reshape(a.shape[0], -1)
        return np.sqrt(np.mean(d * d, axis=1))


def _binned(values: np.ndarray) -> np.ndarray:
    if len(values) <= MAX_BARS:
        return values
    edges = np.linspace(0, len(values), MAX_BARS + 1).astype(int)
    # The max of each bin, NaN-propagating: a bad slice stays visible.
    return np.array([values[i:j].max() for i, j in zip(edges[:-1], edges[1:])])


def outliers(values: Sequence[float] | np.ndarray) -> list[int]:
    """Indices of slices that are not finite or far above the median."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    med = float(np.median(finite)) if finite.size else 0.0
    return [
        i
        for i, x in enumerate(v)
        if not np.isfinite(x) or (med > 0 and x > OUTLIER * med)
    ]


def _heights(values: np.ndarray) -> list[float | None]:
    """Each value as a fraction of the largest, bars from zero (None where not
    finite): layers that differ by 3% look alike, as they are; the labels print
    the range, and a layer far off the others stands out (issue 43)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return [
        None if not np.isfinite(x) else (abs(float(x)) / top if top > 0 else 0.0)
        for x in values
    ]


def spark_text(values: np.ndarray) -> str:
    """``▁▂▃█`` (``!`` for a NaN or infinite slice)."""
    return "".join(
        "!"
        if h is None
        else BLOCKS[min(int(h * (len(BLOCKS) - 1) + 0.5), len(BLOCKS) - 1)]
        for h in _heights(_binned(values))
    )


def _range(values: np.ndarray) -> str:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return ""
    lo, hi = fmt_num(float(finite.min())), fmt_num(float(finite.max()))
    return f"all {lo}" if lo == hi else f"{lo}..{hi}"


def _indices(idx: Sequence[int] | np.ndarray) -> str:
    """``slice 3`` / ``slices 1, 4, 7`` (the first five, then ``...``)."""
    shown = ", ".join(str(i) for i in idx[:5]) + (" ..." if len(idx) > 5 else "")
    return f"slice{'s' if len(idx) > 1 else ''} {shown}"


def _standing_out(values: np.ndarray, what: str = "rms") -> str:
    bad = outliers(values)
    moved = np.flatnonzero(np.asarray(values) != 0)
    if not bad and 0 < len(moved) <= len(values) // 2:
        # most slices are exactly 0 (a diff: they did not change): name the others
        of = f"({len(moved)} of {len(values)})"
        if what == "change":
            return f"only {_indices(moved)} changed {of}"
        return f"nonzero only in {_indices(moved)} {of}"
    if not bad:
        return ""
    return f"stands out: {', '.join(str(i) for i in bad[:5])}" + (
        " ..." if len(bad) > 5 else ""
    )


def describe(values: np.ndarray, what: str = "rms") -> str:
    """``rms per slice (3): ▁▄█ 0.12..0.9; stands out: 2`` (slices along axis 0)."""
    span = _range(values)
    note = _standing_out(values, what)
    return (
        f"{what} per slice ({len(values)}): {spark_text(values)}"
        + (f" {span}" if span else "")
        + (f"; {note}" if note else "")
    )


def label(values: np.ndarray, what: str = "rms") -> str:
    """What the HTML chart shows, in words: ``rms of slices 0..3 (axis 0): 0.1..0.9``."""
    span = _range(values)
    note = _standing_out(values, what)
    return (
        f"{what} of slices 0..{len(values) - 1} (axis 0)"
        + (f": {span}" if span else "")
        + (f"; {note}" if note else "")
    )


BAR_PX = 18
"""The chart's height in pixels."""


def spark_html(
    values: np.ndarray, what: str = "rms", gloss: Gloss | None = None
) -> str:
    """A small labelled bar chart as plain HTML (inline styles, no SVG, no scripts).

    HTML that JupyterLab's sanitizer keeps: untrusted notebooks drop SVG. One bar
    per slice (binned past ``MAX_BARS``), from zero, in the text colour; outliers
    and non-finite slices red and full height (fixed colours: the sanitizer drops
    currentColor and CSS variables). The label names the range and the outlier
    indices, its terms explained on hover (``gloss``: the view's, so that each is
    explained once); the tooltip lists the first values.
    """
    shown = _binned(values)
    bad = set(outliers(shown))
    bar = 3 if len(shown) > 32 else 4
    bars = []
    for i, h in enumerate(_heights(shown)):
        px = BAR_PX if h is None else (max(1, round(h * BAR_PX)) if h > 0 else 0)
        colour = "#d32f2f" if i in bad or h is None else "#808080"
        bars.append(
            f"<span style='display:inline-block;width:{bar - 1}px;height:{px}px;"
            f"margin-right:1px;background:{colour}'></span>"
        )
    first = ", ".join(fmt_num(float(x)) for x in values[:16])
    more = " ..." if len(values) > 16 else ""
    title = f"{label(values, what)}; bars from 0 — {first}{more}"
    words = (gloss or Gloss())(label(values, what))
    return (
        f"<span class='spark'><span title='{_escape(title)}' "
        f"style='display:inline-flex;align-items:flex-end;height:{BAR_PX}px;"
        f"vertical-align:middle;border-bottom:1px solid rgba(128,128,128,.6);"
        f"opacity:.85'>{''.join(bars)}</span> <span>{words}</span></span>"
    )


def _escape(s: str) -> str:
    import html

    return html.escape(s, quote=True)
