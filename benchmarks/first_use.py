"""Issue 44: first use and eager use, lens against flax and pure JAX.

Rows (ratios are lens over the named reference; the models and their pure-JAX
twins are in benchmarks/_first_use_models.py, which checks that pure JAX computes
flax's very numbers):

1. **Time to a first model**, in a fresh process: ``import`` + define + build (+
   ``init``) + first call of a small MLP (depth 4, width 64), Linen and nnx. Each
   child of benchmarks/_fork.py first runs the same arithmetic in pure JAX twice
   (the first run pays JAX's own first use: the backend, each eager op's compile,
   and, by a ``gc.collect()`` after it, the full collection that importing JAX
   leaves due), then the library's cell; what the library *adds* is its cell's
   time less pure JAX's second run. Target: lens's added time <= 0.3 of flax's.
   Informational beside it: the whole cell, and the whole cell in a child where
   JAX ran nothing before (then each library pays JAX's first use of whatever it
   runs, and the collection JAX left due: ~40-50 ms here, in either library's
   cell).
2. **Eager nnx build** of a 16-layer MLP with ``nnx.Rngs(0)`` against pure JAX's
   ``fold_in(key, count)`` keys and ``lecun_normal`` / ``zeros`` (target <= 1.5x);
   beside it, informational, pure JAX with nnx's counter kept on the device.
3. **Eager nnx forward**, depth 16, batch 8, un-jitted (target <= 1.05x pure JAX).
4. **Per-Variable cost** of ``nnx.split``, ``merge``, ``state`` and ``update`` on a
   64-layer model (128 Variables), in microseconds per Variable, lens and flax: the
   numbers are stated (the issue asks to halve them later).
5. **Linen eager** ``init`` and ``apply`` of the depth-16 MLP (and its Dense(1)
   head, benchmarks/nn_mlp.py's model) against pure JAX doing the same: the same
   SHA-1 path keys, initializers and forward pass, so the baseline is comparable
   (the same numbers, checked) and the targets are real: init <= 1.5x, apply
   <= 1.05x. Both sides call ``jax.nn.relu``, a ``custom_jvp`` that costs ~80 us
   a call eagerly (more than a 32x64 matmul and add), so the ratio understates
   what the module machinery adds per layer.
6. **Steady jitted steps**: a Linen ``TrainState`` Adam step and an
   ``nnx.Optimizer`` Adam step (``nnx.jit``), against a pure ``jax.jit`` step doing
   the same arithmetic (the step counter included): the optimised HLO's op count
   (``lower(...).compile().as_text()``, bitcasts not counted: a bitcast is the same
   buffer) must be pure JAX's, and the time per step <= 1.02x, taken two ways:
   the call alone until it returns, the device idle (dispatch; on the CPU a
   program this small runs before the call returns, so this includes the run),
   and back-to-back steps with one wait at the end; then ``nnx.jit`` forward at
   depth 4, 16, 64, 256 (<= 1.05x pure ``jax.jit``).

Equinox is the fourth column where it fits (the bench extra installs it): the nnx
rows' MLP as an ``eqx.Module`` (``eqx.nn.Linear`` layers called as
``relu(x @ weight.T + bias)``, the same batched arithmetic; its own initialisers
and key splits), ``eqx.filter_jit`` for the jitted rows and
``eqx.filter_value_and_grad`` + optax for the step (its op count is not shown:
Equinox's compiled object gives no HLO text).

In-process rows alternate the libraries within each repeat (the first one rotating),
keep each repeat's ratio, and show min / median; fresh-process rows do the same over
interleaved children. ``python -m benchmarks.first_use`` prints the table alone.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from benchmarks import _first_use_models as M
from benchmarks._fork import forked
from benchmarks._timing import block, median_time
from benchmarks.nn_mlp import hlo_ops

DEPTH = 16  # rows 2, 3, 5 and the jitted steps
MANY = 64  # row 4's layers: 128 Variables
FORWARD_DEPTHS = (4, 16, 64, 256)
NNX_BATCH, NN_BATCH = 8, 32  # nnx_mlp's and nn_mlp's batches
LIBS = ("lens", "flax", "equinox", "pure jax")


def _equinox() -> Any:
    """Equinox, the fourth column, when installed (the bench extra has it)."""
    try:
        import equinox
    except ImportError:
        return None
    return equinox


# Each item runs in a child forked from an interpreter that imported jax and the
# models' module (which imports neither lens nor flax): a fresh ``python -c``.
FRESH_JOB = r"""
import gc
import time
import jax
from benchmarks import _first_use_models as M


