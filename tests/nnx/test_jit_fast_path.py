"""nnx.jit's fast path (lens/nnx/transforms/jit_cache.py ``with_fast_path``): a
repeated call of a plain jit reuses the cached walk without the argument
bookkeeping, and anything the fast path does not cover still takes the full call."""

import jax.numpy as jnp
import numpy as np

from lens import nnx
from lens.nnx.transforms.compilation import JitWrapped


def _counting(monkeypatch):
    calls = []
    split = JitWrapped._split_call

    def counted(self, args, kwargs):
        calls.append(tuple(kwargs))
        return split(self, args, kwargs)

    monkeypatch.setattr(JitWrapped, "_split_call", counted)
    return calls


def test_repeated_plain_calls_skip_the_bookkeeping_and_see_updates(monkeypatch):
    calls = _counting(monkeypatch)
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    f = nnx.jit(lambda m, x: m(x))
    x = jnp.ones((1, 2))
    first = f(model, x)
    assert len(calls) == 1  # the first call walks and compiles
    np.testing.assert_allclose(f(model, x), first, rtol=1e-6)
    bias = model.bias
    assert bias is not None
    bias.value = bias.value + 1.0  # a value change: same structure
    np.testing.assert_allclose(f(model, x), first + 1.0, rtol=1e-6)
    assert len(calls) == 1  # both went the fast way
    model.extra = nnx.Param(jnp.zeros(()))  # a structure change: full call again
    np.testing.assert_allclose(f(model, x), first + 1.0, rtol=1e-6)
    assert len(calls) == 2


def test_keywords_and_statics_take_the_full_call(monkeypatch):
    calls = _counting(monkeypatch)
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    f = nnx.jit(lambda m, x, scale=1.0: m(x) * scale)
    g = nnx.jit(lambda m, x, n: m(x) * n, static_argnums=2)
    x = jnp.ones((1, 2))
    outs = [(f(model, x, scale=2.0), g(model, x, 2)) for _ in range(2)]
    for a, b in outs:
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert len(calls) == 4


def test_updates_inside_a_fast_call_come_back():
    counter = nnx.Variable(jnp.zeros(()))

    @nnx.jit
    def bump(c):
        c.value = c.value + 1.0

    for _ in range(3):
        bump(counter)
    assert float(counter.value) == 3.0
