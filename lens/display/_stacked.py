"""Pictures over a stacked axis: one number per layer (scan) or member (vmap).

A scanned layer stack or a vmapped ensemble stores each variable with a leading
axis of layers or members. Per leaf, ``profile`` reduces every slice along that axis
to its RMS (root mean square, comparable between leaves of different sizes), and the
displays draw the numbers as a tiny bar chart: an inline SVG in HTML, block
characters in text, so a layer that blew up (or went NaN) shows at a glance.

Which leaves are stacked: all leaves of one module share a leading axis of the same
size (at least 2), each with at least one more axis (a lone bias ``[4]`` beside a
kernel ``[4,4]`` is a plain layer, not a stack of four); or their boxes name the same
leading axis (``metadata_params``'s partition name).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

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
    """Each value scaled into [0, 1] (None where not finite)."""
    finite = values[np.isfinite(values)]
    hi = float(finite.max()) if finite.size else 0.0
    lo = min(float(finite.min()) if finite.size else 0.0, 0.0)
    span = hi - lo
    return [
        None if not np.isfinite(x) else ((x - lo) / span if span > 0 else 0.0)
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


def describe(values: np.ndarray, what: str = "rms") -> str:
    """``rms over axis 0 (3): ▁▄█ 0.12..0.9, layer 2 stands out``"""
    bad = outliers(values)
    finite = values[np.isfinite(values)]
    span = (
        f" {fmt_num(float(finite.min()))}..{fmt_num(float(finite.max()))}"
        if finite.size
        else ""
    )
    note = ""
    if bad:
        shown = ", ".join(str(i) for i in bad[:5]) + (" ..." if len(bad) > 5 else "")
        note = f"; stands out: {shown}"
    return f"{what} per slice ({len(values)}): {spark_text(values)}{span}{note}"


def spark_svg(values: np.ndarray, what: str = "rms") -> str:
    """A tiny bar chart as inline SVG (no scripts), outliers in red, with a tooltip."""
    shown = _binned(values)
    bad = set(outliers(shown))
    n = len(shown)
    bar = 3 if n > 32 else 4
    width, height = n * bar, 16
    rects = []
    for i, h in enumerate(_heights(shown)):
        hh = height if h is None else max(1.0, h * height)
        fill = "#c62828" if i in bad else "currentColor"
        rects.append(
            f"<rect x='{i * bar}' y='{height - hh:.1f}' width='{bar - 1}' "
            f"height='{hh:.1f}' fill='{fill}'/>"
        )
    first = ", ".join(fmt_num(float(x)) for x in values[:16])
    more = " ..." if len(values) > 16 else ""
    title = f"{describe(values, what)} — {first}{more}"
    return (
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
        f"role='img' style='vertical-align:middle;opacity:.85'><title>"
        f"{_escape(title)}</title>{''.join(rects)}</svg>"
    )


def _escape(s: str) -> str:
    import html

    return html.escape(s, quote=True)
