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
