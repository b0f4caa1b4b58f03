"""Lifted transforms behave exactly as Flax's (flax as the oracle where installed).

The cases Flax code hits first: nn.scan as a method decorator (the canonical LSTM
encoder), modules created inside nn.cond branches, jvp over several scopes,
map_variables applied at init, scans of length zero, nn.jit's cache (no retrace,
nothing kept alive, unhashable keyword arguments), and the guard that no transform
ever lets a tracer out.
"""

from __future__ import annotations

import functools
import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.core as lcore
import lens.nn as lnn
from lens import errors

KEY = jax.random.key(0)


def _oracle(name):
    return pytest.importorskip(name)


def _same(a, b, rtol=1e-6):
    a, b = jax.tree.map(np.asarray, dict(a)), jax.tree.map(np.asarray, dict(b))
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-6)


def _concrete(tree):
    return all(not isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree))


def scan_encoder(nn):
    """Flax's canonical LSTM encoder: nn.scan decorating a @compact __call__."""

    class Encoder(nn.Module):
        @functools.partial(
            nn.scan,
            variable_broadcast="params",
            in_axes=1,
            out_axes=1,
            split_rngs={"params": False},
        )
        @nn.compact
        def __call__(self, carry, x):
            return nn.LSTMCell(4)(carry, x)

    return Encoder


def scan_class_encoder(nn):
    """The same encoder through the class form of nn.scan (a top-level module)."""

    class Cell(nn.Module):
        @nn.compact
        def __call__(self, carry, x):
            return nn.LSTMCell(4)(carry, x)

    return nn.scan(
        Cell,
        variable_broadcast="params",
        in_axes=1,
        out_axes=1,
        split_rngs={"params": False},
    )


def test_scan_method_decorator_gives_concrete_params_and_one_cell():
    x = jax.random.normal(jax.random.key(1), (2, 5, 3))
    carry = lnn.LSTMCell(4).initialize_carry(KEY, (2, 3))
    v = scan_encoder(lnn)().init(KEY, carry, x)
    assert _concrete(v)
    assert list(v["params"]) == ["LSTMCell_0"]
    # the method and class forms are one code path: same values, same outputs
    vc = scan_class_encoder(lnn)().init(KEY, carry, x)
    _same(v, vc)
    y = scan_encoder(lnn)().apply(v, carry, x)
    yc = scan_class_encoder(lnn)().apply(vc, carry, x)
    _same({"y": y}, {"y": yc})
    fnn = _oracle("flax.linen")
    fv = scan_encoder(fnn)().init(KEY, carry, x)
    _same(v, fv)
    _same({"y": y}, {"y": scan_encoder(fnn)().apply(fv, carry, x)})


def cond_inline(nn):
    class C(nn.Module):
        @nn.compact
        def __call__(self, x, pred):
            return nn.cond(
                pred,
                lambda m, x: nn.Dense(2)(x),
                lambda m, x: nn.Dense(2)(x) * 2,
                self,
                x,
            )

    return C


def test_modules_created_inside_cond_branches_are_concrete_and_like_flax():
    x = jnp.ones((1, 3))
    v = cond_inline(lnn)().init(KEY, x, True)
    assert _concrete(v) and list(v["params"]) == ["Dense_0"]
    y0 = cond_inline(lnn)().apply(v, x, False)
    fnn = _oracle("flax.linen")
    fv = cond_inline(fnn)().init(KEY, x, True)
    _same(v, fv)
    _same({"y": y0}, {"y": cond_inline(fnn)().apply(fv, x, False)})


def _two_layer(core, x):
    return lambda scopes, x: core.nn.dense(
        scopes[1], jnp.tanh(core.nn.dense(scopes[0], x, 3)), 2
    )


