"""The ``lax`` paths of lens/_kernels (norm statistics, normalizing, running
averages, dropout masks) give the bits the ``jnp`` expressions (Flax's) give.

They exist to trace faster; a lean path that drifted by one ulp from Flax's
arithmetic would change every trained model, so these compare bit for bit, both
eagerly and under ``jax.jit``, against the expressions written as Flax writes them.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from lens._kernels import norm
from lens._kernels.random import bernoulli, dropout


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _x(shape, seed=0, dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(seed), shape, dtype) * 3 + 1.7).astype(
        dtype
    )


def _stats_as_flax(x, axes, use_mean, keepdims, fast):
    if not use_mean:
        mean2 = jnp.mean(lax.square(x), axes, keepdims=keepdims)
        return jnp.zeros_like(mean2), mean2
    if fast:
        mean = jnp.mean(x, axes, keepdims=keepdims)
        mean2 = jnp.mean(lax.square(x), axes, keepdims=keepdims)
        return mean, jnp.maximum(0.0, mean2 - lax.square(mean))
    mean = jnp.mean(x, axes, keepdims=True)
    var = jnp.mean(lax.square(x - mean), axes, keepdims=keepdims)
    return (mean if keepdims else jnp.squeeze(mean, axes)), var


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("use_mean,fast", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("shape,axes", [((8, 5, 5, 6), (0, 1, 2)), ((3, 7, 16), (2,))])
def test_stats_match_flax_bit_for_bit(jit, use_mean, fast, keepdims, shape, axes):
    x = _x(shape)
    ours = lambda v: norm.stats(
        v, axes, use_mean, None, None, None, keepdims, fast, jnp.dtype(jnp.float32)
    )  # noqa: E731
    theirs = lambda v: _stats_as_flax(v, axes, use_mean, keepdims, fast)  # noqa: E731
    if jit:
        ours, theirs = jax.jit(ours), jax.jit(theirs)
    for a, b in zip(ours(x), theirs(x)):
        _same(a, b)


def test_stats_in_float64_and_bfloat16_match_flax():
    with jax.enable_x64(True):
        x = _x((4, 9), dtype=jnp.float64)
        f64 = jnp.dtype(jnp.float64)
        ours = jax.jit(
            lambda v: norm.stats(v, (1,), True, None, None, None, True, True, f64)
        )
        for a, b in zip(ours(x), _stats_as_flax(x, (1,), True, True, True)):
            _same(a, b)
    # bfloat16 statistics (force_float32_reductions=False) take the jnp path
    x = _x((4, 9), dtype=jnp.bfloat16)
    for a, b in zip(
        norm.stats(
            x, (1,), True, None, None, None, True, True, jnp.dtype(jnp.bfloat16)
        ),
        _stats_as_flax(x, (1,), True, True, True),
    ):
        _same(a, b)


def _normalize_as_flax(x, mean, var, scale, bias, dtype, epsilon):
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    if scale is not None:
        mul *= scale
    y *= mul
    if bias is not None:
        y += bias
    args = [a for a in (x, scale, bias) if a is not None]
    return jnp.asarray(y, dtype or jnp.result_type(*args))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(
    "with_scale,with_bias", [(True, True), (False, True), (True, False)]
)
@pytest.mark.parametrize("dtype", [None, jnp.bfloat16])
def test_normalize_matches_flax_bit_for_bit(jit, with_scale, with_bias, dtype):
    x = _x((6, 4, 8))
    mean, var = jnp.mean(x, (0, 1), keepdims=True), jnp.var(x, (0, 1), keepdims=True)
    scale = _x((8,), 1) if with_scale else None
    bias = _x((8,), 2) if with_bias else None

    def ours(x, mean, var, scale, bias):
        return norm.normalize(x, mean, var, scale, bias, (0, 1), (2,), dtype, 1e-5)

    def theirs(x, mean, var, scale, bias):
        s = None if scale is None else scale.reshape(1, 1, 8)
        b = None if bias is None else bias.reshape(1, 1, 8)
        return _normalize_as_flax(x, mean, var, s, b, dtype, 1e-5)

    if jit:
        ours, theirs = jax.jit(ours), jax.jit(theirs)
    _same(ours(x, mean, var, scale, bias), theirs(x, mean, var, scale, bias))


def test_normalize_with_feature_shaped_statistics_and_mixed_dtypes():
    x = _x((5, 3))
    mean, var = jnp.mean(x, 0), jnp.var(x, 0)  # BatchNorm's running averages
    ours = norm.normalize(x, mean, var, None, None, (0,), (1,), None, 1e-3)
    _same(ours, _normalize_as_flax(x, mean[None], var[None], None, None, None, 1e-3))
    xb = x.astype(jnp.bfloat16)  # bfloat16 inputs, float32 statistics: promoted
    ours = norm.normalize(xb, mean, var, None, None, (0,), (1,), None, 1e-3)
    _same(ours, _normalize_as_flax(xb, mean[None], var[None], None, None, None, 1e-3))


def test_normalize_of_a_scale_with_the_wrong_size_names_the_reshape():
    # lax.reshape would leave the size to lowering (a verifier error); jnp names it
    x = _x((5, 3))
    with pytest.raises(TypeError, match="cannot reshape"):
        norm.normalize(x, x, x, _x((4,)), None, (0,), (1,), None, 1e-3)


def test_normalize_refuses_an_integer_dtype_on_either_path():
    x = _x((5, 3))
    with pytest.raises(ValueError, match="Dtype must be inexact"):
        norm.normalize(x, x, x, None, None, (0,), (1,), jnp.int32, 1e-3)


@pytest.mark.parametrize("jit", [False, True])
def test_running_average_matches_flax_bit_for_bit(jit):
    average, stat = _x((16,)), _x((16,), 1)
    ours = lambda a, s: norm.running_average(a, s, 0.99)  # noqa: E731
    theirs = lambda a, s: 0.99 * a + (1 - 0.99) * s  # noqa: E731
    if jit:
        ours, theirs = jax.jit(ours), jax.jit(theirs)
    _same(ours(average, stat), theirs(average, stat))
    # an array momentum, or shapes that do not match, take the jnp path (and its errors)
    m = jnp.float32(0.9)
    _same(norm.running_average(average, stat, m), m * average + (1 - m) * stat)
    with pytest.raises(TypeError, match="incompatible shapes"):
        norm.running_average(average, _x((8,)), 0.99)


@pytest.mark.parametrize("p", [0.9, 0.5, 0.025, 1e-9, 0.0, 1.0])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5, 2)])
def test_bernoulli_draws_jaxs_mask(p, shape):
    for seed in range(4):
        key = jax.random.key(seed)
        want = jax.random.bernoulli(key, p, shape)
        _same(bernoulli(key, p, shape), want)
        _same(jax.jit(lambda k: bernoulli(k, p, shape))(key), want)


def test_bernoulli_takes_raw_keys_float64_and_array_probabilities():
    raw = jax.random.PRNGKey(3)
    ours = jax.jit(lambda k: bernoulli(k, 0.7, (9,)))
    _same(ours(raw), jax.random.bernoulli(raw, 0.7, (9,)))
    with jax.enable_x64(True):
        key = jax.random.key(5)
        ours = jax.jit(lambda k: bernoulli(k, 0.3, (50,)))
        _same(ours(key), jax.random.bernoulli(key, 0.3, (50,)))
    p = jnp.linspace(0.1, 0.9, 6)  # an array p: JAX's own function
    key = jax.random.key(1)
    _same(
        jax.jit(lambda k: bernoulli(k, p, (6,)))(key),
        jax.random.bernoulli(key, p, (6,)),
    )


def test_bernoulli_inlines_the_mask_in_a_trace_and_is_jaxs_eagerly(monkeypatch):
    jaxpr = jax.make_jaxpr(lambda k: bernoulli(k, 0.8, (4,)))(jax.random.key(0))
    names = [e.primitive.name for e in jaxpr.eqns]
    assert "random_bits" in names and "jit" not in names and "pjit" not in names
    # eagerly, one dispatch of JAX's compiled sampler
    calls = []
    real = jax.random.bernoulli
    monkeypatch.setattr(
        jax.random, "bernoulli", lambda *a, **k: calls.append(a) or real(*a, **k)
    )
    bernoulli(jax.random.key(0), 0.8, (4,))
    assert len(calls) == 1


def test_stats_are_lean_in_a_trace_only(monkeypatch):
    x = _x((4, 6))
    f32 = jnp.dtype(jnp.float32)
    calls = []
    real = jnp.mean
    monkeypatch.setattr(jnp, "mean", lambda *a, **k: calls.append(a) or real(*a, **k))
    stats = lambda v: norm.stats(v, (1,), True, None, None, None, True, True, f32)  # noqa: E731
    names = {e.primitive.name for e in jax.make_jaxpr(stats)(x).eqns}
    assert names >= {"reduce_sum", "div", "max"} and not calls
    stats(x)  # eagerly, jnp.mean: one compiled program per mean
    assert len(calls) == 2


def _dropout_as_flax(inputs, key, keep, shape):
    mask = jax.random.bernoulli(key, p=keep, shape=shape)
    mask = jnp.broadcast_to(mask, inputs.shape)
    return lax.select(mask, inputs / keep, jnp.zeros_like(inputs))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
@pytest.mark.parametrize("shape", [(6, 5, 4), (6, 1, 4), (1, 1, 1)])
def test_dropout_matches_flax_bit_for_bit(dtype, shape):
    x = _x((6, 5, 4), dtype=dtype)
    for seed in range(3):
        key = jax.random.key(seed)
        want = _dropout_as_flax(x, key, 0.8, shape)
        _same(jax.jit(lambda k, v: dropout(v, k, 0.8, shape))(key, x), want)
        _same(dropout(x, key, 0.8, shape), want)


def test_dropout_of_weak_typed_inputs_keeps_jnps_type():
    key = jax.random.key(0)
    types = []

    def run(drop):
        def f(k, s):
            weak = lax.broadcast(s, (4,))  # a Python float's weak type
            types.append(jax.typeof(weak).weak_type)
            out = drop(weak, k)
            types.append(jax.typeof(out).weak_type)
            return out

        return jax.jit(f)(key, 2.0)

    _same(
        run(lambda v, k: dropout(v, k, 0.5, (4,))),
        run(lambda v, k: _dropout_as_flax(v, k, 0.5, (4,))),
    )
    assert types[0] and types[:2] == types[2:]  # (input, output) alike