def job(item):
    api, lib, warm = item
    t0 = time.perf_counter()
    if warm:
        jax.block_until_ready(M.first_pure(api))  # JAX's own first use
        # The collector's debt from importing JAX (a full collection of its
        # objects, ~40-50 ms here) is paid now: else whichever cell allocates
        # next pays it, the library's as much as any.
        gc.collect()
    t1 = time.perf_counter()
    if warm:
        jax.block_until_ready(M.first_pure(api))  # the same arithmetic, JAX warm
    t2 = time.perf_counter()
    jax.block_until_ready(M.first_model(api, lib))  # import, build, init, call
    t3 = time.perf_counter()
    return {"jax first": t1 - t0, "pure jax": t2 - t1, "library": t3 - t2}
"""


def _row(
    metric: str,
    unit: str,
    samples: dict[str, list[float]],
    num: str = "lens",
    den: str | None = "pure jax",
    target: float | None = None,
    verdict: str | None = None,
    target_text: str | None = None,
) -> dict:
    """A table row: each library's samples, each repeat's num / den ratio, and the
    target (``verdict``, when given, replaces the met / MISSED check)."""
    ratios = None
    if den is not None and num in samples and den in samples:
        ratios = [a / b for a, b in zip(samples[num], samples[den], strict=True)]
    return {
        "metric": metric,
        "unit": unit,
        "samples": samples,
        "num": num,
        "den": den,
        "ratios": ratios,
        "target": target,
        "verdict": verdict,
        "target_text": target_text,
    }


def _per_call(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call of ``number`` back-to-back calls, one wait at the end."""
    return median_time(fn, 1, 0, number)


def _dispatch(fn: Callable[[], Any], number: int) -> float:
    """Seconds the call itself takes (until it returns), the device idle at each
    call: ``number`` calls, each waited for outside the time taken."""
    total = 0.0
    for _ in range(number):
        t0 = time.perf_counter()
        out = fn()
        total += time.perf_counter() - t0
        block(out)
    return total / number


def _interleaved(
    fns: dict[str, Callable[[], Any]],
    repeats: int,
    number: int | dict[str, int],
    scale: float = 1e3,
    sampler: Callable[[Callable[[], Any], int], float] = _per_call,
) -> dict[str, list[float]]:
    """Seconds per call (times ``scale``) of each function: ``repeats`` samples of
    ``number`` calls (``sampler``'s), the functions alternating, the first one
    rotating; ``number`` may differ per function (a peer 30x slower takes fewer)."""
    for fn in fns.values():  # warm: first-call compiles are not these rows'
        block(fn())
    keys = list(fns)
    samples: dict[str, list[float]] = {k: [] for k in keys}
    for r in range(repeats):
        i = r % len(keys)
        for k in keys[i:] + keys[:i]:
            n = number[k] if isinstance(number, dict) else number
            samples[k].append(sampler(fns[k], n) * scale)
    return samples


# -- 1. time to a first model, fresh processes


