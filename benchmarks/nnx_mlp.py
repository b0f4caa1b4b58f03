"""lens.nnx against flax.nnx and pure ``jax.jit``: a jitted forward and Adam step.

An MLP of ``depth`` Linear(64) layers in an ``nnx.List``, x of shape (8, 64). The
jitted calls take the eager objects and leave their updates visible on them (the
optimizer's state and the parameters after a step); pure JAX gets the same arrays
as a list of (kernel, bias). Libraries alternate within each repeat; each repeat's
ratio to pure JAX is kept on the row (``ratios``: the table shows min and median).
"""

from __future__ import annotations

import statistics
from typing import Any

import jax
import jax.numpy as jnp
import optax

from benchmarks._timing import median_time

DEPTHS = (16, 64)


def _model(nnx: Any, depth: int) -> Any:
    class MLP(nnx.Module):
        def __init__(self, rngs: Any):
            self.layers = nnx.List(
                [nnx.Linear(64, 64, rngs=rngs) for _ in range(depth)]
            )

        def __call__(self, x: Any) -> Any:
            for layer in self.layers:
                x = jax.nn.relu(layer(x))
            return x

    return MLP(nnx.Rngs(0))


def _nnx_calls(nnx: Any, depth: int, x: Any) -> tuple[Any, Any]:
    model = _model(nnx, depth)
    opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    forward = nnx.jit(lambda m, x: m(x))

    @nnx.jit
    def step(model: Any, opt: Any, x: Any) -> Any:
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        opt.update(model, grads)
        return loss

    return (lambda: forward(model, x)), (lambda: step(model, opt, x))


def _pure_calls(depth: int, x: Any) -> tuple[Any, Any]:
    keys = jax.random.split(jax.random.key(0), depth)
    params = [(jax.random.normal(k, (64, 64)) * 0.1, jnp.zeros(64)) for k in keys]

    @jax.jit
    def forward(params: Any, x: Any) -> Any:
        for kernel, bias in params:
            x = jax.nn.relu(x @ kernel + bias)
        return x

    tx = optax.adam(1e-3)
    state = [params, tx.init(params)]

    @jax.jit
    def step(params: Any, opt: Any, x: Any) -> Any:
        loss, g = jax.value_and_grad(lambda p: jnp.mean(forward(p, x) ** 2))(params)
        updates, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, updates), opt, loss

    def train() -> Any:
        state[0], state[1], loss = step(state[0], state[1], x)
        return loss

    return (lambda: forward(state[0], x)), train


def run(
    repeats: int = 5, depths: tuple[int, ...] = DEPTHS, number: int = 50
) -> list[dict]:
    """Rows ``{bench, library, seconds}`` for the jitted forward and train step."""
    from flax import nnx as flax_nnx

    from lens import nnx as lens_nnx

    rows = []
    x = jnp.ones((8, 64))
    for depth in depths:
        calls = {
            "lens": _nnx_calls(lens_nnx, depth, x),
            "flax": _nnx_calls(flax_nnx, depth, x),
            "pure jax": _pure_calls(depth, x),
        }
        for i, what in enumerate(("jitted forward", "jitted train step")):
            samples: dict[str, list[float]] = {lib: [] for lib in calls}
            for _ in range(repeats):
                for lib, fns in calls.items():
                    samples[lib].append(median_time(fns[i], repeats=3, number=number))
            pure = samples["pure jax"]
            for lib, ts in samples.items():
                rows.append(
                    {
                        "bench": f"lens.nnx MLP depth {depth}: {what}",
                        "library": lib,
                        "seconds": statistics.median(ts),
                        "ratios": [a / b for a, b in zip(ts, pure)],
                    }
                )
    return rows