def test_jvp_over_two_scopes_matches_flax():
    x = jnp.ones((1, 4))

    def run(core):
        def model(scope, x):
            return _two_layer(core, x)((scope.push("a"), scope.push("b")), x)

        _, v = core.init(model)(KEY, x)

        def f(scope, x):
            tangents = (
                {"params": jax.tree.map(jnp.ones_like, v["params"]["a"])},
                {"params": jax.tree.map(jnp.zeros_like, v["params"]["b"])},
            )
            return core.lift.jvp(
                _two_layer(core, x),
                (scope.push("a"), scope.push("b")),
                (x,),
                (jnp.ones_like(x),),
                tangents,
            )

        return core.apply(f)(v, x)

    y, t = run(lcore)
    # finite differences of the same perturbation
    _, v = lcore.init(lambda s, x: _two_layer(lcore, x)((s.push("a"), s.push("b")), x))(
        KEY, x
    )
    eps = 1e-3
    v2 = jax.tree.map(lambda a: a, v)
    v2["params"]["a"] = jax.tree.map(lambda p: p + eps, v["params"]["a"])
    y2 = lcore.apply(lambda s, x: _two_layer(lcore, x)((s.push("a"), s.push("b")), x))(
        v2, x + eps
    )
    np.testing.assert_allclose((y2 - y) / eps, t, rtol=2e-2, atol=2e-2)
    fcore = _oracle("flax.core")
    _oracle("flax.core.nn")  # flax.core does not import its nn submodule itself
    fy, ft = run(fcore)
    np.testing.assert_allclose(t, ft, rtol=1e-5)


def tied(nn):
    def transpose(p):
        return jax.tree.map(lambda a: a.T if a.ndim == 2 else a, p)

    class Tied(nn.Module):
        @nn.compact
        def __call__(self, x):
            D = nn.map_variables(nn.Dense, "params", transpose, transpose, init=True)
            return D(3, use_bias=False)(x)

    return Tied


def test_map_variables_applies_its_mapping_at_init():
    x = jnp.ones((1, 4))
    v = tied(lnn)().init(KEY, x)
    # stored transposed: (out, in)
    assert v["params"]["Map_variablesDense_0"]["kernel"].shape == (3, 4)
    y = tied(lnn)().apply(v, x)
    np.testing.assert_allclose(y, x @ v["params"]["Map_variablesDense_0"]["kernel"].T)
    fnn = _oracle("flax.linen")
    _same(v, tied(fnn)().init(KEY, x))


def zero_scan(nn):
    class B(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.Dense(3)(c), None

    class Z(nn.Module):
        @nn.compact
        def __call__(self, x):
            S = nn.scan(
                B, variable_axes={"params": 0}, split_rngs={"params": True}, length=0
            )
            return S()(x, None)[0]

    return Z


def test_scan_of_length_zero_returns_empty_params_and_the_carry():
    x = jnp.ones((1, 3))
    v = zero_scan(lnn)().init(KEY, x)
    assert jax.tree.map(jnp.shape, v["params"]) == {
        "ScanB_0": {"Dense_0": {"bias": (0, 3), "kernel": (0, 3, 3)}}
    }
    np.testing.assert_array_equal(zero_scan(lnn)().apply(v, x), x)


def test_jit_cache_keeps_nothing_alive_and_takes_list_kwargs():
    traces = []

    class J(lnn.Module):
        @lnn.compact
        def __call__(self, x, *, scales):
            traces.append(1)
            return lnn.Dense(2)(x) * scales[0]

    JJ = lnn.jit(J)

    class Outer(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            return JJ()(x, scales=[2.0, 3.0])

    x = jnp.ones((1, 3))
    v = Outer().init(KEY, x)
    n = len(traces)
    for _ in range(3):
        Outer().apply(v, x)
    assert len(traces) == n + 1  # one trace serves every apply

    def apply_fresh():
        fresh = jax.tree.map(lambda a: a + 0, v)  # new arrays, used once
        Outer().apply(fresh, x)
        return [weakref.ref(a) for a in jax.tree.leaves(fresh)]

    refs = apply_fresh()
    gc.collect()
    assert all(r() is None for r in refs), "the jit cache kept variables alive"


def test_a_transform_never_lets_a_tracer_out():
    def leaky(scope_fn, repack_fn, variable_groups, rng_groups):
        box = {}

        @jax.jit
        def inside(groups):
            scope = scope_fn(groups, rng_groups)
            scope.put_variable("state", "x", jnp.ones(()) * 2)
            box["out"] = repack_fn(scope)  # leaves the trace: a tracer
            return 0

        inside(variable_groups)
        return None, box["out"]

    f = lcore.lift.pack(leaky, (True,), (True,), (True,), name="leaky")
    with pytest.raises(errors.TracerLeakError, match="leaky at /"):
        lcore.init(f)(KEY)
