"""The rest of the suite (issues 8 and 29): transformer first call, scan, vmap, import.

- first jitted train step of a small transformer (lens vs flax vs pure floor is in
  nn_mlp; here lens vs flax);
- ``nn.scan`` over 8, 32, 128 layers, phase by phase (init, trace, lower, compile),
  against a Python-unrolled stack, lens and flax (target: lens's trace + lower +
  compile at 128 layers <= its time at 8);
- ``nn.vmap`` ensemble of 8: compile and run;
- cold imports in fresh processes, what each adds over ``import jax``: lens.nn /
  flax.linen and lens.nnx / flax.nnx (target <= 0.3), and with a first use of the
  names a model needs (what a lazy package postpones).
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks._fork import forked
from benchmarks._timing import block, median_time


def transformer(nn, blocks: int = 4):
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
            for _ in range(blocks):
                x = Block()(x)
            return nn.Dense(512)(nn.LayerNorm()(x))

    return Model()


def train_step(model, ids, tx):
    """The jitted Adam train step of ``model`` on ``ids`` (next-token loss)."""

    def loss(p):
        logits = model.apply({"params": p}, ids)
        return optax.softmax_cross_entropy_with_integer_labels(logits, ids).mean()

    @jax.jit
    def step(p, s):
        value, g = jax.value_and_grad(loss)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, value

    return step


def _first_step(model, variables, ids) -> float:
    tx = optax.adam(1e-3)
    params = variables["params"]
    step = train_step(model, ids, tx)
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


def _scan_phases(model, x) -> tuple[float, float, float, float]:
    """Seconds of ``init`` (eager), then trace, lower and compile of a fresh jit of
    ``apply``."""
    t0 = time.perf_counter()
    variables = block(model.init(jax.random.key(0), x))
    f = jax.jit(lambda v, x: model.apply(v, x))
    t1 = time.perf_counter()
    traced = f.trace(variables, x)
    t2 = time.perf_counter()
    lowered = traced.lower()
    t3 = time.perf_counter()
    lowered.compile()
    t4 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, t4 - t3


# Each statement runs in a child forked from an interpreter that has imported jax
# (benchmarks/_fork.py): exactly where a fresh ``python -c "import jax; ..."`` would
# be after its first line.
IMPORT_TIMER = """
import time
import jax


def job(stmt):
    t0 = time.perf_counter()
    exec(stmt, {})
    return time.perf_counter() - t0
