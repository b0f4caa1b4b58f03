"""scan: stacked, broadcast and carried variables, rngs, and loop errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens.core import apply, init, lift
from lens.core import nn as core_nn
from tests.helpers import shapes


def layer(scope, c, _):
    return jnp.tanh(core_nn.dense(scope, c, 3)), None


def stack(n, **kw):
    body = lift.scan(
        layer, variable_axes={"params": 0}, split_rngs={"params": True}, length=n, **kw
    )
    return lambda scope, x: body(scope, x, None)[0]


def test_scan_over_layers_stacks_params_and_matches_unrolled():
    x = jax.random.normal(jax.random.key(1), (2, 3))
    y, v = init(stack(4))(jax.random.key(0), x)
    assert shapes(v) == {"params": {"bias": (4, 3), "kernel": (4, 3, 3)}}
    k = v["params"]["kernel"]
    assert not np.allclose(k[0], k[1])
    h = x
    for i in range(4):
        h = jnp.tanh(h @ k[i] + v["params"]["bias"][i])
    np.testing.assert_allclose(apply(stack(4))(v, x), h, rtol=1e-5)
    np.testing.assert_allclose(y, h, rtol=1e-5)


def test_reverse_scan_uses_layers_backwards():
    x = jax.random.normal(jax.random.key(1), (2, 3))
    _, v = init(stack(3))(jax.random.key(0), x)
    k, b = v["params"]["kernel"], v["params"]["bias"]
    h = x
    for i in reversed(range(3)):
        h = jnp.tanh(h @ k[i] + b[i])
    np.testing.assert_allclose(apply(stack(3, reverse=True))(v, x), h, rtol=1e-5)


def test_broadcast_params_initialised_once_and_carried_state():
    def body(scope, c, x):
        count = scope.variable("counter", "n", lambda: jnp.zeros((), jnp.int32))
        count.value += 1
        w = scope.param("w", jax.nn.initializers.normal(), (3,))
        return c + w * x, c.sum()

    f = lift.scan(
        body,
        variable_broadcast="params",
        variable_carry="counter",
        split_rngs={"params": False},
    )
    xs = jnp.arange(5.0)
    (c, ys), v = init(f)(jax.random.key(0), jnp.zeros(3), xs)
    assert shapes(v) == {"params": {"w": (3,)}, "counter": {"n": ()}}
    assert int(v["counter"]["n"]) == 5  # created inside the body, then carried
    np.testing.assert_allclose(c, v["params"]["w"] * xs.sum(), rtol=1e-5)
    (_, _), upd = apply(f, mutable=["counter"])(v, jnp.zeros(3), xs)
    assert int(upd["counter"]["n"]) == 10


def test_broadcast_that_depends_on_the_loop_is_an_error():
    def body(scope, c, x):
        scope.param("w", lambda rng: c * 2.0)
        return c, x

    f = lift.scan(body, variable_broadcast="params", split_rngs={"params": False})
    with pytest.raises(
        errors.LoopBroadcastDependenceError, match="depends on the loop"
    ):
        init(f)(jax.random.key(0), jnp.ones(3), jnp.arange(4.0))


def test_scanned_batch_stats_are_mutated_per_layer():
    def body(scope, c, _):
        h = core_nn.batch_norm(scope, core_nn.dense(scope.push("d"), c, 3))
        return h, None

    f = lift.scan(
        body,
        variable_axes={"params": 0, "batch_stats": 0},
        split_rngs={"params": True},
        length=2,
    )
    x = jax.random.normal(jax.random.key(1), (8, 3))
    _, v = init(lambda s, x: f(s, x, None))(jax.random.key(0), x)
    assert shapes(v["batch_stats"]) == {"mean": (2, 3), "var": (2, 3)}
    _, upd = apply(lambda s, x: f(s, x, None), mutable=["batch_stats"])(v, x)
    assert upd["batch_stats"]["mean"].shape == (2, 3)
    assert not np.allclose(upd["batch_stats"]["mean"], 0.0)


def test_scan_over_inputs_with_broadcast_argument_and_out_axes():
    def body(scope, c, x, scale):
        return c + x * scale, c

    f = lift.scan(body, in_axes=(1, lift.broadcast), out_axes=1)
    xs = jnp.ones((2, 4))
    (c, ys), _ = init(f)(jax.random.key(0), jnp.zeros(2), xs, 3.0)
    np.testing.assert_allclose(c, [12.0, 12.0])
    assert ys.shape == (2, 4)


def test_split_vs_shared_rngs_per_iteration():
    def body(scope, c, _):
        return c, jax.random.normal(scope.make_rng("noise"), ())

    rngs = {"noise": jax.random.key(0)}
    split = apply(lift.scan(body, split_rngs={"noise": True}, length=4))(
        {}, 0.0, None, rngs=rngs
    )[1]
    shared = apply(lift.scan(body, split_rngs={"noise": False}, length=4))(
        {}, 0.0, None, rngs=rngs
    )[1]
    assert len(set(np.asarray(split).tolist())) == 4
    assert len(set(np.asarray(shared).tolist())) == 1


def test_scan_needs_a_length():
    f = lift.scan(layer, variable_axes={"params": 0}, split_rngs={"params": True})
    with pytest.raises(errors.TransformAxisSizeError, match="length=N"):
        init(lambda s, x: f(s, x, None))(jax.random.key(0), jnp.ones((1, 3)))
