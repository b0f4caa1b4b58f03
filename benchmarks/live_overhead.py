"""What a live view costs a training loop (issue 30): a ~10 ms step, under 2%.

The same jitted MLP train step runs ``steps`` times with nothing watching it
("pure jax") and with a ``lens.display.live`` view ("lens") that logs the loss and
the learning rate every step and an eval loss every ``EVAL_EVERY`` steps (a sparse
series: drawn as points), samples per-layer RMS of params and grads, watches the
step's compile, and draws every frame's HTML (what a notebook is sent: charts with
ticks, legends and an SVG image of the lines, heatmaps with colour scales) on its
background thread. The batch is doubled until one step takes about 10 ms on this
machine. Both loops wait for the device only at the end; runs alternate, and the
medians of the per-step time are compared.
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import optax

from benchmarks._timing import block

BENCH = "live view on a ~10 ms jitted train step: cost per step"
WALL = "live view on a ~10 ms jitted train step: wall time per step"
TARGET_STEP = 0.010
WIDTH, DEPTH = 256, 4
EVAL_EVERY = 25


def _problem(batch: int):
    keys = jax.random.split(jax.random.key(0), DEPTH + 1)
    params = {
        f"layer_{i}": {
            "kernel": jax.random.normal(k, (WIDTH, WIDTH)) / WIDTH**0.5,
            "bias": jnp.zeros(WIDTH),
        }
        for i, k in enumerate(keys[:DEPTH])
    }
    x = jax.random.normal(keys[-1], (batch, WIDTH))
    tx = optax.adam(1e-3)

    def loss_fn(p):
        h = x
        for i in range(DEPTH):
            h = jnp.tanh(h @ p[f"layer_{i}"]["kernel"] + p[f"layer_{i}"]["bias"])
        return jnp.mean((h - 0.5) ** 2)

    @jax.jit
    def step(p, s):
        loss, g = jax.value_and_grad(loss_fn)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, loss, g

    return params, tx.init(params), step


def _loop(params, opt, step, steps: int, live=None) -> tuple[float, float]:
    """Seconds per step of ``steps`` steps (one device wait, at the end), and the
    CPU seconds the loop's thread spent in the view's calls (log, layers)."""
    inside = 0.0
    t0 = time.perf_counter()
    if live is not None:
        step = live.watch(step, "train_step")
    for i in range(steps):
        params, opt, loss, grads = step(params, opt)
        if live is not None:
            a = time.thread_time()  # CPU time: a wait for the device is no cost
            live.log(i, loss=loss, lr=1e-3)
            if i % EVAL_EVERY == EVAL_EVERY - 1:
                live.log(i, split="eval", loss=loss)
            live.layers(i, params, grads)
            inside += time.thread_time() - a
    block(params)
    return (time.perf_counter() - t0) / steps, inside


def _calibrate() -> int:
    batch = 32
    while batch < 1 << 14:
        params, opt, step = _problem(batch)
        block(step(params, opt))
        if statistics.median(_loop(params, opt, step, 10)[0] for _ in range(3)) >= (
            TARGET_STEP
        ):
            break
        batch *= 2
    return batch


def _watch_cost(live, calls: int = 20000) -> float:
    """Seconds a watched call adds to a plain one."""

    def f(x):
        return x

    w = live.watch(f, "f")
    t0 = time.perf_counter()
    for _ in range(calls):
        f(1)
    plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(calls):
        w(1)
    return max(time.perf_counter() - t0 - plain, 0.0) / calls


def _thread_cpu(thread) -> float:
    """CPU seconds a thread has used (Linux; 0 elsewhere)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError):
        return 0.0


def run(steps: int = 300, repeats: int = 5) -> list[dict]:
    """Rows (bench, library, seconds per step).

    The target row adds what the view costs per step to the plain step's time:
    the CPU time the loop's thread spends in log/layers/watch plus the drawer
    thread's CPU time, as if all of it were taken from the step (the worst case,
    a machine with no core to spare). The wall-time row times both loops as they ran (alternating);
    on a shared machine its noise is larger than the 2% asked for.
    """
    import lens
    from lens.display._live import Sink
    from lens.display._live._sinks import bundle

    class HtmlSink(Sink):
        """Draws every frame's MIME bundle (as a notebook would be sent) and drops it."""

        def update(self, frame):
            bundle(frame)

        def close(self, frame):
            bundle(frame)

    batch = _calibrate()
    params, opt, step = _problem(batch)
    block(step(params, opt))
    # warm-up: the first view in a process compiles its per-layer reduction once
    _loop(params, opt, step, 10, lens.display.live("warm-up", sink="none"))
    walls: dict[str, list[float]] = {"lens": [], "pure jax": []}
    costs = []
    for r in range(repeats):
        for name in ("lens", "pure jax") if r % 2 else ("pure jax", "lens"):
            if name == "pure jax":
                walls[name].append(_loop(params, opt, step, steps)[0])
                continue
            live = lens.display.live("bench", sink=HtmlSink())
            wall, inside = _loop(params, opt, step, steps, live)
            drawer = _thread_cpu(live._thread)
            live.close()
            walls[name].append(wall)
            costs.append((inside + drawer) / steps + _watch_cost(live, 2000))
    plain = statistics.median(walls["pure jax"])
    cost = statistics.median(costs)
    print(
        f"live_overhead: batch {batch}, step {plain * 1e3:.1f} ms, view "
        f"{cost * 1e6:.0f} us per step ({cost / plain:.2%})"
    )
    return [
        {"bench": BENCH, "library": "lens", "seconds": plain + cost},
        {"bench": BENCH, "library": "pure jax", "seconds": plain},
        *(
            {"bench": WALL, "library": name, "seconds": statistics.median(ts)}
            for name, ts in walls.items()
        ),
    ]