def fresh_rows(repeats: int = 5) -> list[dict]:
    """Row 1: what each library adds over pure JAX to a first model (ms)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    )
    # A user's lens is installed with its bytecode (pip; `make install` runs
    # compileall), as flax is. A checkout run with PYTHONDONTWRITEBYTECODE (as a
    # lent GPU machine's copy was) has none, and every fresh child would compile
    # the lens modules a first model loads from source: ~100 ms of the cell.
    compileall.compile_dir(os.path.join(root, "lens"), quiet=1)
    eqx_libs = ("equinox",) if _equinox() is not None else ()
    plan = [
        (api, lib, warm)
        for r in range(repeats)
        for warm in (True, False)
        for api in ("nn", "nnx")
        for lib in (
            (("lens", "flax") if r % 2 else ("flax", "lens"))
            + (eqx_libs if api == "nnx" else ())
        )
    ]
    got: dict[tuple[str, str, bool], list[dict]] = {}
    for item, out in zip(plan, forked(FRESH_JOB, plan, env), strict=True):
        got.setdefault(item, []).append(out)
    rows = []
    ms = 1e3
    for api, what in (
        ("nn", "Linen (lens.nn / flax.linen)"),
        ("nnx", "nnx (lens.nnx / flax.nnx)"),
    ):
        libs = [lib for lib in ("lens", "flax", "equinox") if (api, lib, True) in got]
        warm = {lib: got[(api, lib, True)] for lib in libs}
        both = warm["lens"] + warm["flax"]
        added = {
            lib: [(o["library"] - o["pure jax"]) * ms for o in outs]
            for lib, outs in warm.items()
        }
        rows.append(
            _row(
                f"1. first model, {what}: import + build + init + first call, "
                f"added over pure JAX (fresh process, depth {M.FIRST_DEPTH})",
                "ms",
                {**added, "pure jax": [o["pure jax"] * ms for o in both]},
                den="flax",
                target=0.3,
            )
        )
        rows.append(
            _row(
                "1. the same cell, whole (pure jax column: JAX's own first use of "
                "the arithmetic, excluded above)",
                "ms",
                {
                    **{
                        lib: [o["library"] * ms for o in outs]
                        for lib, outs in warm.items()
                    },
                    "pure jax": [o["jax first"] * ms for o in both],
                },
                den="flax",
                verdict="informational",
            )
        )
        rows.append(
            _row(
                "1. the same cell, whole, where JAX ran nothing before (its first "
                "use counted for both)",
                "ms",
                {
                    lib: [
                        got[(api, lib, False)][i]["library"] * ms
                        for i in range(repeats)
                    ]
                    for lib in libs
                },
                den="flax",
                verdict="informational",
            )
        )
    return rows


# -- 2-5. eager rows


def _none(_: Any) -> None:
    return None


def eager_rows(repeats: int = 15) -> list[dict]:
    """Rows 2-5: eager nnx build and forward, per-Variable graph ops, Linen."""
    import flax.linen as fnn
    from flax import nnx as fnnx

    import lens.nn as lnn
    from lens import nnx as lnnx

    M.check_same_numbers(fnn, fnnx)
    nnxs = {"lens": lnnx, "flax": fnnx}
    rows = []

    # 2. build
    classes = {lib: M.nnx_mlp(nnx, DEPTH) for lib, nnx in nnxs.items()}
    fns: dict[str, Callable[[], Any]] = {
        lib: (lambda c=classes[lib], nnx=nnx: M.nnx_arrays(c(nnx.Rngs(0))))
        for lib, nnx in nnxs.items()
    }
    fns["pure jax"] = lambda: M.nnx_params(DEPTH)
    fns["device counter"] = lambda: M.nnx_params(DEPTH, device_count=True)
    eqx = _equinox()
    if eqx is not None:
        eqx_cls = M.eqx_mlp(eqx, DEPTH)
        fns["equinox"] = lambda: jax.tree.leaves(eqx_cls(jax.random.key(0)))
    s = _interleaved(fns, repeats, 3)
    rows.append(
        _row(
            f"2. eager nnx build, {DEPTH}-layer MLP, nnx.Rngs(0)",
            "ms",
            s,
            target=1.5,
        )
    )
    rows.append(
        _row(
            "2. the same; pure jax column: pure JAX with nnx's counter on the "
            "device (a count + 1 per key)",
            "ms",
            {
                **{k: v for k, v in s.items() if k in ("lens", "flax", "equinox")},
                "pure jax": s["device counter"],
            },
            verdict="informational",
        )
    )

    # 3. forward
    x = jnp.ones((NNX_BATCH, M.WIDTH))
    models = {lib: classes[lib](nnx.Rngs(0)) for lib, nnx in nnxs.items()}
    params = M.nnx_params(DEPTH)
    fns = {lib: (lambda m=m: m(x)) for lib, m in models.items()}
    fns["pure jax"] = lambda: M.pure_forward(params, x)
    if eqx is not None:
        fns["equinox"] = lambda m=eqx_cls(jax.random.key(0)): m(x)
    rows.append(
        _row(
            f"3. eager nnx forward, depth {DEPTH}, batch {NNX_BATCH} (un-jitted)",
            "ms",
            _interleaved(fns, repeats, 10),
            target=1.05,
        )
    )

    # 4. per-Variable graph ops
    many = {lib: M.nnx_mlp(nnx, MANY)(nnx.Rngs(0)) for lib, nnx in nnxs.items()}
    count = {lib: len(jax.tree.leaves(nnxs[lib].state(m))) for lib, m in many.items()}
    assert count["lens"] == count["flax"] == 2 * MANY, count
    per_op: dict[str, dict[str, Callable[[], Any]]] = {}
    for lib, nnx in nnxs.items():
        m = many[lib]
        graphdef, state = nnx.split(m)
        # each returns None: nothing to wait for, and nothing for block() to walk
        per_op.setdefault("split", {})[lib] = lambda nnx=nnx, m=m: _none(nnx.split(m))
        per_op.setdefault("merge", {})[lib] = lambda nnx=nnx, g=graphdef, s=state: (
            _none(nnx.merge(g, s))
        )
        per_op.setdefault("state", {})[lib] = lambda nnx=nnx, m=m: _none(nnx.state(m))
        per_op.setdefault("update", {})[lib] = lambda nnx=nnx, m=m, s=state: _none(
            nnx.update(m, s)
        )
    flat = {(op, lib): f for op, d in per_op.items() for lib, f in d.items()}
    s4 = _interleaved(
        {f"{op}|{lib}": f for (op, lib), f in flat.items()},
        repeats,
        5,
        scale=1e6 / (2 * MANY),
    )
    for op in per_op:
        rows.append(
            _row(
                f"4. nnx.{op}, {MANY}-layer MLP ({2 * MANY} Variables)",
                "us / Variable",
                {lib: s4[f"{op}|{lib}"] for lib in nnxs},
                den="flax",
                verdict="stated",
            )
        )

    # 5. Linen init and apply
    xb = jnp.ones((NN_BATCH, M.WIDTH))
    key = jax.random.key(0)
    nn_models = {
        lib: M.linen_mlp(nn, DEPTH, head=1)
        for lib, nn in (("lens", lnn), ("flax", fnn))
    }
    variables = {lib: m.init(key, xb) for lib, m in nn_models.items()}
    pure_vars = M.linen_init(key, xb, DEPTH, head=1)
    inits: dict[str, Callable[[], Any]] = {
        lib: (lambda m=m: m.init(key, xb)) for lib, m in nn_models.items()
    }
    inits["pure jax"] = lambda: M.linen_init(key, xb, DEPTH, head=1)
    applies: dict[str, Callable[[], Any]] = {
        lib: (lambda m=m, v=variables[lib]: m.apply(v, xb))
        for lib, m in nn_models.items()
    }
    applies["pure jax"] = lambda: M.linen_apply(pure_vars, xb, head=True)
    for phase, f, target in (("init", inits, 1.5), ("apply", applies, 1.05)):
        rows.append(
            _row(
                f"5. Linen eager {phase}, depth {DEPTH} + Dense(1) head, batch "
                f"{NN_BATCH}",
                "ms",
                _interleaved(f, repeats, 3),
                target=target,
            )
        )
    return rows


# -- 6. steady jitted steps


def _ops(step: Any, *args: Any) -> list[str]:
    """The optimised program's op names, bitcasts (free) left out."""
    return [op for op in hlo_ops(step, *args) if op != "bitcast"]


