"""Timing helpers: medians over repeats, with warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import jax


def block(x: Any) -> Any:
    """Waits for every array in ``x``."""
    return jax.block_until_ready(x)


def median_time(
    fn: Callable[[], Any], repeats: int = 20, warmup: int = 3, number: int = 1
) -> float:
    """Median wall time of ``fn()`` in seconds (each sample averages ``number`` calls)."""
    for _ in range(warmup):
        block(fn())
    samples = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        block(out)
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)
