"""Scope: variables, rng streams, init/apply/bind, and the errors users can cause."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens.core import Scope, apply, bind, init
from lens.core import nn as cnn


def _h(data):
    m = hashlib.sha1()
    for x in data:
        m.update(
            x.encode()
            if isinstance(x, str)
            else x.to_bytes((x.bit_length() + 7) // 8, "big")
        )
    return int.from_bytes(m.digest()[:4], "big")


def _eq(a, b):
    return bool(jnp.array_equal(jax.random.key_data(a), jax.random.key_data(b)))


def test_make_rng_follows_the_documented_derivation():
    key = jax.random.key(7)

    def f(scope):
        c = scope.push("enc").push("Dense_0")
        return scope.make_rng("params"), c.make_rng("params"), c.make_rng("params")

    (a, b, c), _ = init(f)(key)
    assert _eq(a, jax.random.fold_in(key, _h((1,))))
    assert _eq(b, jax.random.fold_in(key, _h(("enc", "Dense_0", 1))))
    assert _eq(c, jax.random.fold_in(key, _h(("enc", "Dense_0", 2))))


def test_counters_survive_rewound_and_repush():
    def f(scope):
        c = scope.push("a")
        k1 = c.make_rng("params")
        k2 = scope.push("a", reuse=True).make_rng("params")
        k3 = c.rewound().make_rng("params")
        k4 = c.rewound(rewind_rngs=True).make_rng("params")
        return k1, k2, k3, k4

    key = jax.random.key(0)
    (k1, k2, k3, k4), _ = init(f)(key)
    assert _eq(k2, jax.random.fold_in(key, _h(("a", 2))))
    assert _eq(k3, jax.random.fold_in(key, _h(("a", 3))))
    assert _eq(k4, k1)


def test_missing_stream_falls_back_to_params_like_flax():
    def f(scope):
        return scope.make_rng("dropout")

    k, _ = init(f)(jax.random.key(0))
    assert _eq(k, jax.random.fold_in(jax.random.key(0), _h((1,))))
    with pytest.raises(
        errors.InvalidRngError, match='(?s)needs PRNG for "dropout".*rngs=\\{"dropout"'
    ):
        apply(f)({})


def test_init_is_apply_with_everything_mutable():
    x = jnp.ones((2, 3))
    y1, v1 = init(cnn.dense)(jax.random.key(0), x, 4)
    y2, v2 = apply(cnn.dense, mutable=True)(
        {}, x, 4, rngs={"params": jax.random.key(0)}
    )
    np.testing.assert_allclose(y1, y2)
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(jnp.array_equal, v1, v2))
    assert type(v1) is dict and type(v1["params"]) is dict


def test_apply_never_mutates_its_inputs():
    x = jnp.arange(6.0).reshape(2, 3)
    _, v = init(cnn.batch_norm)(jax.random.key(0), x)
    before = jax.tree_util.tree_map(lambda a: np.asarray(a).copy(), v)
    ids = {k: id(d) for k, d in v.items()}
    _, upd = apply(cnn.batch_norm, mutable=["batch_stats"])(v, x)
    assert {k: id(d) for k, d in v.items()} == ids
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(np.array_equal, v, before))
    assert not np.array_equal(upd["batch_stats"]["mean"], v["batch_stats"]["mean"])


def test_failed_apply_leaves_variables_untouched():
    _, v = init(cnn.batch_norm)(jax.random.key(0), jnp.ones((2, 3)))

    def boom(scope, x):
        cnn.batch_norm(scope, x)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        apply(boom, mutable=True)(v, jnp.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(v["batch_stats"]["mean"], jnp.zeros(3))


def test_param_shape_mismatch_names_path_and_shapes():
    def f(scope, x, n):
        return cnn.dense(scope.push("enc"), x, n)

    _, v = init(f)(jax.random.key(0), jnp.ones((1, 4)), 3)
    with pytest.raises(
        errors.ScopeParamShapeError,
        match=r'parameter "kernel" in "/enc".*shape \(4, 5\).*shape \(4, 3\)',
    ):
        apply(f)(v, jnp.ones((1, 4)), 5)
    with pytest.raises(ValueError):
        apply(f)(v, jnp.ones((1, 2)), 3)


def test_missing_param_and_immutable_write_errors():
    def read(scope):
        return scope.param("w", jnp.zeros, (2,))

    with pytest.raises(
        errors.ScopeCollectionNotFound, match='"w" from collection "params"'
    ):
        apply(read)({})
    with pytest.raises(
        errors.ScopeParamNotFoundError, match='parameter named "w" in scope "/"'
    ):
        apply(read)({"params": {"v": jnp.zeros(2)}})

    def write(scope):
        scope.put_variable("batch_stats", "mean", 1.0)

    with pytest.raises(
        errors.ModifyScopeVariableError, match='mutable=\\["batch_stats"\\]'
    ):
        apply(write)({"batch_stats": {}})

    def var(scope):
        return scope.variable("cache", "k", None).value

    with pytest.raises(
        errors.ScopeCollectionNotFound, match='"k" from collection "cache"'
    ):
        apply(var)({})
    with pytest.raises(
        errors.ScopeVariableNotFoundError,
        match='No Variable named "k" for collection "cache" exists in "/"',
    ):
        apply(var)({"cache": {"j": 1.0}})


def test_name_collisions_raise():
    zeros = jax.nn.initializers.zeros

    def f(scope):
        scope.param("w", zeros, (1,))
        scope.param("w", zeros, (1,))

    # A ValueError as in Flax's core (the Module API raises NameInUseError).
    with pytest.raises(
        ValueError, match='(?s)Duplicate use of scope name: "w".*In scope /'
    ):
        init(f)(jax.random.key(0))

    def g(scope):
        scope.push("a")
        scope.push("a")

    with pytest.raises(ValueError, match="reuse=True"):
        init(g)(jax.random.key(0))

    def ok(scope):  # the same name in different collections is fine
        scope.param("w", zeros, (1,))
        scope.variable("stats", "w", jnp.zeros, (1,))

    init(ok)(jax.random.key(0))


def test_scope_used_after_apply_raises():
    leaked = []

    def f(scope):
        leaked.append(scope)

    init(f)(jax.random.key(0))
    with pytest.raises(errors.InvalidScopeError, match="after the init/apply"):
        leaked[0].param("w", jnp.zeros, (1,))
    with pytest.raises(errors.InvalidScopeError):
        leaked[0].make_rng("params")


def test_bad_variables_and_rngs_give_clear_errors():
    with pytest.raises(
        errors.ApplyScopeInvalidVariablesTypeError, match='Pass \\{"params": params'
    ):
        apply(cnn.dense)([1, 2], jnp.ones((1, 2)), 3)
    with pytest.raises(
        errors.ApplyScopeInvalidVariablesTypeError, match="'kernel' is a .*bare params"
    ):
        apply(cnn.dense)({"kernel": jnp.ones((2, 3))}, jnp.ones((1, 2)), 3)
    with pytest.raises(
        errors.InvalidRngError,
        match='(?s)should be a ``jax.PRNGKey``.*Not keys: "params" \\(int\\)',
    ):
        apply(cnn.dense)({}, jnp.ones((1, 2)), 3, rngs={"params": 3})


def test_bind_gives_a_long_lived_scope():
    _, v = init(cnn.dense)(jax.random.key(0), jnp.ones((1, 2)), 3)
    s = bind(v)
    assert isinstance(s, Scope)
    y = cnn.dense(s, jnp.ones((1, 2)), 3)
    assert y.shape == (1, 3)
    assert s.path_text == "/"
    assert not s.is_mutable_collection("params")


def test_variable_handle_reads_and_writes():
    def f(scope):
        v = scope.variable("state", "count", lambda: jnp.zeros((), jnp.int32))
        v.value += 1
        return v.value, v.is_mutable()

    (val, mut), out = init(f)(jax.random.key(0))
    assert int(val) == 1 and mut
    (val, _), out2 = apply(f, mutable=["state"])(out)
    assert int(val) == 2 and int(out2["state"]["count"]) == 2


def test_mutable_output_contains_only_mutable_collections():
    def f(scope, x):
        cnn.dense(scope, x, 2)
        s = scope.variable("stats", "n", jnp.zeros, ())
        s.value = s.value + 1

    _, v = init(f)(jax.random.key(0), jnp.ones((1, 2)))
    _, out = apply(f, mutable=["stats"])(v, jnp.ones((1, 2)))
    assert set(out) == {"stats"}


def test_default_name_and_reserve():
    def f(scope):
        a = scope.push(prefix="layer_")
        b = scope.push(prefix="layer_")
        return a.path, b.path

    (pa, pb), _ = init(f)(jax.random.key(0))
    assert pa == ("layer_0",) and pb == ("layer_1",)

    def bad(scope):
        scope.reserve(3)

    with pytest.raises(TypeError, match='(?s)scope "3" should be string.*must be str'):
        init(bad)(jax.random.key(0))
