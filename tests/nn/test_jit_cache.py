"""nn.jit does not retrace on repeated ``apply``, wherever the jitted class is built.

docs/porting.md promises that lens's ``nn.jit`` "does not retrace ... at
any module path". A class built per call (``nn.jit(Inner)()`` inside a compact
``__call__`` or inside ``setup``) is a new Python object on every ``apply``; the
cache keys on what determines the trace, not on that object's identity.
"""

import jax
import jax.numpy as jnp
import pytest

from lens import nn
from tests.helpers import assert_tree_allclose

KEY = jax.random.key(0)
X = jnp.ones((2, 3))


def _counted():
    """A module class whose body counts how often it is traced."""
    traces = []

    class Inner(nn.Module):
        features: int = 3

        @nn.compact
        def __call__(self, x):
            traces.append(1)
            return nn.Dense(self.features)(x)

    return Inner, traces


def _check(outer, traces, n_applies=4):
    v = outer.init(KEY, X)
    first = outer.apply(v, X)
    n = len(traces)
    for _ in range(n_applies):
        assert_tree_allclose(outer.apply(v, X), first)
    assert len(traces) == n, f"retraced {len(traces) - n} times in {n_applies} applies"
    return v


def test_jit_built_inside_compact_does_not_retrace():
    Inner, traces = _counted()

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(Inner)()(x)

    v = _check(Outer(), traces)
    assert "JitInner_0" in v["params"]


def test_jit_built_inside_setup_does_not_retrace():
    Inner, traces = _counted()

    class Outer(nn.Module):
        def setup(self):
            self.inner = nn.jit(Inner)(features=3)

        def __call__(self, x):
            return self.inner(x)

    v = _check(Outer(), traces)
    assert "inner" in v["params"]


def test_nested_jit_built_per_call_does_not_retrace():
    Inner, traces = _counted()

    class Middle(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(Inner)()(x) + nn.jit(Inner)()(x)

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(Middle)()(x)

    v = _check(Outer(), traces)
    assert set(v["params"]["JitMiddle_0"]) == {"JitInner_0", "JitInner_1"}


@pytest.mark.parametrize("lift", ["remat", "vmap"])
def test_jit_built_under_another_lifted_transform_does_not_retrace(lift):
    Inner, traces = _counted()

    class Middle(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(Inner)()(x)

    if lift == "remat":
        Lifted = nn.remat(Middle)
    else:
        Lifted = nn.vmap(
            Middle,
            variable_axes={"params": None},
            split_rngs={"params": False},
            in_axes=0,
        )

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return Lifted()(x)

    _check(Outer(), traces)


def test_jit_cache_still_tells_different_hyperparameters_apart():
    Inner, traces = _counted()

    class Outer(nn.Module):
        features: int

        @nn.compact
        def __call__(self, x):
            return nn.jit(Inner)(features=self.features)(x)

    for f in (2, 5):
        v = Outer(f).init(KEY, X)
        assert Outer(f).apply(v, X).shape == (2, f)


def test_jit_per_call_class_keeps_the_right_child_names():
    """A retrace for a new naming state uses that state, not the first call's."""
    Inner, _ = _counted()

    class Outer(nn.Module):
        n: int

        @nn.compact
        def __call__(self, x):
            for _ in range(self.n):
                x = nn.jit(Inner)()(x)
            return x

    v1 = Outer(1).init(KEY, X)
    v3 = Outer(3).init(KEY, X)
    assert set(v1["params"]) == {"JitInner_0"}
    assert set(v3["params"]) == {"JitInner_0", "JitInner_1", "JitInner_2"}
    for i in range(3):
        assert set(v3["params"][f"JitInner_{i}"]) == {"Dense_0"}
