"""Seeded retrace causes: small training loops, each ending in one retrace.

Each case runs a loop whose last call traces its jitted function again, for one
known cause, under ``jax.jit``, Linen's ``nn.jit`` or ``nnx.jit``. The tests
(tests/instruments/test_recompiles.py) check that lens.recompiles names the
cause and, for Module state, the path; the benchmark
(benchmarks/recompiles.py) runs the same cases under JAX's own
``jax_explain_cache_misses`` and reports what fraction of them it explains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lens import nn, nnx
from lens.training import train_state


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    jit: str  # "jax.jit", "nn.jit" or "nnx.jit"
    cause: str  # the Change.cause (or "new function") lens must give
    path: str | None  # the path the first change must name (None: a new function)
    run: Callable[[], None]
    # words JAX's jax_explain_cache_misses message must hold to count as
    # explaining the case (the argument's path as JAX writes it)
    jax_words: tuple[str, ...] = ()


CASES: list[Case] = []


def case(name: str, jit: str, cause: str, path: str | None, *jax_words: str):
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        CASES.append(Case(name, jit, cause, path, fn, tuple(jax_words)))
        return fn

    return register


# -- models


class MLP(nn.Module):
    features: int = 8

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.features)(x))
        return nn.Dense(1)(x)


class JitMLP(nn.Module):
    features: int = 8

    @nn.jit
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.features)(x))
        return nn.Dense(1)(x)


class JitBN(nn.Module):
    @nn.jit
    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.Dense(4)(x)
        return nn.BatchNorm(use_running_average=not train)(x)


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, width: int = 8):
        self.linear = nnx.Linear(4, width, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.out = nnx.Linear(width, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(self.dropout(nnx.relu(self.linear(x))))


def batches(*sizes: int, dtype=jnp.float32):
    for i, n in enumerate(sizes):
        x = jax.random.normal(jax.random.key(i), (n, 4), dtype)
        yield x, jnp.sum(x, axis=1, keepdims=True)


def linen_state(features: int = 8) -> train_state.TrainState:
    model = MLP(features)
    params = model.init(jax.random.key(0), jnp.ones((1, 4)))["params"]
    return train_state.TrainState.create(
        apply_fn=model.apply, params=params, tx=optax.sgd(0.1)
    )


def _loss(params, apply_fn, x, y):
    return jnp.mean((apply_fn({"params": params}, x) - y) ** 2)


@jax.jit
def train_step(state, batch):
    x, y = batch
    grads = jax.grad(_loss)(state.params, state.apply_fn, x, y)
    return state.apply_gradients(grads=grads)


# -- jax.jit


@case("last batch smaller", "jax.jit", "shape", "batch[0]", "batch", "f32[5,4]")
def _():
    state = linen_state()
    for batch in batches(8, 8, 5):
        state = train_step(state, batch)


@case("batch dtype", "jax.jit", "dtype", "batch[0]", "batch", "bf16[8,4]")
def _():
    state = linen_state()
    for batch in [*batches(8, 8), *batches(8, dtype=jnp.bfloat16)]:
        state = train_step(state, batch)


@case("Python float then array", "jax.jit", "weak type", "lr", "lr", "weak_type")
def _():
    @jax.jit
    def step(params, x, lr):
        return jax.tree.map(lambda p: p - lr * jnp.mean(x), params)

    params = {"w": jnp.ones(3)}
    for lr in (0.1, 0.05, jnp.float32(0.01)):
        params = step(params, jnp.ones(3), lr)


@case("batch sharded over a mesh", "jax.jit", "sharding", "batch", "batch")
def _():
    @jax.jit
    def normalize(batch):
        return (batch - jnp.mean(batch)) / (jnp.std(batch) + 1e-6)

    mesh = jax.make_mesh((len(jax.devices()),), ("data",))
    x = jnp.ones((8, 4))
    for placed in (False, False, True):
        if placed:
            x = jax.device_put(x, NamedSharding(mesh, P("data")))
        normalize(x)


@case("a dict batch gains a key", "jax.jit", "new", "batch/mask", "mask")
def _():
    @jax.jit
    def step(w, batch):
        out = batch["x"] * w
        if "mask" in batch:
            out = out * batch["mask"]
        return w - 0.1 * jnp.mean(out)

    w = jnp.float32(1.0)
    for extra in (False, False, True):
        batch = {"x": jnp.ones(4)}
        if extra:
            batch["mask"] = jnp.ones(4)
        w = step(w, batch)


@case("a list grows", "jax.jit", "new", "xs[2]", "length 3")
def _():
    @jax.jit
    def total(xs):
        return sum(jnp.sum(x) for x in xs)

    xs = []
    for i in range(3):
        xs.append(jnp.ones(3) * i)
        total(xs)


@case(
    "an optional mask, None then an array", "jax.jit", "structure", "mask", "NoneType"
)
def _():
    @jax.jit
    def step(x, mask=None):
        return x if mask is None else x * mask

    for mask in (None, None, jnp.ones(3)):
        step(jnp.ones(3), mask)


@case("a static string", "jax.jit", "static value", "mode", "mode", "'eval'")
def _():
    @partial(jax.jit, static_argnames="mode")
    def step(x, mode):
        return x * 2 if mode == "train" else x

    for mode in ("train", "train", "eval"):
        step(jnp.ones(3), mode=mode)


@case(
    "jit of a lambda in the loop",
    "jax.jit",
    "new function",
    None,
    "never seen",
    "same line",
)
def _():
    x = jnp.ones(3)
    for _ in range(3):
        x = jax.jit(lambda v: v * 0.5)(x)


@case(
    "jit of a bound method", "jax.jit", "new function", None, "never seen", "same line"
)
def _():
    class Scaler:
        def scale(self, x):
            return x * 0.5

    s = Scaler()
    x = jnp.ones(3)
    for _ in range(3):
        x = jax.jit(s.scale)(x)


@case(
    "a TrainState of another model",
    "jax.jit",
    "static value",
    "state.apply_fn",
    "features = 16",
)
def _():
    for features in (8, 8, 16):
        state = linen_state(features)
        state = train_step(state, next(batches(8)))


@case(
    "a Linen module's field",
    "jax.jit",
    "static value",
    "model.features",
    "features = 16",
)
def _():
    @partial(jax.jit, static_argnums=0)
    def forward(model, params, x):
        return model.apply({"params": params}, x)

    x = jnp.ones((2, 4))
    for features in (8, 8, 16):
        model = MLP(features)
        params = model.init(jax.random.key(0), x)["params"]
        forward(model, params, x)


class Memory(nnx.Module):
    """A model with a memory that grows (a cache, a replay buffer)."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.memory = nnx.Variable(jnp.zeros((2, 4)))

    def __call__(self, x):
        return self.linear(x) + jnp.mean(self.memory.value, axis=0)

    def remember(self, x):
        self.memory.value = jnp.concatenate([self.memory.value, x])


