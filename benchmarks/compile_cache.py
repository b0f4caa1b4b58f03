"""The first jitted train step after a kernel restart, with lens's compilation cache.

Each measurement is a fresh Python process (as after a kernel restart) that builds
the suite's small transformer (benchmarks/suite.py), jits an Adam train step and
times its first call phase by phase: trace, lower, compile (or load from the
persistent cache), run. ``cold``: no persistent cache. ``warm``: lens's cache
(:func:`lens.compilation_cache.enable_compilation_cache`) already holds the
program. ``flax``: the same model in flax.linen, no cache (flax's default).

JAX's persistent cache stores compiled executables keyed by the lowered program,
so a warm start still traces and lowers: only the XLA compile is skipped.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import jax, jax.numpy as jnp, optax
lib, cache, blocks = sys.argv[1], sys.argv[2], int(sys.argv[3])
if cache != "-":
    from lens.compilation_cache import enable_compilation_cache
    enable_compilation_cache(cache)
if lib == "flax":
    from flax import linen as nn
else:
    from lens import nn
from benchmarks.suite import transformer
model, ids = transformer(nn, blocks), jnp.zeros((4, 32), jnp.int32)
# jitted: an eager init compiles each of its ops alone (~1 s); not what is timed
params = jax.jit(model.init)(jax.random.key(0), ids)["params"]
tx = optax.adam(1e-3)
opt = tx.init(params)
def loss(p):
    logits = model.apply({"params": p}, ids)
    return optax.softmax_cross_entropy_with_integer_labels(logits, ids).mean()
@jax.jit
def step(p, s):
    value, g = jax.value_and_grad(loss)(p)
    u, s = tx.update(g, s, p)
    return optax.apply_updates(p, u), s, value
t0 = time.perf_counter()
traced = step.trace(params, opt)
t1 = time.perf_counter()
lowered = traced.lower()
t2 = time.perf_counter()
compiled = lowered.compile()
t3 = time.perf_counter()
jax.block_until_ready(compiled(params, opt))
t4 = time.perf_counter()
print(json.dumps({"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2,
                  "run": t4 - t3}))
"""

PHASES = ("trace", "lower", "compile", "run")


def _first_step(lib: str, cache: str | None, blocks: int) -> dict[str, float]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        LENS_COMPILATION_CACHE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    )
    out = subprocess.run(
        [sys.executable, "-c", CHILD, lib, cache or "-", str(blocks)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(repeats: int = 5, blocks: int = 4, fill_is_cold: bool = False) -> list[dict]:
    """Per case (cold, warm, flax): the medians of ``repeats`` fresh processes
    (interleaved) of each phase and of the whole first step, and each repeat's
    warm / cold ratio (``ratios``, on the ``warm`` row). ``fill_is_cold`` (quick
    runs): the run that fills the cache is also the first cold sample (it compiles
    everything, and writes the cache besides)."""
    samples: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "flax": []}
    with tempfile.TemporaryDirectory() as folder:
        fill = _first_step("lens", folder, blocks)  # fills the cache
        for i in range(repeats):
            if fill_is_cold and i == 0:
                samples["cold"].append(fill)
            else:
                samples["cold"].append(_first_step("lens", None, blocks))
            samples["warm"].append(_first_step("lens", folder, blocks))
            samples["flax"].append(_first_step("flax", None, blocks))
    total = {k: [sum(s.values()) for s in v] for k, v in samples.items()}
    rows = []
    for case, runs in samples.items():
        row: dict = {
            "case": case,
            "seconds": statistics.median(total[case]),
            **{p: statistics.median(r[p] for r in runs) for p in PHASES},
        }
        if case == "warm":
            row["ratios"] = [w / c for w, c in zip(total["warm"], total["cold"])]
        rows.append(row)
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in run():
        print(row)
