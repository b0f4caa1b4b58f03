"""Differential tests: lens.core against flax.core on the same functions and keys.

Skipped as a whole when flax (an optional test oracle) is not installed.
"""

import jax
import jax.numpy as jnp
import pytest

from lens import core as lcore
from lens.core import lift as llift
from lens.core import nn as lnn
from tests.helpers import assert_tree_allclose

fcore = pytest.importorskip("flax.core")
flift = pytest.importorskip("flax.core.lift")
fnn = pytest.importorskip("flax.core.nn")


def _mlp(nn):
    def mlp(scope, x):
        h = nn.dense(scope.push("hidden"), x, 4)
        h = jax.nn.relu(h)
        return nn.dense(scope.push("out"), h, 1)

    return mlp


def _plain(d):
    return jax.tree_util.tree_map(lambda x: x, fcore.unfreeze(d))


@pytest.mark.parametrize("key", [jax.random.key(0), jax.random.PRNGKey(3)])
def test_same_params_and_outputs_for_mlp(key):
    x = jnp.linspace(-1, 1, 6).reshape(2, 3)
    y_l, v_l = lcore.init(_mlp(lnn))(key, x)
    y_f, v_f = fcore.init(_mlp(fnn))(key, x)
    assert_tree_allclose(v_l, _plain(v_f))
    assert_tree_allclose(y_l, y_f)
    assert_tree_allclose(
        lcore.apply(_mlp(lnn))(v_l, x * 2), fcore.apply(_mlp(fnn))(v_f, x * 2)
    )


def test_same_rngs_for_nested_scopes_and_counters():
    def f(scope):
        a = scope.make_rng("params")
        c = scope.push("child")
        b = (c.make_rng("params"), c.make_rng("params"))
        d = scope.push("child2").push("leaf").make_rng("params")
        again = scope.push("child", reuse=True).make_rng("params")
        rew = c.rewound().make_rng("params")
        return a, b, d, again, rew

    k = jax.random.key(42)
    out_l, _ = lcore.init(f)(k)
    out_f, _ = fcore.init(f)(k)
    for a, b in zip(jax.tree_util.tree_leaves(out_l), jax.tree_util.tree_leaves(out_f)):
        assert jnp.array_equal(jax.random.key_data(a), jax.random.key_data(b))


@pytest.mark.parametrize("split", [True, False])
def test_same_params_under_vmap(split):
    xs = jnp.ones((3, 2))

    def make(lift, nn):
        return lift.vmap(
            _mlp(nn),
            variable_axes={"params": 0 if split else None},
            split_rngs={"params": split},
            in_axes=0,
        )

    def outer(lift, nn):
        def f(scope, xs):
            return make(lift, nn)(scope.push("mlp"), xs)

        return f

    y_l, v_l = lcore.init(outer(llift, lnn))(jax.random.key(0), xs)
    y_f, v_f = fcore.init(outer(flift, fnn))(jax.random.key(0), xs)
    assert_tree_allclose(v_l, _plain(v_f))
    assert_tree_allclose(y_l, y_f)


def test_same_batch_norm_updates():
    x = jnp.arange(12.0).reshape(4, 3)
    _, v_l = lcore.init(lnn.batch_norm)(jax.random.key(0), x)
    _, v_f = fcore.init(fnn.batch_norm)(jax.random.key(0), x)
    assert_tree_allclose(v_l, _plain(v_f))
    y_l, upd_l = lcore.apply(lnn.batch_norm, mutable=["batch_stats"])(v_l, x)
    y_f, upd_f = fcore.apply(fnn.batch_norm, mutable=["batch_stats"])(v_f, x)
    assert_tree_allclose(y_l, y_f, atol=1e-5)
    assert_tree_allclose(upd_l, _plain(upd_f), atol=1e-5)


def test_same_dropout_mask():
    x = jnp.ones((8, 8))

    def f(scope, x):
        return (lnn if isinstance(scope, lcore.Scope) else fnn).dropout(scope, x, 0.5)

    k = jax.random.key(1)
    y_l = lcore.apply(f)({}, x, rngs={"dropout": k})
    y_f = fcore.apply(f)({}, x, rngs={"dropout": k})
    assert_tree_allclose(y_l, y_f)


def test_same_outputs_under_scan_over_layers():
    def layer(nn):
        def body(scope, c, _):
            return jnp.tanh(nn.dense(scope, c, 3)), None

        return body

    def make(lift, nn):
        scanned = lift.scan(
            layer(nn),
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=4,
        )
        return lambda scope, x: scanned(scope, x, None)[0]

    x = jnp.ones((2, 3))
    _, v_f = fcore.init(make(flift, fnn))(jax.random.key(0), x)
    _, v_l = lcore.init(make(llift, lnn))(jax.random.key(0), x)
    assert jax.tree_util.tree_structure(v_l) == jax.tree_util.tree_structure(
        _plain(v_f)
    )
    # Same variables in, same outputs out.
    assert_tree_allclose(
        lcore.apply(make(llift, lnn))(_plain(v_f), x),
        fcore.apply(make(flift, fnn))(v_f, x),
    )
