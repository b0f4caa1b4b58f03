"""The first jitted train step after a kernel restart, with lens's compilation cache.

Each measurement is a fresh Python process (as after a kernel restart) that builds an
MLP, jits an Adam train step and times its first call (trace, lower, compile or
load, run). ``cold``: no persistent cache. ``warm``: lens's cache
(:func:`lens.compilation_cache.enable_compilation_cache`) already holds the program.
``flax``: the same model in flax.linen, no cache (flax's default).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
import jax, jax.numpy as jnp, optax
lib, cache = sys.argv[1], sys.argv[2]
if cache != "-":
    from lens.compilation_cache import enable_compilation_cache
    enable_compilation_cache(cache)
if lib == "flax":
    from flax import linen as nn
else:
    from lens import nn
depth = int(sys.argv[3])
class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(depth):
            x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(1)(x)
model, x = MLP(), jnp.ones((8, 64))
params = model.init(jax.random.key(0), x)
tx = optax.adam(1e-3)
opt = tx.init(params)
@jax.jit
def step(params, opt, x):
    loss, g = jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), opt, loss
start = time.perf_counter()
jax.block_until_ready(step(params, opt, x))
print(time.perf_counter() - start)
"""


def _first_step(lib: str, cache: str | None, depth: int) -> float:
    env = dict(os.environ, JAX_PLATFORMS="cpu", LENS_COMPILATION_CACHE="1")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, lib, cache or "-", str(depth)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def run(repeats: int = 5, depth: int = 16) -> list[dict]:
    """Medians of ``repeats`` fresh processes per case (interleaved)."""
    times: dict[str, list[float]] = {"cold": [], "warm": [], "flax": []}
    with tempfile.TemporaryDirectory() as folder:
        _first_step("lens", folder, depth)  # fills the cache
        for _ in range(repeats):
            times["cold"].append(_first_step("lens", None, depth))
            times["warm"].append(_first_step("lens", folder, depth))
            times["flax"].append(_first_step("flax", None, depth))
    return [
        {"case": case, "depth": depth, "seconds": statistics.median(ts)}
        for case, ts in times.items()
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run():
        print(row)
