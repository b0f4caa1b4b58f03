"""Where a sharded array lives: which devices, of which processes, hold which part.

:func:`describe` gives the one line a display adds after an array's sharding, e.g.
``[0:2,:] d0-3 · [2:4,:] d4-7`` on one process, or ``[0:2,:] p0:d0-3 · [2:4,:]
p1:d2048-2051`` when the array spans two processes (each part, then the ids of
the devices that hold a copy of it; ``whole d0-7`` is replicated). It reads the sharding only (every process
knows where every part is), never the values. :func:`host_value` is the array as
NumPy when this process holds all of it, for statistics; None when part of it is
only on other processes' devices (reading it would need every process).
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_PARTS = 8  # parts listed per array; the rest are counted


def _dim(s: slice, size: int) -> str:
    start = 0 if s.start is None else s.start
    stop = size if s.stop is None else s.stop
    return ":" if (start, stop) == (0, size) else f"{start}:{stop}"


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _devices(devices: list[Any], with_process: bool) -> str:
    if not with_process:
        return "d" + _ranges([d.id for d in devices])
    by_process: dict[int, list[int]] = {}
    for d in devices:
        by_process.setdefault(d.process_index, []).append(d.id)
    return " ".join(f"p{p}:d{_ranges(ids)}" for p, ids in sorted(by_process.items()))


def _part(dims: tuple[str, ...]) -> str:
    """``('0:2', ':')`` -> ``[0:2,:]``; the whole array -> ``whole``."""
    return "whole" if all(d == ":" for d in dims) else f"[{','.join(dims)}]"


def describe(x: Any) -> str | None:
    """Each distinct part of ``x`` and the devices that hold it (None when ``x``
    is not an array placed on more than one device)."""
    sharding: Any = getattr(x, "sharding", None)
    shape = getattr(x, "shape", None)
    if not hasattr(sharding, "devices_indices_map") or shape is None:
        return None
    try:
        devices = sharding.device_set
        if len(devices) <= 1:
            return None
        indices = sharding.devices_indices_map(tuple(shape))
    except Exception:  # noqa: BLE001 - an abstract or odd sharding: show no placement
        return None
    parts: dict[tuple[str, ...], list[Any]] = {}
    for device, index in indices.items():
        key = tuple(_dim(s, n) for s, n in zip(index, shape, strict=False))
        parts.setdefault(key, []).append(device)
    with_process = len({d.process_index for d in devices}) > 1
    shown = [
        f"{_part(key)} {_devices(devices, with_process)}"
        for key, devices in list(parts.items())[:MAX_PARTS]
    ]
    if len(parts) > MAX_PARTS:
        shown.append(f"+{len(parts) - MAX_PARTS} more parts")
    return " · ".join(shown)


def host_value(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array if this process holds all of it (each part on one
    of its devices), else None."""
    try:  # JAX assembles it from this process's shards when they cover it all
        return np.asarray(x)
    except RuntimeError:
        if getattr(x, "is_fully_addressable", True):
            raise
        return None  # part of it is only on other processes' devices