@case(
    "an nnx model's variable shape",
    "jax.jit",
    "shape",
    "model/memory",
    "memory",
    "f32[4,4]",
)
def _():
    @jax.jit
    def forward(model, x):
        return model(x)

    model = Memory(nnx.Rngs(0))
    x = jnp.ones((2, 4))
    forward(model, x)
    forward(model, x)
    model.remember(x)
    forward(model, x)


@case(
    "matmul precision",
    "jax.jit",
    "jax context",
    "JAX's default_matmul_precision",
    "default_matmul_precision",
)
def _():
    state = linen_state()
    batch = next(batches(8))
    state = train_step(state, batch)
    state = train_step(state, batch)
    with jax.default_matmul_precision("highest"):
        state = train_step(state, batch)


# -- nn.jit (Linen)


@case("nn.jit: last batch smaller", "nn.jit", "shape", "x", "f32[5,4]")
def _():
    model = JitMLP()
    v = model.init(jax.random.key(0), jnp.ones((1, 4)))
    for x, _ in batches(8, 8, 5):
        model.apply(v, x)


@case("nn.jit: a module field", "nn.jit", "static value", "self.features", "features")
def _():
    x = jnp.ones((2, 4))
    for features in (8, 8, 16):
        model = JitMLP(features)
        v = model.init(jax.random.key(0), x)
        model.apply(v, x)


@case("nn.jit: init then apply", "nn.jit", "init vs apply", "self")
def _():
    model = JitMLP()
    v = model.init(jax.random.key(0), jnp.ones((2, 4)))
    model.apply(v, jnp.ones((2, 4)))


