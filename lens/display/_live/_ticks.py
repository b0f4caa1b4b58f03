"""Axes of the live charts: limits that do not exaggerate, ticks at nice numbers.

What a plotting library does (matplotlib's ``MaxNLocator`` and its 5% margins),
for the few axes a live view draws: a value axis (linear, or log when the values
span more than ``LOG_RATIO``) and a step axis (integers). Tick labels carry the
digits their spacing needs, so neighbours differ (``0.0098``, ``0.0100``,
``0.0102``), and scientific ones only as many as name the tick (``2.5e-6``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

NICE = (1.0, 2.0, 2.5, 5.0, 10.0)
"""Tick spacings per decade (matplotlib's default ``steps``)."""
MARGIN = 0.05
"""Room beyond the data on each side, as a share of its span (matplotlib's margin)."""
MIN_SPAN = 0.05
"""The least span of a linear value axis, as a share of the values' magnitude: a
move from 0.01 to 0.00993 fills an eighth of the height, not all of it."""
LOG_RATIO = 20.0
"""Positive values whose largest is this many times the smallest get a log axis."""


@dataclasses.dataclass(frozen=True)
class Axis:
    """Limits, ticks and their labels; ``where`` maps values to 0..1 along it."""

    lo: float  # in axis units (log10 of the value on a log axis)
    hi: float
    log: bool
    ticks: tuple[float, ...]  # values (not axis units)
    labels: tuple[str, ...]

    def where(self, values: np.ndarray) -> np.ndarray:
        """Each value's place along the axis, 0 (``lo``) to 1 (``hi``)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.log10(values) if self.log else np.asarray(values, np.float64)
            if not self.hi - self.lo > 0:  # limits one float apart (steps near 2**62)
                return np.where(np.isfinite(x), 0.5, x)
            return (x - self.lo) / (self.hi - self.lo)


def value_axis(values: np.ndarray, ticks: int = 4) -> Axis:
    """The y axis for these values (any non-finite ones are left out)."""
    v = values[np.isfinite(values)]
    if not v.size:
        return Axis(0.0, 1.0, False, (0.0, 1.0), ("0", "1"))
    lo, hi = float(v.min()), float(v.max())
    if lo > 0 and hi / lo > LOG_RATIO:
        return _log_axis(math.log10(lo), math.log10(hi))
    least = MIN_SPAN * max(abs(lo), abs(hi)) or 1.0
    if hi - lo < least:
        mid = (lo + hi) / 2
        lo, hi = mid - least / 2, mid + least / 2
    pad = MARGIN * (hi - lo)
    lo, hi = lo - pad, hi + pad
    at, step = nice_ticks(lo, hi, ticks)
    # a tick found within rounding of a limit (nice_ticks' tolerance) sets it
    lo, hi = min(lo, at[0]), max(hi, at[-1])
    return Axis(lo, hi, False, tuple(at), tuple(tick_labels(at, step)))


def step_axis(first: float, last: float, ticks: int = 5, room: float = 0.0) -> Axis:
    """The x axis over steps ``first..last``: integer ticks, a margin each side,
    and past the last tick at least ``room`` per character of its label (a share
    of the axis), so that a label centred on it ends inside the plot."""
    if last <= first:  # one step so far: it alone, in the middle
        return Axis(first - 1, first + 1, False, (first,), (_step_label(first),))
    pad = 0.03 * (last - first)
    lo, hi = first - pad, last + pad
    at, _ = nice_ticks(first, last, ticks, least=1.0)
    labels = tuple(_step_label(x) for x in at)
    need = min(room * len(labels[-1]), 0.5)
    hi = max(hi, lo + (at[-1] - lo) / (1 - need))
    return Axis(lo, hi, False, tuple(at), labels)


def nice_ticks(
    lo: float, hi: float, ticks: int, least: float = 0.0
) -> tuple[list[float], float]:
    """At most ``ticks + 1`` multiples of a nice spacing (1, 2, 2.5, 5 x 10^k, at
    least ``least``) inside ``[lo, hi]``; returns them and the spacing."""
    span = hi - lo
    if not span > 0:
        return [lo], 1.0
    base = 10.0 ** math.floor(math.log10(span / ticks))
    step = base
    for m in (*NICE, 20.0, 25.0, 50.0, 100.0):
        step = max(m * base, least)
        if least and step % least:
            continue  # 2.5 on an integer axis
        if math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1 <= ticks + 1:
            break
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [k * step for k in range(first, last + 1)], step


def tick_labels(values: list[float], step: float) -> list[str]:
    """Labels with as many digits as the spacing needs, so that neighbours differ;
    scientific past 1e5 or under 1e-3."""
    if not values:
        return []
    top = max(abs(v) for v in values)
    digits = -math.floor(math.log10(step) + 1e-9)
    if round(step / 10.0**-digits, 6) % 1:  # 2.5 x 10^k: one more digit
        digits += 1
    if top and (top >= 1e5 or top < 1e-3):
        return [_shortest(v, step) for v in values]
    return [f"{v:.{max(digits, 0)}f}" for v in values]


def _shortest(v: float, step: float) -> str:
    """The fewest significant digits that name ``v`` to within a thousandth of
    the tick spacing, in ``2.5e-4`` form."""
    digits = next(
        (p for p in range(1, 16) if abs(float(f"{v:.{p}e}") - v) <= 1e-3 * step), 15
    )
    return _sci(v, digits)


def _sci(v: float, digits: int) -> str:
    """``2.5e-4`` (no trailing zeros, ``+`` or leading zeros in the exponent)."""
    if v == 0:
        return "0"
    mant, exp = f"{v:.{digits}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}e{int(exp)}"


def _step_label(x: float) -> str:
    return f"{x / 1e6:g}M" if abs(x) >= 1e6 else f"{x:.0f}"


def _log_axis(lo: float, hi: float) -> Axis:
    """Log10 limits with a margin; ticks at 1, 2 and 5 x 10^k under two decades,
    1 and 3 x 10^k under 3.5, else 10^k (every few decades past six)."""
    pad = MARGIN * (hi - lo)
    lo, hi = lo - pad, hi + pad
    if hi - lo < 3.5:
        at = [
            m * 10.0**k
            for k in range(math.floor(lo), math.ceil(hi) + 1)
            for m in ((1, 2, 5) if hi - lo < 2 else (1, 3))
            if lo <= math.log10(m * 10.0**k) <= hi
        ]
    else:
        every = max(1, math.ceil((hi - lo) / 6))
        at = [
            10.0**k for k in range(math.ceil(lo), math.floor(hi) + 1) if k % every == 0
        ]
    return Axis(lo, hi, True, tuple(at), tuple(log_label(v) for v in at))


def log_label(v: float) -> str:
    """``0.01``, ``500``, ``1e-5``, ``2e6``."""
    if 1e-3 <= v < 1e5:
        return f"{v:.10g}"
    return _sci(v, 0)
