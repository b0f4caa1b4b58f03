"""vmap: the seed's shapes, split vs shared params and rngs, batch stats, metadata."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens.core import apply, init, lift
from lens.core import nn as core_nn
from tests.helpers import shapes


def mlp(scope, x):
    h = jax.nn.relu(core_nn.dense(scope.push("hidden"), x, 4))
    return core_nn.dense(scope.push("out"), h, 1)


def test_seed_shapes_for_mapped_params():
    xs = jnp.ones((3, 4))
    f = lift.vmap(
        mlp, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=0
    )
    y, v = init(lambda s, x: f(s.push("mlp"), x))(jax.random.key(0), xs)
    assert shapes(v["params"]) == {
        "mlp": {
            "hidden": {"bias": (3, 4), "kernel": (3, 4, 4)},
            "out": {"bias": (3, 1), "kernel": (3, 4, 1)},
        }
    }
    assert y.shape == (3, 1)
    k = v["params"]["mlp"]["hidden"]["kernel"]
    assert not np.allclose(k[0], k[1])  # independent initialisation


def test_mapped_but_unsplit_params_are_identical_copies():
    f = lift.vmap(mlp, variable_axes={"params": 0}, split_rngs={"params": False})
    _, v = init(f)(jax.random.key(0), jnp.ones((3, 4)))
    k = v["params"]["hidden"]["kernel"]
    assert k.shape == (3, 4, 4) and np.allclose(k[0], k[1])


def test_shared_params_are_broadcast():
    f = lift.vmap(mlp, variable_axes={"params": None}, split_rngs={"params": False})
    y, v = init(f)(jax.random.key(0), jnp.ones((3, 4)))
    assert shapes(v["params"])["hidden"] == {"bias": (4,), "kernel": (4, 4)}
    xs = jax.random.normal(jax.random.key(1), (3, 4))
    np.testing.assert_allclose(apply(f)(v, xs), apply(mlp)(v, xs), rtol=1e-5)


def test_apply_maps_each_member_with_its_params():
    f = lift.vmap(mlp, variable_axes={"params": 0}, split_rngs={"params": True})
    _, v = init(f)(jax.random.key(0), jnp.ones((3, 4)))
    xs = jax.random.normal(jax.random.key(1), (3, 4))
    ys = apply(f)(v, xs)
    for i in range(3):
        vi = jax.tree_util.tree_map(lambda a, i=i: a[i], v)
        np.testing.assert_allclose(ys[i], apply(mlp)(vi, xs[i]), rtol=1e-5)


def test_batch_stats_mutated_inside_vmap_with_axis_name():
    def model(scope, x):
        h = core_nn.dense(scope.push("hidden"), x, 4)
        return core_nn.batch_norm(scope.push("bn"), h, axis_name="batch")

    f = lift.vmap(
        model,
        variable_axes={"params": None, "batch_stats": None},
        split_rngs={"params": False},
        axis_name="batch",
    )
    xs = jax.random.normal(jax.random.key(1), (8, 1, 3))
    _, v = init(f)(jax.random.key(0), xs)
    assert shapes(v["batch_stats"]) == {"bn": {"mean": (4,), "var": (4,)}}
    y, upd = apply(f, mutable=["batch_stats"])(v, xs)
    assert not np.allclose(upd["batch_stats"]["bn"]["mean"], 0.0)
    # axis_name makes the statistics global over the mapped axis
    np.testing.assert_allclose(jnp.mean(y, axis=(0, 1)), 0.0, atol=1e-5)


def test_per_member_batch_stats():
    f = lift.vmap(
        lambda s, x: core_nn.batch_norm(s, x),
        variable_axes={"params": 0, "batch_stats": 0},
        split_rngs={"params": True},
    )
    xs = jax.random.normal(jax.random.key(1), (2, 5, 3)) + jnp.array(
        [[[0.0]], [[10.0]]]
    )
    _, v = init(f)(jax.random.key(0), xs)
    _, upd = apply(f, mutable=["batch_stats"])(v, xs)
    m = upd["batch_stats"]["mean"]
    assert m.shape == (2, 3) and float(m[1].mean()) > float(m[0].mean()) + 0.05


def test_split_and_shared_dropout_rngs():
    def noisy(scope, x):
        return core_nn.dropout(scope, x, 0.5)

    x = jnp.ones((2, 64))
    rngs = {"dropout": jax.random.key(3)}
    split = apply(lift.vmap(noisy, variable_axes={}, split_rngs={"dropout": True}))(
        {}, x, rngs=rngs
    )
    shared = apply(lift.vmap(noisy, variable_axes={}, split_rngs={"dropout": False}))(
        {}, x, rngs=rngs
    )
    assert not np.array_equal(split[0], split[1])
    assert np.array_equal(shared[0], shared[1])


def test_axis_size_for_unmapped_inputs_and_error_without_it():
    def f(scope):
        return scope.param("w", jax.nn.initializers.normal(), (2,))

    y, v = init(
        lift.vmap(
            f, variable_axes={"params": 0}, split_rngs={"params": True}, axis_size=5
        )
    )(jax.random.key(0))
    assert v["params"]["w"].shape == (5, 2) and y.shape == (5, 2)
    with pytest.raises(errors.TransformAxisSizeError, match="axis_size=N"):
        init(lift.vmap(f, variable_axes={"params": 0}, split_rngs={"params": True}))(
            jax.random.key(0)
        )
    with pytest.raises(
        errors.TransformAxisSizeError, match="Inconsistent batch axis sizes"
    ):
        init(lift.vmap(lambda s, a, b: a + b, variable_axes={}, split_rngs={}))(
            jax.random.key(0), jnp.ones(3), jnp.ones(4)
        )


def test_in_axes_and_out_axes():
    def f(scope, x, bias):
        return x + bias

    vf = lift.vmap(f, variable_axes={}, split_rngs={}, in_axes=(1, None), out_axes=1)
    y = apply(vf)({}, jnp.ones((2, 3)), jnp.arange(2.0))
    assert y.shape == (2, 3)
    np.testing.assert_allclose(y[:, 0], 1 + jnp.arange(2.0))


def test_nested_vmap():
    inner = lift.vmap(mlp, variable_axes={"params": 0}, split_rngs={"params": True})
    outer = lift.vmap(inner, variable_axes={"params": 0}, split_rngs={"params": True})
    _, v = init(outer)(jax.random.key(0), jnp.ones((2, 3, 4)))
    assert v["params"]["hidden"]["kernel"].shape == (2, 3, 4, 4)


@pytest.mark.parametrize("transform", ["vmap", "scan"])
def test_variable_axes_a_created_variable_cannot_take_name_the_variable(transform):
    from lens import nn

    class Step(nn.Module):
        @nn.compact
        def __call__(self, c, x=None):
            y = nn.Dense(2)(c)
            return (y, None) if transform == "scan" else y

    if transform == "vmap":
        model = nn.vmap(Step, variable_axes={"params": 5}, split_rngs={"params": True})
        args = (jnp.ones((3, 1, 2)),)
    else:
        model = nn.scan(
            Step, variable_axes={"params": 5}, split_rngs={"params": True}, length=3
        )
        args = (jnp.ones((1, 2)), None)
    with pytest.raises(
        ValueError,
        match=rf'{transform}: variable /Dense_0/(bias|kernel) of collection "params" '
        rf"inside {transform} has shape \(2,?\d?\): axis 5 cannot be added",
    ):
        model().init(jax.random.key(0), *args)