@case(
    "nn.jit: params dtype",
    "nn.jit",
    "dtype",
    "params/Dense_0/kernel",
    "kernel",
    "bf16[4,8]",
)
def _():
    model = JitMLP()
    x = jnp.ones((2, 4))
    v = model.init(jax.random.key(0), x)
    model.apply(v, x)
    model.apply(v, x)
    half = jax.tree.map(lambda a: a.astype(jnp.bfloat16), v)
    model.apply(half, x)


@case("nn.jit: a static keyword", "nn.jit", "static value", "train", "train")
def _():
    model = JitBN()
    x = jnp.ones((4, 4))
    v = model.init(jax.random.key(0), x)
    model.apply(v, x, train=True, mutable=["batch_stats"])
    model.apply(v, x, train=True, mutable=["batch_stats"])
    model.apply(v, x, train=False)


# -- nnx.jit


@nnx.jit
def nnx_train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def nnx_setup():
    model = Block(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


@case("nnx.jit: last batch smaller", "nnx.jit", "shape", "x", "f32[5,4]")
def _():
    model, optimizer = nnx_setup()
    for x, y in batches(8, 8, 5):
        nnx_train_step(model, optimizer, x, y)


@case(
    "nnx.jit: train then eval",
    "nnx.jit",
    "static value",
    "model/dropout/deterministic",
    "deterministic",
)
def _():
    @nnx.jit
    def forward(model, x):
        return model(x)

    model, optimizer = nnx_setup()
    for x, y in batches(8, 8):
        nnx_train_step(model, optimizer, x, y)
        forward(model, x)
    model.eval()
    forward(model, x)


@case("nnx.jit: a new submodule", "nnx.jit", "new", "model/extra", "extra")
def _():
    model, optimizer = nnx_setup()
    for i, (x, y) in enumerate(batches(8, 8, 8)):
        if i == 2:
            model.extra = nnx.Linear(1, 1, rngs=nnx.Rngs(3))
        nnx_train_step(model, optimizer, x, y)


@case(
    "nnx.jit: a hyperparameter", "nnx.jit", "static value", "model/dropout/rate", "rate"
)
def _():
    model, optimizer = nnx_setup()
    for i, (x, y) in enumerate(batches(8, 8, 8)):
        model.dropout.rate = 0.1 if i < 2 else 0.2
        nnx_train_step(model, optimizer, x, y)


@case("nnx.jit: a variable's shape", "nnx.jit", "shape", "model/memory", "f32[4,4]")
def _():
    @nnx.jit
    def forward(model, x):
        return model(x)

    model = Memory(nnx.Rngs(0))
    x = jnp.ones((2, 4))
    forward(model, x)
    forward(model, x)
    model.remember(x)
    forward(model, x)


@case(
    "nnx.jit: a variable's dtype",
    "nnx.jit",
    "dtype",
    "model/linear/kernel",
    "kernel",
    "bf16[4,8]",
)
def _():
    @nnx.jit
    def forward(model, x):
        return model(x)

    model = Block(nnx.Rngs(0))
    x = jnp.ones((2, 4))
    forward(model, x)
    forward(model, x)
    model.linear.kernel.value = model.linear.kernel.value.astype(jnp.bfloat16)
    forward(model, x)


@case(
    "nnx.jit: built inside the loop",
    "nnx.jit",
    "new function",
    None,
    "never seen",
    "same line",
)
def _():
    model = Block(nnx.Rngs(0))
    for _ in range(3):
        nnx.jit(lambda m, x: m(x))(model, jnp.ones((2, 4)))


@case("nnx.jit: a static argument", "nnx.jit", "static value", "n", "val=2")
def _():
    @nnx.jit(static_argnames="n")
    def repeat(model, x, n):
        for _ in range(n):
            x = x + model(x)
        return x

    model = Block(nnx.Rngs(0))
    for n in (1, 1, 2):
        repeat(model, jnp.ones((2, 4)), n=n)


@case("nnx.jit: batch dtype", "nnx.jit", "dtype", "x", "bf16[8,4]")
def _():
    model, optimizer = nnx_setup()
    for x, y in [*batches(8, 8), *batches(8, dtype=jnp.bfloat16)]:
        nnx_train_step(model, optimizer, x, y.astype(jnp.float32))
