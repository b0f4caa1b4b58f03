"""lens.nn against flax.linen (and pure JAX) on MLPs (issue 8, items 1-3).

1. un-jitted ``init`` and ``apply`` at depth 4, 16 and 64 (Python overhead; target
   lens <= 0.5x flax);
2. first jitted call of a train step at depth 16: trace, lower and compile of a fresh
   ``jax.jit`` against a hand-written pure-JAX MLP, the floor (issue 29: <= 1.05x
   pure, trace <= pure's), each phase timed on its own so the table shows where the
   time goes; each interleaved repeat's ratio to pure JAX is kept (``ratios``);
3. steady-state jitted train step against the pure-JAX MLP (<= 1.05x).
"""

from __future__ import annotations

import re
import statistics
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks._timing import block, median_time

DEPTHS = (4, 16, 64)
DEPTH, WIDTH, BATCH = 16, 64, 32


def make(nn, depth: int = DEPTH):
    """A ReLU MLP of ``depth`` hidden Dense layers and a 1-unit head."""

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(depth):
                x = nn.relu(nn.Dense(WIDTH)(x))
            return nn.Dense(1)(x)

    return MLP()


def train_step(apply, tx):
    """A mean-squared-error Adam step around ``apply(params, x)``."""

    def loss(params, x, y):
        return jnp.mean((apply(params, x) - y) ** 2)

    def step(params, opt_state, x, y):
        value, g = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return step


def pure_apply(params, x):
    """The same MLP written with no library: the floor for every library."""
    for i in range(DEPTH):
        p = params[f"Dense_{i}"]
        x = jax.nn.relu(x @ p["kernel"] + p["bias"])
    p = params[f"Dense_{DEPTH}"]
    return x @ p["kernel"] + p["bias"]


def hlo_ops(step, *args) -> list[str]:
    """The sorted op names of ``step``'s optimised XLA program."""
    text = step.lower(*args).compile().as_text()
    return sorted(re.findall(r"= \S+ (\w[\w-]*)\(", text))


def _first_call(apply, params, tx, x, y) -> tuple[float, float, float]:
    """Trace, lower and compile seconds of a fresh jit of the train step."""
    step = jax.jit(train_step(apply, tx))  # a new function: nothing cached for it
    opt_state = tx.init(params)
    t0 = time.perf_counter()
    traced = step.trace(params, opt_state, x, y)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    lowered.compile()
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def run(repeats: int = 15, compiles: int = 9, depths=DEPTHS) -> list[dict]:
    """Rows of (bench, library, seconds): medians over interleaved repeats."""
    import flax.linen as fnn

    import lens.nn as lnn

    libs = {"lens": lnn, "flax": fnn}
    x = jnp.ones((BATCH, WIDTH))
    y = jnp.ones((BATCH, 1))
    key = jax.random.key(0)
    rows = []

    # 1. Un-jitted init and apply; the libraries alternate so noise hits both alike.
    for depth in depths:
        fns = {}
        for name, nn in libs.items():
            model = make(nn, depth)
            v = model.init(key, x)
            fns[(name, "init")] = lambda m=model: m.init(key, x)
            fns[(name, "apply")] = lambda m=model, v=v: m.apply(v, x)
        samples: dict[tuple[str, str], list[float]] = {k: [] for k in fns}
        for _ in range(repeats):
            for k, f in fns.items():
                samples[k].append(median_time(f, 1, 1, number=3))
        for (name, phase), ts in samples.items():
            rows.append(
                {
                    "bench": f"MLP depth {depth}: {phase} (un-jitted)",
                    "library": name,
                    "seconds": statistics.median(ts),
                }
            )

    # 2. First jitted train step, phase by phase; pure JAX is the floor.
    tx = optax.adam(1e-3)
    setups = {}
    for name, nn in libs.items():
        model = make(nn)
        params = dict(model.init(key, x)["params"])
        setups[name] = (lambda p, x, m=model: m.apply({"params": p}, x), params)
    setups["pure jax"] = (pure_apply, setups["lens"][1])
    phases: dict[str, list[tuple[float, float, float]]] = {k: [] for k in setups}
    order = list(setups)
    for i in range(compiles):
        for name in order[i % 3 :] + order[: i % 3]:
            apply, params = setups[name]
            phases[name].append(_first_call(apply, params, tx, x, y))
    pure = phases["pure jax"]
    for name, ts in phases.items():
        for j, phase in enumerate(("trace", "lower", "compile")):
            rows.append(
                {
                    "bench": f"MLP depth {DEPTH}: first jitted train step, {phase}",
                    "library": name,
                    "seconds": statistics.median(t[j] for t in ts),
                    "ratios": [a[j] / b[j] for a, b in zip(ts, pure)],
                }
            )
        rows.append(
            {
                "bench": f"MLP depth {DEPTH}: first jitted train step",
                "library": name,
                "seconds": statistics.median(sum(t) for t in ts),
                "ratios": [sum(a) / sum(b) for a, b in zip(ts, pure)],
            }
        )

    # 3. Steady state: many short samples, interleaved (the step is ~0.5 ms).
    params = setups["lens"][1]
    steps = {}
    for name, (apply, _) in setups.items():
        step = jax.jit(train_step(apply, tx))
        opt_state = tx.init(params)
        block(step(params, opt_state, x, y))
        steps[name] = (step, opt_state)
    samples2: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(repeats * 3):
        for name, (step, opt_state) in steps.items():
            samples2[name].append(
                median_time(
                    lambda step=step, o=opt_state: step(params, o, x, y),
                    1,
                    0,
                    number=10,
                )
            )
    for name, ts in samples2.items():
        rows.append(
            {
                "bench": f"MLP depth {DEPTH}: steady jitted train step",
                "library": name,
                "seconds": statistics.median(ts),
            }
        )
    # Bitcasts are free (a reinterpretation of the same buffer), so not counted.
    ops = [
        [
            op
            for op in hlo_ops(steps[k][0], params, steps[k][1], x, y)
            if op != "bitcast"
        ]
        for k in ("lens", "pure jax")
    ]
    same = ops[0] == ops[1]
    rows.append(
        {"bench": "HLO ops identical to pure jax", "library": "lens", "seconds": same}
    )
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['bench']:58s} {r['library']:9s} {r['seconds'] * 1e3:9.3f} ms")
