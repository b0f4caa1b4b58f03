"""tabulate with costs (issue 42): a 100-layer model tabulates in under 2 s.

``nn.tabulate`` and ``nnx.tabulate`` of a 100-layer MLP (Dense/Linear 64 -> 64,
relu) with every cost column (``compute_flops``, ``compute_vjp_flops``,
``compute_cost``): the text of the table, timed

- ``first``: the first table in a fresh process (forked after ``import jax`` and
  lens, nothing traced yet): what a notebook user waits for; the target;
- ``warm``: the median of repeats in one process (JAX's own caches warm).

Beside them, Flax's ``compute_flops`` and ``compute_vjp_flops`` on the same model
(the peer lowers every module's call, 2 x 101 lowerings; lens lowers each distinct
call once: 4). ``lowerings`` counts JAX's "jaxpr to MLIR" conversions.
"""

from __future__ import annotations

import os
import statistics
import time

from benchmarks._fork import forked

DEPTH = 100
TARGET_S = 2.0
CASE = f"{DEPTH}-layer MLP, tabulate with costs"

JOB = r"""
import logging, time
import jax, jax.numpy as jnp


class _Count(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.n = 0

    def emit(self, record):
        self.n += "Finished jaxpr to MLIR module conversion" in record.getMessage()


def tabulate(api, lib, depth, flags):
    '''A function making the table of a depth-layer MLP in ``api`` ("nn" or
    "nnx") of ``lib`` ("lens" or "flax") with ``flags``.'''
    if api == "nn":
        nn = __import__(lib + (".nn" if lib == "lens" else ".linen"), fromlist=["x"])

        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x):
                for _ in range(depth):
                    x = nn.relu(nn.Dense(64)(x))
                return x

        key, x = jax.random.key(0), jnp.ones((8, 64))
        return lambda: nn.tabulate(MLP(), key, **flags)(x)
    nnx = __import__(lib + ".nnx", fromlist=["x"])

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List(
                [nnx.Linear(64, 64, rngs=rngs) for _ in range(depth)]
            )

        def __call__(self, x):
            for layer in self.layers:
                x = nnx.relu(layer(x))
            return x

    model, x = MLP(nnx.Rngs(0)), jnp.ones((8, 64))
    return lambda: nnx.tabulate(model, x, **flags)


def timed(fn):
    count = _Count()
    logger = logging.getLogger("jax._src.dispatch")
    logger.addHandler(count)
    jax.config.update("jax_log_compiles", True)  # JAX logs each lowering
    t0 = time.perf_counter()
    text = fn()
    seconds = time.perf_counter() - t0
    jax.config.update("jax_log_compiles", False)
    logger.removeHandler(count)
    assert "Total" in text
    return seconds, count.n


def job(item):
    api, lib, depth, flags, repeats = item
    fn = tabulate(api, lib, depth, flags)
    first, lowerings = timed(fn)
    warm = [timed(fn)[0] for _ in range(repeats)]
    return {"first": first, "warm": warm, "lowerings": lowerings}
"""

LENS_FLAGS = {"compute_flops": True, "compute_vjp_flops": True, "compute_cost": True}
FLAX_FLAGS = {"compute_flops": True, "compute_vjp_flops": True}


def run(repeats: int = 3, depth: int = DEPTH, peer: bool = True) -> list[dict]:
    """Rows of (case, api, library, first and warm seconds, lowerings, target)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    )
    plan = [(api, "lens", depth, LENS_FLAGS, repeats) for api in ("nn", "nnx")]
    if peer:
        plan += [(api, "flax", depth, FLAX_FLAGS, 1) for api in ("nn", "nnx")]
    rows = []
    for (api, lib, *_), r in zip(plan, forked(JOB, plan, env), strict=True):
        rows.append(
            {
                "case": f"{depth}-layer MLP, tabulate with costs",
                "api": api,
                "library": lib,
                "seconds": r["first"],
                "warm": statistics.median(r["warm"]),
                "lowerings": r["lowerings"],
                "target": f"< {TARGET_S:g} s (first)" if lib == "lens" else "",
            }
        )
    return rows


def lines(rows: list[dict]) -> list[str]:
    """The markdown section of RESULTS.md: a row per API and library, verdicts."""
    out = [
        "",
        "## tabulate with costs (issue 42)",
        "",
        "nn.tabulate / nnx.tabulate of a 100-layer MLP: lens with compute_flops, "
        "compute_vjp_flops and compute_cost (benchmarks/tabulate_cost.py), flax with "
        "its two FLOPs options; the first table in a fresh process, then warm.",
        "",
        "| api | library | first (ms) | warm (ms) | lowerings | target |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        verdict = ""
        if r["target"]:
            verdict = f"{r['target']}: {'met' if r['seconds'] < TARGET_S else 'MISSED'}"
        out.append(
            f"| {r['api']} | {r['library']} | {r['seconds'] * 1e3:.0f} "
            f"| {r['warm'] * 1e3:.0f} | {r['lowerings']} | {verdict} |"
        )
    return out


if __name__ == "__main__":
    t0 = time.perf_counter()
    print("\n".join(lines(run())))
    print(f"\n({time.perf_counter() - t0:.1f} s)")
