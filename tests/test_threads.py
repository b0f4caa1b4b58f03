"""Models in several threads: each thread gets exactly its single-threaded results.

lens keeps every per-call context (Module call stacks, lens.nnx transform frames, pack
traces) in ``contextvars``, so threads never see each other's transforms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

import lens
from lens import nn, nnx

N_THREADS = 4


def _run_threads(fns: list[Callable[[], Any]]) -> list[Any]:
    results: list[Any] = [None] * len(fns)
    failures: list[BaseException] = []
    start = threading.Barrier(len(fns))

    def worker(i: int) -> None:
        try:
            start.wait()
            results[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    return results


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(3, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.l2 = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.bn(self.l1(x))))


def _nnx_training(seed: int, steps: int = 12) -> list[np.ndarray]:
    model = MLP(nnx.Rngs(seed))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3) * (seed + 1)
    y = jnp.sum(x, axis=1, keepdims=True)

    @nnx.jit
    def step(model, opt, x, y):
        def loss(m):
            return jnp.mean((m(x) - y) ** 2)

        value, grads = nnx.value_and_grad(loss)(model)
        opt.update(model, grads)
        return value

    losses = [np.asarray(step(model, opt, x, y)) for _ in range(steps)]
    return losses + [np.asarray(v) for v in jax.tree.leaves(nnx.state(model))]


def test_nnx_training_loops_in_threads_match_single_threaded():
    expected = [_nnx_training(seed) for seed in range(N_THREADS)]
    for _ in range(2):
        got = _run_threads(
            [lambda s=seed: _nnx_training(s) for seed in range(N_THREADS)]
        )
        for e, g in zip(expected, got):
            assert len(e) == len(g)
            for a, b in zip(e, g):
                np.testing.assert_array_equal(a, b)


def test_nnx_transform_in_one_thread_does_not_capture_another_threads_objects():
    # One thread keeps running nnx.vmap; another assigns to its own eager module.
    stop = threading.Event()

    def vmapping() -> int:
        n = 0
        shared = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        apply = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))
        while not stop.is_set() and n < 200:
            apply(shared, jnp.ones((3, 2)))
            n += 1
        return n

    def assigning() -> int:
        layer = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
        for i in range(2000):
            layer.bias.value = jnp.full((2,), float(i))
            layer.extra = nnx.Param(jnp.zeros(()))
        stop.set()
        np.testing.assert_array_equal(layer.bias.value, np.full((2,), 1999.0))
        return i

    n_vmaps, n_assigns = _run_threads([vmapping, assigning])
    assert n_vmaps > 0 and n_assigns == 1999


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(6)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        return nn.Dropout(0.3, deterministic=not train)(nn.relu(x))


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = True):
        scan = nn.scan(
            lambda m, c, _: (m(c, train), None),
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True, "dropout": True},
            length=3,
        )
        y, _ = scan(Block(), x, None)
        return y


def _linen_run(seed: int) -> list[np.ndarray]:
    model = nn.vmap(
        Stack,
        variable_axes={"params": 0, "batch_stats": 0},
        split_rngs={"params": True, "dropout": True},
        in_axes=None,
        axis_size=2,
    )()
    x = jnp.ones((4, 6)) * (seed + 1)
    keys = {"params": jax.random.key(seed), "dropout": jax.random.key(seed + 100)}
    variables = model.init(keys, x)
    y, updates = model.apply(variables, x, rngs=keys, mutable=["batch_stats"])
    leaves = jax.tree.leaves((variables, updates))
    return [np.asarray(y)] + [np.asarray(v) for v in leaves]


def test_linen_lifted_models_in_threads_match_single_threaded():
    seeds = range(2)  # each run traces and compiles a scan eagerly: seconds
    expected = [_linen_run(seed) for seed in seeds]
    got = _run_threads([lambda s=seed: _linen_run(s) for seed in seeds])
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        for a, b in zip(e, g):
            np.testing.assert_array_equal(a, b)


def _lifted(transform: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
    return lens.core.init(
        transform(
            lambda s, c, *x: (c * s.param("w", lambda k: jnp.ones(())), None),
            variable_axes={"params": 0},
            split_rngs={"params": True},
            **kw,
        )
    )


def test_a_pack_trace_records_only_its_own_threads_transforms():
    started = threading.Event()
    done = threading.Event()

    def traced() -> list[str]:
        with lens.trace() as t:
            started.set()
            for _ in range(20):
                _lifted(lens.core.lift.vmap)(jax.random.key(0), jnp.ones((3,)))
        done.set()
        return t.transforms()

    def untraced() -> int:
        started.wait()
        n = 0
        while not done.is_set():  # scans, while the other thread traces its vmaps
            _lifted(lens.core.lift.scan, length=2)(jax.random.key(0), jnp.ones(3))
            n += 1
        return n

    transforms, n_scans = _run_threads([traced, untraced])
    assert transforms == ["vmap"] * 20 and n_scans > 0


def test_transform_context_is_private_to_each_thread():
    from lens.core.lift import TransformContext

    ctx = TransformContext()
    barrier = threading.Barrier(2)
    seen = {}

    def run(name):
        with ctx.push(name):
            barrier.wait()  # both threads have pushed before either reads
            seen[name] = (ctx.get(), ctx.stack)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": ("a", ["a"]), "b": ("b", ["b"])}
    assert ctx.stack == []