"""

# (row, {library: statement}); what each adds over ``import jax`` (a fresh process
# each). "first use" also touches the names a first model needs, so what a lazy
# package postpones is counted too.
IMPORTS = [
    (
        "cold import of lens.nn / flax.linen, over import jax",
        {"lens": "import lens.nn", "flax": "import flax.linen"},
    ),
    (
        "cold import of lens.nnx / flax.nnx, over import jax",
        {"lens": "import lens.nnx", "flax": "import flax.nnx"},
    ),
    (
        "cold import + first use of nn (Module, Dense, compact, relu), over jax",
        {
            lib: f"import {mod} as nn; nn.Module, nn.Dense, nn.compact, nn.relu"
            for lib, mod in (("lens", "lens.nn"), ("flax", "flax.linen"))
        },
    ),
    (
        "cold import + first use of nnx (Module, Linear, Rngs, jit, Optimizer), "
        "over jax",
        {
            lib: f"import {mod} as nnx; "
            "nnx.Module, nnx.Linear, nnx.Rngs, nnx.jit, nnx.Optimizer"
            for lib, mod in (("lens", "lens.nnx"), ("flax", "flax.nnx"))
        },
    ),
]


def import_times(stmts: list[str]) -> list[float]:
    """Seconds each statement adds over ``import jax``, each in a fresh process
    that has imported jax and nothing else."""
    return forked(IMPORT_TIMER, stmts)


def import_rows(repeats: int = 5) -> list[dict]:
    """Medians over ``repeats`` interleaved fresh processes, with each repeat's
    lens / flax ratio on the lens row."""
    plan = [
        (bench, lib, stmt)
        for _ in range(repeats)
        for bench, stmts in IMPORTS
        for lib, stmt in stmts.items()
    ]
    alone = "cold import of lens (the package alone), over import jax"
    plan += [(alone, "lens", "import lens")] * min(3, repeats)
    samples: dict[tuple[str, str], list[float]] = {}
    for (bench, lib, _), t in zip(plan, import_times([p[2] for p in plan])):
        samples.setdefault((bench, lib), []).append(t)
    rows = []
    for bench, stmts in IMPORTS:
        lens, flax = samples[(bench, "lens")], samples[(bench, "flax")]
        for lib in stmts:
            row = {
                "bench": bench,
                "library": lib,
                "seconds": statistics.median(samples[(bench, lib)]),
            }
            if lib == "lens":
                row["ratios"] = [a / b for a, b in zip(lens, flax)]
            rows.append(row)
    rows.append(
        {
            "bench": alone,
            "library": "lens",
            "seconds": statistics.median(samples[(alone, "lens")]),
        }
    )
    return rows


SCAN_PHASES = ("init", "trace", "lower", "compile")


def scan_rows(scan_layers=(8, 32, 128), repeats: int = 3) -> list[dict]:
    """``nn.scan`` over ``scan_layers`` layers, phase by phase (interleaved
    repeats, medians), and trace + lower + compile together; each repeat's ratio to
    the fewest layers rides on that row (``ratios``)."""
    import flax.linen as fnn

    import lens.nn as lnn

    x = jnp.ones((8, 64))
    libs = {"lens": lnn, "flax": fnn}
    samples: dict[tuple[str, int], list[tuple[float, ...]]] = {
        (lib, n): [] for n in scan_layers for lib in libs
    }
    for _ in range(repeats):
        for lib, n in samples:
            samples[(lib, n)].append(_scan_phases(scan_stack(libs[lib], n, False), x))
    rows = []
    for (lib, n), ts in samples.items():
        for j, phase in enumerate(SCAN_PHASES):
            rows.append(
                {
                    "bench": f"nn.scan {n} layers: {phase}",
                    "library": lib,
                    "seconds": statistics.median(t[j] for t in ts),
                }
            )
        tlc = [sum(t[1:]) for t in ts]
        first = [sum(t[1:]) for t in samples[(lib, scan_layers[0])]]
        rows.append(
            {
                "bench": f"nn.scan {n} layers: trace + lower + compile",
                "library": lib,
                "seconds": statistics.median(tlc),
                "ratios": [a / b for a, b in zip(tlc, first)],
            }
        )
    for n in scan_layers:
        for lib, nn in libs.items():
            model = scan_stack(nn, n, True)
            rows.append(
                {
                    "bench": f"Python-unrolled {n} layers: trace + lower + compile",
                    "library": lib,
                    "seconds": sum(_scan_phases(model, x)[1:]),
                }
            )
    return rows


def transformer_rows(first_steps: int = 5, blocks: int = 4) -> list[dict]:
    """The transformer's first jitted train step, lens and flax interleaved
    (``first_steps`` each, the first library rotating), medians."""
    import flax.linen as fnn

    import lens.nn as lnn

    rows = []
    ids = jnp.zeros((4, 32), jnp.int32)
    tvars = {  # init jitted: eagerly it compiles each op alone; it is not timed
        name: (
            transformer(nn, blocks),
            jax.jit(transformer(nn, blocks).init)(jax.random.key(0), ids),
        )
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
    return rows


def run(
    first_steps: int = 5, scan_layers=(8, 32, 128), repeats: int = 5, blocks: int = 4
) -> list[dict]:
    """Rows of (benchmark, library, seconds); ``repeats`` cold imports (fresh
    processes) per module and scan compiles per stack, medians taken; the first
    train steps are a transformer of ``blocks`` blocks."""
    import flax.linen as fnn

    import lens.nn as lnn

    rows = transformer_rows(first_steps, blocks)
    rows += scan_rows(scan_layers, repeats)

    x = jnp.ones((8, 64))
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

    rows += import_rows(repeats)
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['bench']:40s} {r['library']:16s} {r['seconds'] * 1e3:9.2f} ms")
