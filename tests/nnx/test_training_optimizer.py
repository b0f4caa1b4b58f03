"""lens.nnx.Optimizer: flax.nnx's update, all or nothing."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lens import nnx


def _snapshot(*nodes):
    return [np.asarray(x) for n in nodes for x in jax.tree.leaves(nnx.state(n))]


def _loss(model, x):
    return jnp.sum(model(x) ** 2)


def test_bad_gradients_change_nothing():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
    opt.update(model, nnx.grad(_loss)(model, jnp.ones((1, 2))))
    before = _snapshot(model, opt)
    grads = nnx.grad(_loss)(model, jnp.ones((1, 2)))
    grads["kernel"].value = jnp.ones((3, 2))  # wrong shape (v[...] = x writes into v)
    with pytest.raises(ValueError, match="has shape"):
        opt.update(model, grads)
    for a, b in zip(before, _snapshot(model, opt)):
        np.testing.assert_array_equal(a, b)


def test_missing_grads_is_flax_type_error():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    with pytest.raises(TypeError) as info:
        opt.update(model)
    assert str(info.value).startswith("Missing required argument `grads`.")
    assert "ModelAndOptimizer" in str(info.value)


def test_grads_filtered_by_wrt_and_kwargs_passed_pure():
    model = nnx.LoRALinear(2, 3, lora_rank=1, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.LoRAParam)
    kernel = np.asarray(model.kernel[...])
    grads = nnx.grad(_loss)(model, jnp.ones((1, 2)))  # every Param, LoRA or not
    opt.update(model, grads)
    np.testing.assert_array_equal(model.kernel[...], kernel)  # not optimized
    assert int(opt.step[...]) == 1


def test_linesearch_value_fn_gets_arrays():
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    opt = nnx.ModelAndOptimizer(model, optax.lbfgs(1e-2))
    graphdef = nnx.graphdef(model)
    x = jnp.ones((1, 2))

    def value_fn(params):
        return _loss(nnx.merge(graphdef, params), x)

    loss0 = _loss(model, x)
    grads = nnx.grad(_loss)(model, x)
    opt.update(grads, grad=grads, value=loss0, value_fn=value_fn)
    assert float(_loss(model, x)) < float(loss0)


def test_update_takes_the_graph_state_gradients_of_unpacked_parts():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.sgd(0.5), wrt=nnx.Param)
    params, rest = nnx.unpack(model, nnx.Param, ...)
    x = jnp.ones((1, 2))

    def loss(params, rest):
        return _loss(nnx.merge(params, rest), x)

    grads = nnx.grad(loss, graph=False)(params, rest)
    assert isinstance(grads, nnx.GraphState)
    kernel = np.asarray(model.kernel[...])
    opt.update(model, grads)
    np.testing.assert_allclose(
        model.kernel[...], kernel - 0.5 * np.asarray(grads["kernel"][...]), rtol=1e-6
    )
