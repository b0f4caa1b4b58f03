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

import json
import os
import statistics
import subprocess
import sys
import tempfile

# One interpreter imports jax and optax, then forks a child per measurement: each
# child starts where a restarted kernel is after those imports (nothing traced or
# compiled yet, no backend started), without paying ~1 s to start Python and import
# jax again. The parameters and Adam state are zeros of the shapes ``init`` gives
# (``jax.eval_shape``: nothing compiled); only the step's compile depends on them,
# and only on their shapes. Prints one dict of phase seconds per measurement.
FORKER = r"""
import json, os, sys, time, traceback
import jax, jax.numpy as jnp, numpy as np, optax


def first_step(lib, cache, blocks):
    if cache is not None:
        from lens.compilation_cache import enable_compilation_cache
        enable_compilation_cache(cache)
    if lib == "flax":
        from flax import linen as nn
    else:
        from lens import nn
    from benchmarks.suite import transformer
    model, ids = transformer(nn, blocks), np.zeros((4, 32), np.int32)
    tx = optax.adam(1e-3)
    zeros = lambda tree: jax.device_put(
        jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), tree))
    params = zeros(jax.eval_shape(model.init, jax.random.key(0), ids)["params"])
    opt = zeros(jax.eval_shape(tx.init, params))
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
    return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "run": t4 - t3}


results = []
for lib, cache, blocks in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, report, and never return
        os.close(read)
        try:
            report, code = json.dumps(first_step(lib, cache, blocks)), 0
        except BaseException:
            report, code = traceback.format_exc(limit=-3), 1
        os.write(write, report.encode())
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        report = f.read()
    _, status = os.waitpid(pid, 0)
    if status:
        sys.exit(f"first step of {lib} failed in a fresh process:\n{report}")
    results.append(json.loads(report))
print(json.dumps(results))
"""

PHASES = ("trace", "lower", "compile", "run")


def _first_steps(plan: list[tuple[str, str | None, int]]) -> list[dict[str, float]]:
    """Per (library, cache folder or None, blocks), in order: the first step's phase
    seconds, each in a fresh process (forked after ``import jax, optax``)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        LENS_COMPILATION_CACHE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    )
    out = subprocess.run(
        [sys.executable, "-c", FORKER, json.dumps(plan)],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(repeats: int = 5, blocks: int = 4, fill_is_cold: bool = False) -> list[dict]:
    """Per case (cold, warm, flax): the medians of ``repeats`` fresh processes
    (interleaved) of each phase and of the whole first step, and each repeat's
    warm / cold ratio (``ratios``, on the ``warm`` row). ``fill_is_cold`` (quick
    runs): the run that fills the cache is also the first cold sample (it compiles
    everything, and writes the cache besides)."""
    samples: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "flax": []}
    with tempfile.TemporaryDirectory() as folder:
        # the first run fills the cache; then cold, warm and flax, interleaved
        plan = [("lens", folder, blocks)]
        for i in range(repeats):
            if not (fill_is_cold and i == 0):
                plan.append(("lens", None, blocks))
            plan += [("lens", folder, blocks), ("flax", None, blocks)]
        steps = iter(_first_steps(plan))
        fill = next(steps)
        for i in range(repeats):
            samples["cold"].append(fill if fill_is_cold and i == 0 else next(steps))
            samples["warm"].append(next(steps))
            samples["flax"].append(next(steps))
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