def _op_row(metric: str, ops: dict[str, list[str]]) -> dict:
    same = ops["lens"] == ops["pure jax"]
    n = {lib: [float(len(o))] for lib, o in ops.items()}
    met = n["lens"] == n["pure jax"]
    return _row(
        metric,
        "ops",
        n,
        target_text="same op count as pure jax",
        verdict=f"same count: {'met' if met else 'MISSED'} (same ops: "
        f"{'yes' if same else 'no'})",
    )


def _linen_steps(x: Any, y: Any) -> tuple[dict, dict]:
    """The jitted Linen TrainState steps (lens, flax) and pure JAX's, each as a
    call that carries its state, and the op names of each compiled step."""
    import flax.linen as fnn
    from flax.training import train_state as flax_ts

    import lens.nn as lnn
    from lens.training import train_state as lens_ts

    tx = optax.adam(1e-3)
    calls, ops = {}, {}
    for lib, nn, ts in (("lens", lnn, lens_ts), ("flax", fnn, flax_ts)):
        model = M.linen_mlp(nn, DEPTH, head=1)
        params = model.init(jax.random.key(0), x)["params"]
        state = ts.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

        @jax.jit
        def step(state: Any, x: Any, y: Any) -> Any:
            def loss(p: Any) -> Any:
                return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)

            value, g = jax.value_and_grad(loss)(state.params)
            return state.apply_gradients(grads=g), value

        box = [step(state, x, y)[0]]

        def call(step: Any = step, box: list = box) -> Any:
            box[0], value = step(box[0], x, y)
            return value

        calls[lib] = call
        ops[lib] = _ops(step, box[0], x, y)

    params = M.linen_init(jax.random.key(0), x, DEPTH, head=1)["params"]

    @jax.jit
    def pure(params: Any, opt_state: Any, count: Any, x: Any, y: Any) -> Any:
        def loss(p: Any) -> Any:
            return jnp.mean((M.linen_apply({"params": p}, x, head=True) - y) ** 2)

        value, g = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, count + 1, value

    box = list(pure(params, tx.init(params), 0, x, y)[:3])

    def pure_call() -> Any:
        out = pure(*box, x, y)
        box[:] = out[:3]
        return out[3]

    calls["pure jax"] = pure_call
    ops["pure jax"] = _ops(pure, *box, x, y)
    return calls, ops


