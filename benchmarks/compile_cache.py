"""The first jitted train step after a kernel restart, with lens's compilation cache.

Each measurement is a fresh Python process (as after a kernel restart; forked from
one that has imported jax and optax) that builds the suite's small transformer
(benchmarks/suite.py), jits an Adam train step and
times its first call phase by phase: trace, lower, compile (or load from the
persistent cache), run. ``cold``: no persistent cache. ``warm``: lens's cache
(:func:`lens.compilation_cache.enable_compilation_cache`) already holds the
program. ``flax``: the same model in flax.linen, no cache (flax's default).

JAX's persistent cache stores compiled executables keyed by the lowered program,
so a warm start still traces and lowers: only the XLA compile is skipped.
"""

from __future__ import annotations

import os
import statistics
import tempfile

from benchmarks._fork import forked

# Each measurement runs in a child forked from an interpreter that has imported jax
# and optax (benchmarks/_fork.py): where a restarted kernel is after those imports
# (nothing traced or compiled yet, no backend started). The parameters and Adam
# state are zeros of the shapes ``init`` gives (``jax.eval_shape``: nothing
# compiled); only the step's compile depends on them, and only on their shapes.
FIRST_STEP = r"""
import time
import jax, numpy as np, optax


def job(plan):
    lib, cache, blocks = plan
    if cache is not None:
        from lens.compilation_cache import enable_compilation_cache
        enable_compilation_cache(cache)
    if lib == "flax":
        from flax import linen as nn
    else:
        from lens import nn
    from benchmarks.suite import train_step, transformer
    model, ids = transformer(nn, blocks), np.zeros((4, 32), np.int32)
    tx = optax.adam(1e-3)
    zeros = lambda tree: jax.device_put(
        jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), tree))
    params = zeros(jax.eval_shape(model.init, jax.random.key(0), ids)["params"])
    opt = zeros(jax.eval_shape(tx.init, params))
    step = train_step(model, ids, tx)
    t0 = time.perf_counter()
    traced = step.trace(params, opt)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    jax.block_until_ready(compiled(params, opt))
    t4 = time.perf_counter()
    return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "run": t4 - t3}
"""

PHASES = ("trace", "lower", "compile", "run")


def _first_steps(plan: list[tuple[str, str | None, int]]) -> list[dict[str, float]]:
    """Per (library, cache folder or None, blocks), in order: the first step's phase
    seconds, each in a fresh process."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        LENS_COMPILATION_CACHE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    )
    return forked(FIRST_STEP, plan, env)


def run(repeats: int = 5, blocks: int = 4, fill_is_cold: bool = False) -> list[dict]:
    """Per case (cold, warm, flax): the medians of ``repeats`` fresh processes
    (interleaved) of each phase and of the whole first step, and each repeat's
    warm / cold ratio (``ratios``, on the ``warm`` row). ``fill_is_cold`` (quick
    runs): the run that fills the cache is also the first cold sample (it compiles
    everything, and writes the cache besides)."""
    samples: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "flax": []}
    with tempfile.TemporaryDirectory() as folder:
        # the first run fills the cache; then cold, warm and flax, interleaved
        plan = [("fill", "lens", folder)]
        for i in range(repeats):
            if not (fill_is_cold and i == 0):
                plan.append(("cold", "lens", None))
            plan += [("warm", "lens", folder), ("flax", "flax", None)]
        steps = _first_steps([(lib, cache, blocks) for _, lib, cache in plan])
        for (case, _, _), step in zip(plan, steps):
            if case != "fill" or fill_is_cold:
                samples["cold" if case == "fill" else case].append(step)
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
