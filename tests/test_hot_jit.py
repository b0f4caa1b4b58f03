"""lens's jitted layer helpers run eagerly for their first calls (lens/_hot_jit.py):
a first model compiles nothing of lens's own, a hot loop still gets one compiled call."""

import jax
import jax.numpy as jnp
import numpy as np

from lens._hot_jit import hot_jit


def _compiles(fn):
    events = []

    def listen(event, duration, **kw):
        if event.endswith("backend_compile_duration"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        fn()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return len(events)


def test_the_first_calls_compile_nothing_then_one_program_serves():
    calls = []

    def scaled(x, k):
        calls.append(type(x))
        return x * k + 7

    f = hot_jit(scaled, after=2, static_argnums=(1,))
    x = jnp.arange(3.0, 4.0)  # a shape nothing else in the suite compiles for
    f(x, 3)  # warms jnp's own eager primitives for this shape
    assert _compiles(lambda: f(x, 3)) == 0  # second eager call: nothing new
    assert f.calls_left == 0
    assert _compiles(lambda: f(x, 3)) == 1  # hot: one program
    assert _compiles(lambda: f(x, 3)) == 0  # and it is cached
    assert len(calls) == 3  # two eager calls, one trace
    np.testing.assert_array_equal(f(x, 3), x * 3 + 7)


def test_inside_a_trace_the_helper_is_always_the_jitted_one():
    f = hot_jit(lambda x: x + 1, after=100)
    jaxpr = jax.make_jaxpr(f)(jnp.ones(2))
    assert f.calls_left == 100  # a traced call does not count
    assert any(e.primitive.name in ("pjit", "jit") for e in jaxpr.jaxpr.eqns)


def test_eager_and_jitted_key_folds_are_the_same_bits():
    from lens.core._rng import _fold_in

    key = jax.random.key(3)
    eager = jax.random.fold_in(key, 11)
    jitted = _fold_in.jitted(key, 11)
    assert jnp.array_equal(jax.random.key_data(eager), jax.random.key_data(jitted))


def _cold(monkeypatch):
    """Every lens helper a small model meets back to its eager calls (earlier tests
    in this process may have made them hot)."""
    from lens._kernels import linear
    from lens.core import _rng
    from lens.core.nn import initializers
    from lens.nnx._objects import rngs

    for helper in (
        linear._dense_jit,
        initializers._filled,
        _rng._fold_in,
        rngs._next_key,
    ):
        monkeypatch.setattr(helper, "calls_left", 16)


# Shapes no other test uses, so that what compiles here is this test's.
DIN, DOUT, BATCH = 37, 29, 5


def _pure_jax_first(key_of, dout=DOUT):
    """What pure JAX runs for the layer: its keys, initializers and ``x @ w + b``."""
    x = jnp.ones((BATCH, DIN))
    w = jax.nn.initializers.lecun_normal()(key_of(0), (DIN, dout), jnp.float32)
    b = jax.nn.initializers.zeros(key_of(1), (dout,), jnp.float32)
    return x, w, b, jax.nn.relu(x @ w + b)


def test_a_first_nnx_layer_compiles_nothing_pure_jax_did_not(monkeypatch):
    from lens import nnx

    _cold(monkeypatch)
    key = jax.random.key(0)
    x, w, b, want = _pure_jax_first(lambda i: jax.random.fold_in(key, i))

    def first():
        layer = nnx.Linear(DIN, DOUT, rngs=nnx.Rngs(0))
        return layer, jax.nn.relu(layer(x))

    assert _compiles(first) == 0  # nor the count's ``uint32 + 1``, nor a dot_general
    layer, got = first()
    np.testing.assert_array_equal(layer.kernel[...], w)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_first_linen_layer_compiles_nothing_pure_jax_did_not(monkeypatch):
    from lens import nn

    _cold(monkeypatch)
    key = jax.random.key(1)
    x, *_ = _pure_jax_first(lambda i: jax.random.fold_in(key, 1000 + i), DOUT + 2)
    model = nn.Dense(DOUT + 2)  # not the nnx test's shapes: its compiles are its own

    def first():
        variables = model.init(key, x)  # Linen's path-hash folds: plain fold_ins
        return variables, jax.nn.relu(model.apply(variables, x))

    assert _compiles(first) == 0
    variables, got = first()
    p = variables["params"]
    np.testing.assert_allclose(got, jax.nn.relu(x @ p["kernel"] + p["bias"]), rtol=1e-6)


def test_a_streams_first_counts_go_up_on_the_host_with_the_same_bits():
    from lens import nnx

    eager, jitted = nnx.Rngs(4), nnx.Rngs(4)
    from lens.nnx._objects.rngs import _fold_and_count

    for _ in range(3):
        a = eager.params()
        key, jitted.params.count[...] = jax.jit(_fold_and_count)(
            jitted.params.key[...], jitted.params.count[...]
        )
        assert jnp.array_equal(jax.random.key_data(a), jax.random.key_data(key))
    count = eager.params.count[...]
    assert count.dtype == jnp.uint32 and int(count) == 3
    assert not count.committed  # a committed count would be a new cache key


def test_a_placed_count_stays_where_it_was_placed(monkeypatch):
    from lens import nnx

    _cold(monkeypatch)  # the host-side count of the first eager draws
    rngs = nnx.Rngs(5)
    device = jax.devices()[-1]  # the last of the test's CPU devices
    rngs.params.count[...] = jax.device_put(rngs.params.count[...], device)
    rngs.params.key[...] = jax.device_put(rngs.params.key[...], device)
    before = rngs.params.count[...].sharding
    rngs.params()
    count = rngs.params.count[...]
    assert count.committed and count.sharding == before and int(count) == 1
