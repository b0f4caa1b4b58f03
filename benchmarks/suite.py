"""The rest of the suite (issue 8): transformer first call, scan compile, vmap, import.

- first jitted train step of a small transformer (lens vs flax vs pure floor is in
  nn_mlp; here lens vs flax);
- ``nn.scan`` over 8, 32, 128 layers: compile time, against a Python-unrolled stack,
  lens and flax (target: lens's compile at 128 layers <= 1.5x its compile at 8);
- ``nn.vmap`` ensemble of 8: compile and run;
- cold ``import lens`` vs ``import flax.linen`` (fresh interpreters; target <= 1.0).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks._timing import block, median_time


def transformer(nn):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            x = x + nn.SelfAttention(num_heads=4, qkv_features=64)(
                h, mask=nn.make_causal_mask(jnp.ones(x.shape[:2]))
            )
            h = nn.LayerNorm()(x)
            return x + nn.Dense(64)(nn.gelu(nn.Dense(256)(h)))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, ids):
            x = nn.Embed(512, 64)(ids)
            for _ in range(4):
                x = Block()(x)
            return nn.Dense(512)(nn.LayerNorm()(x))

    return Model()


def _first_step(model, variables, ids) -> float:
    tx = optax.adam(1e-3)
    params = variables["params"]

    def loss(p):
        logits = model.apply({"params": p}, ids)
        return optax.softmax_cross_entropy_with_integer_labels(logits, ids).mean()

    @jax.jit
    def step(p, s):
        value, g = jax.value_and_grad(loss)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, value

    t0 = time.perf_counter()
    block(step(params, tx.init(params)))
    return time.perf_counter() - t0


def ensemble_member(nn):
    class Member(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(1)(nn.relu(nn.Dense(64)(x)))

    return Member


def scan_stack(nn, layers: int, unrolled: bool):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.tanh(nn.Dense(64)(c)), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            if unrolled:
                for _ in range(layers):
                    x = Block()(x, None)[0]
                return x
            S = nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=layers,
            )
            return S()(x, None)[0]

    return Stack()


def _compile_time(model, x) -> float:
    variables = model.init(jax.random.key(0), x)
    f = jax.jit(lambda v, x: model.apply(v, x))
    t0 = time.perf_counter()
    f.lower(variables, x).compile()
    return time.perf_counter() - t0


def _import_time(module: str, repeats: int = 5) -> float:
    code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return statistics.median(times)


def run(first_steps: int = 5, scan_layers=(8, 32, 128), repeats: int = 5) -> list[dict]:
    """Rows of (benchmark, library, seconds); ``repeats`` cold imports (fresh
    processes) per module and scan compiles per stack, medians taken."""
    import flax.linen as fnn

    import lens.nn as lnn

    rows = []
    ids = jnp.zeros((4, 32), jnp.int32)
    tvars = {
        name: (transformer(nn), transformer(nn).init(jax.random.key(0), ids))
        for name, nn in (("lens", lnn), ("flax", fnn))
    }
    times: dict[str, list[float]] = {"lens": [], "flax": []}
    for i in range(first_steps):
        for name in ("lens", "flax") if i % 2 else ("flax", "lens"):
            model, v = tvars[name]
            times[name].append(_first_step(model, v, ids))
    for name, ts in times.items():
        rows.append(
            {
                "bench": "transformer first jitted train step",
                "library": name,
                "seconds": statistics.median(ts),
            }
        )

    x = jnp.ones((8, 64))
    for layers in scan_layers:
        for name, nn in (("lens", lnn), ("flax", fnn)):
            for unrolled in (False, True):
                kind = "Python-unrolled" if unrolled else "nn.scan"
                rows.append(
                    {
                        "bench": f"{kind} {layers} layers: compile",
                        "library": name,
                        "seconds": statistics.median(
                            _compile_time(scan_stack(nn, layers, unrolled), x)
                            for _ in range(1 if unrolled else min(3, repeats))
                        ),
                    }
                )

    for name, nn in (("lens", lnn), ("flax", fnn)):
        Member = ensemble_member(nn)
        E = nn.vmap(
            Member,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            axis_size=8,
        )
        v = E().init(jax.random.key(0), x)
        f = jax.jit(lambda v, x, E=E: E().apply(v, x))
        t0 = time.perf_counter()
        block(f(v, x))
        rows.append(
            {
                "bench": "nn.vmap ensemble of 8: first call",
                "library": name,
                "seconds": time.perf_counter() - t0,
            }
        )
        rows.append(
            {
                "bench": "nn.vmap ensemble of 8: run",
                "library": name,
                "seconds": median_time(lambda f=f, v=v: f(v, x), 20, number=20),
            }
        )

    rows.append(
        {
            "bench": "cold import of lens (the package alone)",
            "library": "lens",
            "seconds": _import_time("lens", repeats),
        }
    )
    rows.append(
        {
            "bench": "cold import of lens.nn / flax.linen",
            "library": "lens",
            "seconds": _import_time("lens.nn", repeats),
        }
    )
    rows.append(
        {
            "bench": "cold import of lens.nn / flax.linen",
            "library": "flax",
            "seconds": _import_time("flax.linen", repeats),
        }
    )
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['bench']:40s} {r['library']:16s} {r['seconds'] * 1e3:9.2f} ms")
