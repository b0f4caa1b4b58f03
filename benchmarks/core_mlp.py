"""Un-jitted init and apply of a depth-16 MLP on lens.core and flax.core (issue 2).

Measures Python overhead: the MLP is tiny, so the time is the library's own.
Target: lens <= 0.7x flax.
"""

from __future__ import annotations

import statistics

import jax
import jax.numpy as jnp

from benchmarks._timing import median_time

DEPTH = 16


def _mlp(nn):
    def mlp(scope, x):
        for i in range(DEPTH):
            x = jax.nn.relu(nn.dense(scope.push(f"Dense_{i}"), x, 8))
        return x

    return mlp


def run(repeats: int = 20) -> list[dict]:
    """Rows of (bench, library, seconds): medians over interleaved repeats."""
    from flax import core as fcore
    from flax.core import nn as fnn

    from lens import core as lcore
    from lens.core import nn as lnn

    x = jnp.ones((2, 8))
    key = jax.random.key(0)
    fns = {}
    for name, core, nn in (("lens", lcore, lnn), ("flax", fcore, fnn)):
        mlp = _mlp(nn)
        _, v = core.init(mlp)(key, x)
        fns[(name, "init")] = lambda core=core, mlp=mlp: core.init(mlp)(key, x)
        fns[(name, "apply")] = lambda core=core, mlp=mlp, v=v: core.apply(mlp)(v, x)
    # Interleave the libraries so machine noise hits both alike.
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            samples[k].append(median_time(f, 1, 1, number=5))
    return [
        {
            "bench": f"lens.core MLP depth {DEPTH}: {phase} (un-jitted)",
            "library": lib,
            "seconds": statistics.median(ts),
        }
        for (lib, phase), ts in samples.items()
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r['bench']:40s} {r['library']:5s} {r['seconds'] * 1e3:8.3f} ms")
