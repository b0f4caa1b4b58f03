"""lens.nn against flax.linen (issue 3): depth-16 MLP.

1. un-jitted ``apply`` (Python overhead; target lens <= 0.5x flax);
2. first jitted call of a train step (trace + compile; target <= 0.8x);
3. steady-state jitted train step against a hand-written pure-JAX MLP (<= 1.05x).
"""

from __future__ import annotations

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


def run(repeats: int = 20) -> list[dict]:
    import flax.linen as fnn

    import lens.nn as lnn

    x = jnp.ones((BATCH, WIDTH))
    y = jnp.ones((BATCH, 1))
    key = jax.random.key(0)
    tx = optax.adam(1e-3)
    rows = []
    params = None
    for name, nn in (("lens", lnn), ("flax", fnn)):
        model = make(nn)
        v = model.init(key, x)
        params = jax.tree.map(lambda a: a, dict(v["params"]))
        t = median_time(lambda model=model, v=v: model.apply(v, x), repeats)
        rows.append({"library": name, "phase": "apply (un-jitted)", "seconds": t})
        apply = lambda p, x, model=model: model.apply({"params": p}, x)  # noqa: E731
        compile_times = []
        for _ in range(3):
            step = jax.jit(_train_step(apply, tx))  # a fresh jit: trace + compile
            opt_state = tx.init(params)
            t0 = time.perf_counter()
            block(step(params, opt_state, x, y))
            compile_times.append(time.perf_counter() - t0)
        rows.append(
            {
                "library": name,
                "phase": "first jitted train step",
                "seconds": sorted(compile_times)[1],
            }
        )
        step = jax.jit(_train_step(apply, tx))
        opt_state = tx.init(params)
        t = median_time(
            lambda step=step, opt_state=opt_state, params=params: step(params, opt_state, x, y),
            repeats,
            number=10,
        )
        rows.append(
            {"library": name, "phase": "steady jitted train step", "seconds": t}
        )
    step = jax.jit(_train_step(pure_apply, tx))
    opt_state = tx.init(params)
    t = median_time(lambda: step(params, opt_state, x, y), repeats, number=10)
    rows.append(
        {"library": "pure jax", "phase": "steady jitted train step", "seconds": t}
    )
    return rows


if __name__ == "__main__":
    rows = run()
    for r in rows:
        print(f"{r['library']:9s} {r['phase']:26s} {r['seconds'] * 1e3:9.3f} ms")