def _nnx_steps(x: Any) -> tuple[dict, dict]:
    """The same for an ``nnx.Optimizer`` Adam step under ``nnx.jit``."""
    from flax import nnx as fnnx

    from lens import nnx as lnnx

    calls, ops = {}, {}
    for lib, nnx in (("lens", lnnx), ("flax", fnnx)):
        model = M.nnx_mlp(nnx, DEPTH)(nnx.Rngs(0))
        opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

        @nnx.jit
        def step(model: Any, opt: Any, x: Any, nnx: Any = nnx) -> Any:
            loss, g = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
            opt.update(model, g)
            return loss

        calls[lib] = lambda s=step, m=model, o=opt: s(m, o, x)
        ops[lib] = _ops(step, model, opt, x)

    eqx = _equinox()
    if eqx is not None:
        model = M.eqx_mlp(eqx, DEPTH)(jax.random.key(0))
        etx = optax.adam(1e-3)
        ebox = [model, etx.init(eqx.filter(model, eqx.is_array))]

        @eqx.filter_jit
        def eqx_step(model: Any, opt_state: Any, x: Any) -> Any:
            loss, g = eqx.filter_value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
            updates, opt_state = etx.update(g, opt_state, model)
            return eqx.apply_updates(model, updates), opt_state, loss

        def eqx_call() -> Any:
            ebox[0], ebox[1], loss = eqx_step(ebox[0], ebox[1], x)
            return loss

        calls["equinox"] = eqx_call

    tx = optax.adam(1e-3)
    params = M.nnx_params(DEPTH)

    @jax.jit
    def pure(params: Any, opt_state: Any, count: Any, x: Any) -> Any:
        loss, g = jax.value_and_grad(lambda p: jnp.mean(M.pure_forward(p, x) ** 2))(
            params
        )
        updates, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, count + 1, loss

    box = [params, tx.init(params), jnp.zeros((), jnp.uint32)]

    def pure_call() -> Any:
        out = pure(*box, x)
        box[:] = out[:3]
        return out[3]

    calls["pure jax"] = pure_call
    ops["pure jax"] = _ops(pure, *box, x)
    return calls, ops


