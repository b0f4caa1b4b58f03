"""The scalars a loop reports, kept without touching the device.

``log`` only appends ``(step, value)`` pairs as given (a device scalar stays a device
scalar: converting it would wait for the step that makes it). The drawer thread
later takes the pending pairs, converts them in one ``device_get`` and files them.
Every method takes the store's lock, so a loop on any thread may report.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

MAX_POINTS = 4096
"""Points kept per series; past this, every other point is dropped (oldest first)."""


def check_scalar(name: str, value: Any) -> None:
    """Raises a clear error for a value ``log`` cannot plot, without a device sync."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        raise TypeError(
            f"live.log: {name}={value!r} is not a number; log a float, an int or "
            "a scalar array (for example loss=loss)."
        )
    if isinstance(value, (int, float)):
        return
    if type(value) in _CHECKED and value.shape in ((), (1,)) and value.dtype in _REAL:
        return  # the usual case, a float32 device scalar: a few attribute reads
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"live.log: {name} is a {type(value).__name__}, not a number; log a "
            "float, an int or a scalar array."
        )
    if type(value).__module__.startswith("jax") and "Tracer" in type(value).__name__:
        raise TypeError(
            f"live.log: {name} is a tracer: live.log was called inside a jitted "
            "or transformed function. Return the value from the step and log it "
            "outside (live.log(step, loss=loss) after train_step)."
        )
    if math.prod(shape) != 1:
        raise ValueError(
            f"live.log: {name} has shape {tuple(shape)}, not a scalar; reduce it "
            f"first (for example {name}={name}.mean())."
        )
    if _kind(dtype) not in "biuf" and "bfloat16" not in str(dtype):
        raise TypeError(
            f"live.log: {name} has dtype {dtype}, not a real number; log a float."
        )
    _CHECKED.add(type(value))  # a type of array (not a tracer) seen to pass
    _REAL.add(dtype)


# Array types and dtypes that passed the full check: later values of the same type
# and dtype take the short path. Only ever grows, by types and dtypes (a cache of
# facts about classes, not per-call state).
_CHECKED: set[type] = set()
_REAL: set[Any] = set()


def check_step(step: Any) -> None:
    """``step`` must be an int or an integer scalar (a device array is fine)."""
    if isinstance(step, bool) or not (
        isinstance(step, int)
        or (
            getattr(step, "shape", None) is not None
            and math.prod(step.shape) == 1
            and _kind(step.dtype) in "iu"
        )
    ):
        raise TypeError(
            f"live.log: step={step!r} is not an integer; pass the step number "
            "(an int, or an integer scalar such as TrainState.step)."
        )


def _kind(dtype: Any) -> str:
    try:
        return np.dtype(dtype).kind
    except TypeError:  # a PRNG key or another extended dtype
        return "O"


class Series:
    """One curve: the steps and values converted so far (float64)."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.values: list[float] = []

    def add(self, steps: list[float], values: list[float]) -> None:
        """Files converted points; halves the history past ``MAX_POINTS``."""
        self.steps.extend(steps)
        self.values.extend(values)
        while len(self.steps) > MAX_POINTS:
            self.steps = self.steps[::2]
            self.values = self.values[::2]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` as NumPy arrays (copies)."""
        return np.asarray(self.steps, np.float64), np.asarray(self.values, np.float64)


class Store:
    """Every series by ``(metric, split)``, and the pairs not yet converted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.draining = threading.Lock()  # one drain at a time: none is missed
        self.pending: list[tuple[Any, str, dict[str, Any]]] = []
        self.series: dict[tuple[str, str], Series] = {}
        self.order: dict[str, None] = {}  # metrics in the order first logged

    def log(self, step: Any, split: str, scalars: dict[str, Any]) -> None:
        """Queues the call as given (no conversion, no device sync)."""
        with self.lock:
            self.pending.append((step, split, scalars))
            if not self.order.keys() >= scalars.keys():
                self.order.update(dict.fromkeys(scalars))

    def drain(self) -> int:
        """Fetches and files everything queued (one caller at a time)."""
        with self.draining:
            return self._drain()

    def _drain(self) -> int:
        """Converts and files every pending pair; returns how many. Runs on the
        drawer thread (the conversion waits for the device, the loop does not)."""
        with self.lock:
            calls, self.pending = self.pending, []
        if not calls:
            return 0
        batch = [(n, split, st, v) for st, split, d in calls for n, v in d.items()]
        steps, values = _to_host([(b[2], b[3]) for b in batch])
        grouped: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        for (name, split, _, _), s, v in zip(batch, steps, values):
            xs, ys = grouped.setdefault((name, split), ([], []))
            xs.append(s)
            ys.append(v)
        with self.lock:
            for key, (xs, ys) in grouped.items():
                self.series.setdefault(key, Series()).add(xs, ys)
        return len(batch)

    def snapshot(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """``{metric: {split: (steps, values)}}`` in the order first logged."""
        with self.lock:
            out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
            for name in self.order:
                for (metric, split), series in self.series.items():
                    if metric == name:
                        out.setdefault(name, {})[split] = series.arrays()
            return out


def _to_host(pairs: list[tuple[Any, Any]]) -> tuple[list[float], list[float]]:
    """Steps and values as floats: one ``device_get`` for every device array."""
    flat = [x for pair in pairs for x in pair]
    on_device = [i for i, x in enumerate(flat) if not isinstance(x, (int, float))]
    if on_device:
        import jax

        try:
            got = jax.device_get([flat[i] for i in on_device])
        except Exception:  # noqa: BLE001 - one bad value: convert one by one
            got = [flat[i] for i in on_device]
        for i, x in zip(on_device, got):
            flat[i] = x
    floats = [_float(x) for x in flat]
    return floats[0::2], floats[1::2]


def _float(x: Any) -> float:
    try:
        return float(np.asarray(x, np.float64).reshape(()))
    except Exception:  # noqa: BLE001 - a deleted (donated) array: not plotted
        return math.nan
