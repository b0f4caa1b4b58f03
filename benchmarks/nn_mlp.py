"""lens.nn against flax.linen (issue 3): depth-16 MLP.

1. un-jitted ``apply`` (Python overhead; target lens <= 0.5x flax);
2. first jitted call of a train step (trace + compile; target <= 0.8x);
3. steady-state jitted train step against a hand-written pure-JAX MLP (<= 1.05x).
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks._timing import block, median_time

DEPTH, WIDTH, BATCH = 16, 64, 32


def make(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(DEPTH):
                x = nn.relu(nn.Dense(WIDTH)(x))
            return nn.Dense(1)(x)

    return MLP()


def _train_step(apply, tx):
    def loss(params, x, y):
        return jnp.mean((apply(params, x) - y) ** 2)

    def step(params, opt_state, x, y):
        value, g = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return step


def pure_apply(params, x):
    for i in range(DEPTH):
        p = params[f"Dense_{i}"]
        x = jax.nn.relu(x @ p["kernel"] + p["bias"])
    p = params[f"Dense_{DEPTH}"]
    return x @ p["kernel"] + p["bias"]


def _hlo_ops(step, params, opt_state, x, y) -> list[str]:
    import re

    text = step.lower(params, opt_state, x, y).compile().as_text()
    return sorted(re.findall(r"= \S+ (\w[\w-]*)\(", text))


def _first_call(apply, params, tx, x, y) -> float:
    step = jax.jit(_train_step(apply, tx))  # a fresh jit: trace + lower + compile
    opt_state = tx.init(params)
    t0 = time.perf_counter()
    block(step(params, opt_state, x, y))
    return time.perf_counter() - t0


def run(repeats: int = 20, compiles: int = 9) -> list[dict]:
    """One row per (library, phase) with the median seconds."""
    import flax.linen as fnn

    import lens.nn as lnn

    x = jnp.ones((BATCH, WIDTH))
    y = jnp.ones((BATCH, 1))
    key = jax.random.key(0)
    tx = optax.adam(1e-3)
    rows = []
    setups = {}
    for name, nn in (("lens", lnn), ("flax", fnn)):
        model = make(nn)
        v = model.init(key, x)
        params = jax.tree.map(lambda a: a, dict(v["params"]))
        t = median_time(lambda model=model, v=v: model.apply(v, x), repeats)
        rows.append({"library": name, "phase": "apply (un-jitted)", "seconds": t})
        setups[name] = (lambda p, x, model=model: model.apply({"params": p}, x), params)
    # First jitted call: alternate the libraries so neither pays one-time costs.
    # Pure JAX is the floor: same computation, no library at all.
    setups["pure jax"] = (pure_apply, setups["lens"][1])
    times: dict[str, list[float]] = {"lens": [], "flax": [], "pure jax": []}
    order = ["lens", "flax", "pure jax"]
    for i in range(compiles):
        for name in order[i % 3 :] + order[: i % 3]:
            apply, params = setups[name]
            times[name].append(_first_call(apply, params, tx, x, y))
    for name, ts in times.items():
        rows.append(
            {
                "library": name,
                "phase": "first jitted train step",
                "seconds": statistics.median(ts),
            }
        )
    # Steady state: interleave the libraries, many samples each (the step is ~0.5 ms,
    # so CPU noise is large); also check the compiled executables are the same.
    del setups["pure jax"]
    params = setups["lens"][1]
    steps = {}
    for name, apply in (
        ("lens", setups["lens"][0]),
        ("flax", setups["flax"][0]),
        ("pure jax", pure_apply),
    ):
        step = jax.jit(_train_step(apply, tx))
        opt_state = tx.init(params)
        block(step(params, opt_state, x, y))
        steps[name] = (step, opt_state)
    samples: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(repeats * 3):
        for name, (step, opt_state) in steps.items():
            samples[name].append(
                median_time(
                    lambda step=step, o=opt_state: step(params, o, x, y),
                    1,
                    0,
                    number=10,
                )
            )
    for name, ts in samples.items():
        rows.append(
            {
                "library": name,
                "phase": "steady jitted train step",
                "seconds": statistics.median(ts),
            }
        )
    rows.append(
        {
            "library": "lens",
            "phase": "HLO ops identical to pure jax",
            "seconds": float(
                _hlo_ops(steps["lens"][0], params, steps["lens"][1], x, y)
                == _hlo_ops(steps["pure jax"][0], params, steps["pure jax"][1], x, y)
            ),
        }
    )
    return rows


if __name__ == "__main__":
    rows = run()
    for r in rows:
        print(f"{r['library']:9s} {r['phase']:26s} {r['seconds'] * 1e3:9.3f} ms")