def jitted_rows(
    repeats: int = 31, forward_depths: tuple[int, ...] = FORWARD_DEPTHS
) -> list[dict]:
    """Row 6: op counts and time per step of the jitted steps; jitted forwards."""
    from flax import nnx as fnnx

    from lens import nnx as lnnx

    rows = []
    xb, y = jnp.ones((NN_BATCH, M.WIDTH)), jnp.ones((NN_BATCH, 1))
    x = jnp.ones((NNX_BATCH, M.WIDTH))
    for what, (calls, ops) in (
        (f"Linen TrainState Adam step, depth {DEPTH}", _linen_steps(xb, y)),
        (f"nnx.Optimizer Adam step (nnx.jit), depth {DEPTH}", _nnx_steps(x)),
    ):
        # flax.nnx's jit is ~2 ms a call: fewer of its calls make a sample
        number = {lib: 5 if "nnx" in what and lib == "flax" else 50 for lib in calls}
        rows.append(_op_row(f"6. {what}: optimised HLO ops", ops))
        rows.append(
            _row(
                f"6. {what}: dispatch (the call until it returns, device idle)",
                "us",
                _interleaved(calls, repeats, number, 1e6, _dispatch),
                target=1.02,
            )
        )
        rows.append(
            _row(
                f"6. {what}: time per step, back to back (dispatch + run)",
                "us",
                _interleaved(calls, repeats, number, 1e6),
                target=1.02,
            )
        )
    for depth in forward_depths:
        fns: dict[str, Callable[[], Any]] = {}
        for lib, nnx in (("lens", lnnx), ("flax", fnnx)):
            model = M.nnx_mlp(nnx, depth)(nnx.Rngs(0))
            forward = nnx.jit(lambda m, x: m(x))
            fns[lib] = lambda f=forward, m=model: f(m, x)
        params = M.nnx_params(depth)
        pure = jax.jit(M.pure_forward)
        fns["pure jax"] = lambda f=pure, p=params: f(p, x)
        eqx = _equinox()
        if eqx is not None:
            efwd = eqx.filter_jit(lambda m, x: m(x))
            em = M.eqx_mlp(eqx, depth)(jax.random.key(0))
            fns["equinox"] = lambda f=efwd, m=em: f(m, x)
        n = max(10, 2000 // depth)
        rows.append(
            _row(
                f"6. nnx.jit forward, depth {depth}, batch {NNX_BATCH}",
                "us",
                _interleaved(
                    fns,
                    repeats,
                    {**dict.fromkeys(fns, n), "flax": max(2, n // 30)},
                    1e6,
                ),
                target=1.05,
            )
        )
    return rows


def run(
    quick: bool = False,
    fresh_repeats: int = 5,
    repeats: int = 15,
    step_repeats: int = 31,
    forward_depths: tuple[int, ...] = FORWARD_DEPTHS,
) -> list[dict]:
    """Every row of issue 44's table (``quick``: one small run of each)."""
    if quick:
        fresh_repeats, repeats, step_repeats, forward_depths = 1, 2, 2, (4,)
    timings = {}
    t0 = time.perf_counter()
    rows = fresh_rows(fresh_repeats)
    timings["fresh"] = time.perf_counter() - t0
    rows += eager_rows(repeats)
    timings["eager"] = time.perf_counter() - t0 - sum(timings.values())
    rows += jitted_rows(step_repeats, forward_depths)
    timings["jitted"] = time.perf_counter() - t0 - sum(timings.values())
    print(
        "first_use: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f" (total {time.perf_counter() - t0:.0f} s)",
        file=sys.stderr,
    )
    return rows


def _fmt(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}" if v < 1 else f"{v:.2f}"


def _cell(samples: list[float] | None) -> str:
    if not samples:
        return ""
    if len(samples) == 1:
        return _fmt(samples[0])
    return f"{_fmt(min(samples))} / {_fmt(statistics.median(samples))}"


def lines(rows: list[dict]) -> list[str]:
    """The markdown section: a row per metric, min / median of each library's
    samples and of the per-repeat ratio, the target and the verdict."""
    return [
        "",
        "## Issue 44's table",
        "",
        "First use and eager use (benchmarks/first_use.py). Cells are min / median "
        "over interleaved repeats; the ratio is the target's (lens over the named "
        "reference), min / median of each repeat's ratio. Equinox (when installed) "
        "runs the nnx rows' model as an `eqx.Module` with the same batched "
        "arithmetic (`relu(x @ weight.T + bias)`), its own initialisers and key "
        "splits, jitted with `eqx.filter_jit`.",
        "",
        *row_lines(rows),
    ]


def row_lines(rows: list[dict]) -> list[str]:
    """The markdown table of ``_row`` rows (benchmarks/flax_repo.py's too)."""
    out = [
        "| metric | unit | lens | flax | equinox | pure jax | ratio (min / median) "
        "| target | verdict |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        ratios = r["ratios"]
        ratio = statistics.median(ratios) if ratios else None
        spread = ""
        if ratios:
            spread = (
                f"{ratio:.2f}"
                if len(ratios) == 1
                else f"{min(ratios):.2f} / {ratio:.2f}"
            )
        target = r["target_text"] or ""
        if (
            not target
            and r["den"] is not None
            and (r["target"] is not None or r["verdict"])
        ):
            target = f"{r['num']}/{r['den']}"
            if r["target"] is not None:
                target += f" <= {r['target']}"
        verdict = r["verdict"]
        if verdict is None and r["target"] is not None and ratio is not None:
            verdict = "met" if ratio <= r["target"] else "MISSED"
        out.append(
            f"| {r['metric']} | {r['unit']} | "
            + " | ".join(_cell(r["samples"].get(lib)) for lib in LIBS)
            + f" | {spread} | {target} | {verdict or ''} |"
        )
    return out


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    args = parser.parse_args(argv)
    text = "\n".join(lines(run(quick=args.quick)))
    print(text)
    return text


if __name__ == "__main__":
    main()
