"""remat, jit, jvp/vjp/value_and_grad, custom_vjp/custom_jvp, while_loop, cond,
switch and map_variables: each against the equivalent pure JAX function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens.core import apply, init, lift
from lens.core import nn as core_nn
from tests.helpers import assert_tree_allclose, shapes


def mlp(scope, x):
    h = jnp.tanh(core_nn.dense(scope.push("hidden"), x, 4))
    return core_nn.dense(scope.push("out"), h, 1)


# numpy, not jax.random: no compile while a worker only collects this file
X = np.random.default_rng(1).standard_normal((2, 3), np.float32)
_, V = init(mlp)(jax.random.key(0), X)


def pure_mlp(params, x):
    h = jnp.tanh(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def loss_of(model):
    def loss(params, x):
        return jnp.sum(apply(model)({"params": params}, x) ** 2)

    return loss


# ----------------------------------------------------------------------- remat


def test_remat_equals_no_remat_in_values_and_grads():
    rm = lift.checkpoint(mlp)
    y, v = init(rm)(jax.random.key(0), X)
    assert_tree_allclose(v, V)
    assert_tree_allclose(apply(rm)(V, X), apply(mlp)(V, X))
    g1 = jax.grad(loss_of(rm))(V["params"], X)
    g2 = jax.grad(loss_of(mlp))(V["params"], X)
    assert_tree_allclose(g1, g2, rtol=1e-5)


def test_remat_static_argnums():
    def f(scope, x, train):
        return core_nn.dropout(scope, x, 0.5, deterministic=not train)

    # As in Flax's core, positions count from the first argument after the scope.
    rm = lift.remat(f, static_argnums=(1,))
    assert jnp.array_equal(apply(rm)({}, X, False), X)


# ------------------------------------------------------------------------- jit


def test_jit_does_not_retrace_for_same_structure():
    traces = []

    # Flax's core calling convention: fn(scope, hash_key, *args), where the
    # hashable key tells calls apart (nn.jit passes a hash of the module).
    def f(scope, hash_key, x):
        traces.append(1)
        return mlp(scope, x)

    jf = lift.jit(f)
    _, v = init(jf)(jax.random.key(0), None, X)
    n = len(traces)
    for _ in range(3):
        y = apply(jf)(v, None, X)
    assert len(traces) == n + 1
    assert_tree_allclose(y, apply(mlp)(V, X))
    apply(jf)(v, None, jnp.ones((5, 3)))  # a new shape retraces
    assert len(traces) == n + 2
    apply(jf)(v, "other", jnp.ones((5, 3)))  # so does another hash key
    assert len(traces) == n + 3


def test_jit_keeps_rng_streams_advancing_on_cache_hits():
    def noisy(scope, x):
        return core_nn.dropout(scope, x, 0.5)

    jn = lift.jit(lambda scope, _key, x: noisy(scope, x))

    def twice(scope, x):
        return jn(scope, None, x), jn(scope, None, x), scope.make_rng("dropout")

    def twice_plain(scope, x):
        return noisy(scope, x), noisy(scope, x), scope.make_rng("dropout")

    x = jnp.ones((16,))
    rngs = {"dropout": jax.random.key(0)}
    for _ in range(2):  # second round hits the cache
        a, b, k = apply(twice)({}, x, rngs=rngs)
        pa, pb, pk = apply(twice_plain)({}, x, rngs=rngs)
        assert not jnp.array_equal(a, b)
        assert jnp.array_equal(a, pa) and jnp.array_equal(b, pb)
        assert jnp.array_equal(jax.random.key_data(k), jax.random.key_data(pk))


def test_jit_static_argnums_and_kwargs():
    traces = []

    def f(scope, _key, x, n, *, scale):
        traces.append(n)
        return x * n * scale

    # Positions count the scope as 0 and skip the hash key, as in Flax.
    jf = lift.jit(f, static_argnums=(2,))
    assert float(apply(jf)({}, None, 1.0, 3, scale=2.0)) == 6.0
    assert float(apply(jf)({}, None, 1.0, 3, scale=2.0)) == 6.0
    assert float(apply(jf)({}, None, 1.0, 4, scale=2.0)) == 8.0
    assert traces == [3, 4]


# --------------------------------------------------------------------- autodiff


def test_vjp_matches_jax_grad():
    def f(scope, x):
        y, bwd = lift.vjp(lambda s, x: jnp.sum(mlp(s, x) ** 2), scope, x)
        params_grad, x_grad = bwd(jnp.ones(()))
        return y, params_grad, x_grad

    y, pg, xg = apply(f)(V, X)
    g_params, g_x = jax.grad(lambda p, x: jnp.sum(pure_mlp(p, x) ** 2), argnums=(0, 1))(
        V["params"], X
    )
    assert_tree_allclose(pg, {"params": g_params}, rtol=1e-5)
    assert_tree_allclose(xg, g_x, rtol=1e-5)


def test_value_and_grad_matches_jax():
    def f(scope, x):
        return lift.value_and_grad(lambda s, x: jnp.sum(mlp(s, x)), scope, x)

    # As in Flax's core: gradients of the primals only (use vjp for variables).
    (y, (xg,)) = apply(f)(V, X)
    ref_y, ref_x = jax.value_and_grad(lambda p, x: jnp.sum(pure_mlp(p, x)), argnums=1)(
        V["params"], X
    )
    np.testing.assert_allclose(y, ref_y, rtol=1e-5)
    assert_tree_allclose(xg, ref_x, rtol=1e-5)

    def g(scope, x):
        return lift.value_and_grad(
            lambda s, x: (jnp.sum(mlp(s, x)), x.shape), scope, x, has_aux=True
        )

    (y2, aux, (xg2,)) = apply(g)(V, X)
    assert aux == X.shape and float(y2) == float(y)
    assert_tree_allclose(xg2, ref_x, rtol=1e-5)


def test_jvp_matches_jax_jvp():
    t_params = jax.tree_util.tree_map(jnp.ones_like, V["params"])
    t_x = jnp.ones_like(X)

    def f(scope, x):
        return lift.jvp(mlp, scope, (x,), (t_x,), {"params": t_params})

    y, y_t = apply(f)(V, X)
    ref_y, ref_t = jax.jvp(pure_mlp, (V["params"], X), (t_params, t_x))
    assert_tree_allclose((y, y_t), (ref_y, ref_t), rtol=1e-5)


def test_custom_vjp_sign_gradient():
    def f(scope, x):
        return jnp.sum(mlp(scope, x))

    def fwd(scope, x):
        return lift.vjp(f, scope, x)

    def bwd(vjp_fn, y_t):
        params_t, *inputs_t = vjp_fn(y_t)
        return (jax.tree_util.tree_map(jnp.sign, params_t), *inputs_t)

    sign_grad = lift.custom_vjp(f, forward_fn=fwd, backward_fn=bwd)
    _, v = init(sign_grad)(jax.random.key(0), X)
    g = jax.grad(lambda p: apply(sign_grad)({"params": p}, X))(v["params"])
    ref = jax.grad(lambda p: jnp.sum(pure_mlp(p, X)))(v["params"])
    assert_tree_allclose(g, jax.tree_util.tree_map(jnp.sign, ref))


def test_custom_jvp_doubles_tangents():
    def f(scope, x):
        return x * scope.param("w", jax.nn.initializers.ones, ())

    def jvp_fn(scope, primals, tangents, var_t):
        (x,) = primals
        (xt,) = tangents
        w = scope.param("w", jax.nn.initializers.ones, ())
        return x * w, 2 * (xt * w + x * var_t["params"]["w"])

    cj = lift.custom_jvp(f, jvp_fn)
    _, v = init(cj)(jax.random.key(0), 3.0)
    gx = jax.grad(lambda x: apply(cj)(v, x))(3.0)
    gw = jax.grad(lambda p: apply(cj)({"params": p}, 3.0))(v["params"])
    assert float(gx) == 2.0 and float(gw["w"]) == 6.0


# ------------------------------------------------------------------ control flow


def test_while_loop_with_carried_counter_created_inside():
    def cond_fn(scope, c):
        return c < 5

    def body_fn(scope, c):
        n = scope.variable("state", "n", lambda: jnp.zeros((), jnp.int32))
        n.value += 1
        return c + 1

    def f(scope):
        return lift.while_loop(cond_fn, body_fn, scope, 0, carry_variables="state")

    r, v = init(f)(jax.random.key(0))
    assert int(r) == 5 and int(v["state"]["n"]) == 5
    r, upd = apply(f, mutable=["state"])(v)
    assert int(upd["state"]["n"]) == 10


@pytest.mark.parametrize("split", [True, False])
def test_while_loop_split_and_unsplit_rngs(split):
    def cond_fn(scope, c):
        return c[0] < 4

    def body_fn(scope, c):
        i, acc = c
        return i + 1, acc.at[i].set(jax.random.normal(scope.make_rng("noise"), ()))

    def f(scope):
        return lift.while_loop(
            cond_fn, body_fn, scope, (0, jnp.zeros(4)), split_rngs={"noise": split}
        )[1]

    out = apply(f)({}, rngs={"noise": jax.random.key(0)})
    assert len(set(np.asarray(out).tolist())) == (4 if split else 1)


def test_while_loop_broadcast_params_are_read_only():
    def body_fn(scope, c):
        return c * scope.param("w", lambda k: jnp.full((), 2.0))

    def f(scope):
        scope.param("w", lambda k: jnp.full((), 2.0))
        return lift.while_loop(lambda s, c: c < 100, body_fn, scope, 1.0)

    r, _ = init(f)(jax.random.key(0))
    assert float(r) == 128.0


def test_cond_creates_same_params_and_selects_branch():
    def t(scope, x):
        return core_nn.dense(scope.push("d"), x, 2)

    def fl(scope, x):
        return -core_nn.dense(scope.push("d"), x, 2)

    def f(scope, x, pred):
        return lift.cond(pred, t, fl, scope, x)

    y, v = init(f)(jax.random.key(0), X, True)
    assert shapes(v) == {"params": {"d": {"bias": (2,), "kernel": (3, 2)}}}
    np.testing.assert_allclose(apply(f)(v, X, False), -apply(f)(v, X, True), rtol=1e-6)


def test_cond_branch_mismatch_is_explained():
    def f(scope, x):
        return lift.cond(
            True,
            lambda s, x: core_nn.dense(s.push("d"), x, 2),
            lambda s, x: x[:, :2],
            scope,
            x,
        )

    with pytest.raises(
        errors.BranchStructureMismatchError, match="params:/d/kernel"
    ) as info:
        init(f)(jax.random.key(0), X)
    # JAX's class and first sentence, which Flax raises here
    assert isinstance(info.value, TypeError)
    assert str(info.value).startswith(
        "cond branches must have equal output types but they differ."
    )


def test_cond_branches_returning_different_outputs_raise_jaxs_error():
    # the same variables (none): the outputs differ, which JAX's error locates;
    # lens used to blame the variables ("the variable shapes or dtypes differ")
    def f(scope, x):
        return lift.cond(True, lambda s, x: x, lambda s, x: x[0], scope, x)

    with pytest.raises(TypeError, match="cond branches must have equal output") as info:
        init(f)(jax.random.key(0), X)
    assert not isinstance(info.value, errors.BranchStructureMismatchError)


def test_switch_selects_branch():
    branches = [
        lambda s, x, k=k: core_nn.dense(s.push("d"), x, 2) * k for k in (1.0, 2.0, 3.0)
    ]

    def f(scope, x, i):
        return lift.switch(i, branches, scope, x)

    _, v = init(f)(jax.random.key(0), X, 0)
    np.testing.assert_allclose(apply(f)(v, X, 2), 3 * apply(f)(v, X, 0), rtol=1e-6)


# -------------------------------------------------------------- map_variables


def test_map_variables_ties_encoder_and_decoder_weights():
    def encode(scope, x):
        return core_nn.dense(scope, x, 2, bias=False)

    def decode(scope, z):
        def trans(variables):
            return jax.tree_util.tree_map(lambda k: k.T, variables)

        tied = lift.map_variables(
            lambda s, z: core_nn.dense(s, z, 3, bias=False),
            "params",
            trans,
            trans,
            init=False,
            mutable=False,  # the tied kernel already exists
        )
        return tied(scope, z)

    def autoencoder(scope, x):
        enc = scope.push("enc")
        return decode(enc.rewound(), encode(enc, x))

    y, v = init(autoencoder)(jax.random.key(0), X)
    assert shapes(v) == {"params": {"enc": {"kernel": (3, 2)}}}
    k = v["params"]["enc"]["kernel"]
    np.testing.assert_allclose(apply(autoencoder)(v, X), (X @ k) @ k.T, rtol=1e-5)
