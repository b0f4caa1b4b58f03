"""One picture of a live view: what the drawer took from the loop, as plain data.

A ``Frame`` holds host values only (floats, NumPy arrays): drawing it never touches
the device. This module draws its text form; ``_html`` its HTML, ``_view`` puts the
forms together.

Numbers that come from float sums or from the clock are written in fixed phrases
(``last .. · min .. · max ..``, ``in .. s · .. steps/s``) that
``tests/nbval_sanitize.cfg`` blurs, so a stored notebook holds on every CPU.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lens.display._leaf import fmt_num
from lens.display._live._layers import Group, Sample
from lens.display._stacked import describe, spark_text


@dataclasses.dataclass
class Frame:
    """Everything one picture shows (host values only)."""

    title: str
    status: str = "running"  # running, done, interrupted, failed: ...
    step: float | None = None  # the last step logged (train), when on the host
    calls: int = 0  # train log calls
    total: int | None = None
    elapsed: float = 0.0
    rate: float | None = None  # steps per second, recent
    busy: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)
    compiles: list[tuple[str, float]] = dataclasses.field(default_factory=list)
    # retraces explained by lens.recompiles: (the line, the fix), latest last
    retraces: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    series: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = dataclasses.field(
        default_factory=dict
    )
    groups: list[Group] = dataclasses.field(default_factory=list)
    samples: list[Sample] = dataclasses.field(default_factory=list)
    smooth: float = 0.0  # the curves' smoothing weight (0: none)

    @property
    def done(self) -> int:
        """Steps done: how many times the loop logged its train split."""
        return self.calls

    @property
    def eta(self) -> float | None:
        """Seconds left at the recent rate (None without a total or a rate)."""
        if self.total is None or not self.rate:
            return None
        return max(self.total - self.done, 0) / self.rate


def seconds(t: float) -> str:
    """``12 s``, ``3 min 04 s``, ``1 h 02 min``."""
    t = max(t, 0.0)
    if t < 10:
        return f"{t:.1f} s"
    if t < 60:
        return f"{t:.0f} s"
    if t < 3600:
        return f"{int(t // 60)} min {int(t % 60):02d} s"
    return f"{int(t // 3600)} h {int(t % 3600 // 60):02d} min"


def progress_line(f: Frame) -> str:
    """``train_step · 40/100 steps in 1.2 s · 33.1 steps/s · ETA 2 s · done``."""
    done = f"{f.done}/{f.total}" if f.total is not None else f"{f.done}"
    parts = [f"{f.title} · {done} steps in {seconds(f.elapsed)}"]
    parts[0] += f" · {f.rate:.3g} steps/s" if f.rate else " · - steps/s"
    if f.eta is not None and f.status == "running":
        parts.append(f"ETA {seconds(f.eta)}")
    if f.status != "running":
        parts.append(f.status)
    return " · ".join(parts)


def busy_lines(f: Frame) -> list[str]:
    """``compiling train_step: 12 s`` for each call in flight, then past compiles."""
    lines = [f"{kind} {name}: {seconds(t)}" for name, kind, t in f.busy]
    if f.compiles:
        lines.append(
            "compiled "
            + ", ".join(f"{name} in {seconds(t)}" for name, t in f.compiles[-3:])
        )
    lines += [line for line, _ in f.retraces[-3:]]
    return lines


def series_name(metric: str, split: str) -> str:
    """A series as logged: ``loss`` (the train split), ``loss (eval)`` else."""
    return metric if split == "train" else f"{metric} ({split})"


def summary(values: np.ndarray) -> str:
    """``last 0.031 · min 0.03 · max 2.31`` of the finite values."""
    finite = values[np.isfinite(values)]
    last = fmt_num(float(values[-1])) if len(values) else "-"
    if not finite.size:
        return f"last {last} · min - · max -"
    return (
        f"last {last} · min {fmt_num(float(finite.min()))} · "
        f"max {fmt_num(float(finite.max()))}"
    )


def text(f: Frame, width: int = 48) -> str:
    """The plain-text form: progress, compiles, one line per curve and layer group."""
    lines = [progress_line(f), *busy_lines(f)]
    for metric, splits in f.series.items():
        for split, (_, values) in splits.items():
            name = series_name(metric, split)
            spark = spark_text(_last_bins(values, width)) if len(values) else ""
            lines.append(f"{name}: {summary(values)}  {spark}")
    lines += layer_lines(f)
    return "\n".join(lines)


def _last_bins(values: np.ndarray, width: int) -> np.ndarray:
    if len(values) <= width:
        return values
    edges = np.linspace(0, len(values), width + 1).astype(int)
    return np.array([values[j - 1] for j in edges[1:]])


def layer_lines(f: Frame) -> list[str]:
    """Per group, the latest RMS of params (and grads); a stack as a spark line."""
    if not f.samples:
        return []
    latest = f.samples[-1]
    lines = [f"layers at step {int(latest.step)} (rms):"]
    for g in f.groups:
        p = latest.params.get(g.name)
        grad = latest.grads.get(g.name) if latest.grads is not None else None
        if p is None:
            continue
        if g.layers:
            lines.append(f"  {g.name} params {describe(p)}")
            if grad is not None:
                lines.append(f"  {g.name} grads {describe(grad)}")
        else:
            extra = f" grads rms {fmt_num(float(grad))}" if grad is not None else ""
            lines.append(f"  {g.name} params rms {fmt_num(float(p))}{extra}")
    return lines
