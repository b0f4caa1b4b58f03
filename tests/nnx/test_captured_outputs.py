"""An object the function captured from outside (made before the transform, not
passed as an argument) among a transform's outputs, as flax.nnx 0.12.8 treats it.

``abstract = nnx.eval_shape(lambda: model)`` is how many projects get an abstract
copy of a model to restore a checkpoint into (jaxgarden's ``BaseModel.load``), so
it must work. flax.nnx returns such an object as a copy (its values as the
function saw them) from the transforms that trace the function once for its
outputs (eval_shape; in the full graph mode also cond, switch, remat, checkify,
grad's aux and custom_vjp), and refuses it where outputs carry axes or shardings
(jit, vmap, pmap, scan, shard_map) and, in the simple modes, everywhere but
eval_shape. Each case runs on lens and, where installed, on flax.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from lens import errors
from lens import nnx as lnnx
from tests.helpers import on_lens_and_flax_nnx

BOTH = on_lens_and_flax_nnx()
X = jnp.ones(2)


def _cases(nnx, m, **mode):
    def cv():
        @nnx.custom_vjp
        def f(x):
            return (x**2).sum(), m

        f.defvjp(lambda x: (f(x), None), lambda res, g: (jnp.ones(2),))
        return f(X)[1]

    mesh = jax.make_mesh((1,), ("d",))
    return {
        "eval_shape": lambda: nnx.eval_shape(lambda: m, **mode),
        "cond": lambda: nnx.cond(True, lambda: m, lambda: m, **mode),
        "switch": lambda: nnx.switch(1, [lambda: m, lambda: m], **mode),
        "remat": lambda: nnx.remat(lambda: m, **mode)(),
        "checkify": lambda: nnx.checkify(lambda: m, **mode)()[1],
        "grad": lambda: nnx.grad(lambda x: ((x**2).sum(), m), has_aux=True, **mode)(X)[
            1
        ],
        "value_and_grad": lambda: nnx.value_and_grad(
            lambda x: ((x**2).sum(), m), has_aux=True, **mode
        )(X)[0][1],
        "custom_vjp": cv,
        "jit": lambda: nnx.jit(lambda: m, **mode)(),
        "vmap": lambda: nnx.vmap(lambda x: m, in_axes=0, out_axes=None, **mode)(
            jnp.ones((2, 2))
        ),
        "scan": lambda: nnx.scan(
            lambda c, x: (c, m), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0)
        )(X, jnp.ones((2, 2)))[1],
        "shard_map": lambda: nnx.shard_map(
            lambda: m, mesh=mesh, in_specs=(), out_specs=P()
        )(),
    }


# the transforms of the full graph mode: the first eight return the capture
# as a copy, the rest refuse it
FULL = ["eval_shape", "cond", "switch", "remat", "checkify", "grad"]
FULL += ["value_and_grad", "custom_vjp", "jit", "vmap", "scan", "shard_map"]
FULL_KEEPS = set(FULL[:8])


@BOTH
@pytest.mark.parametrize("name", FULL)
def test_full_graph_mode(nnx, name):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    run = _cases(nnx, m)[name]
    if name not in FULL_KEEPS:
        with pytest.raises(
            ValueError, match="^Cannot extract graph node from different trace level"
        ):
            run()
        return
    out = run()
    assert type(out) is type(m) and out is not m
    assert out.kernel is not m.kernel  # a copy, as flax.nnx returns it
    if name == "eval_shape":
        assert isinstance(out.kernel.get_value(), jax.ShapeDtypeStruct)
        assert out.kernel.get_value().shape == (2, 3)
    else:  # the values the function saw
        np.testing.assert_array_equal(out.kernel[...], m.kernel[...])


SIMPLE = ["eval_shape", "cond", "switch", "remat", "checkify", "grad", "jit", "vmap"]


@BOTH
@pytest.mark.parametrize("mode", [{"graph": False}, {"graph_updates": False}])
@pytest.mark.parametrize("name", SIMPLE)
def test_simple_modes_keep_it_only_in_eval_shape(nnx, name, mode):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    run = _cases(nnx, m, **mode)[name]
    if name == "eval_shape":
        out = run()
        assert out is not m and isinstance(out.kernel.get_value(), jax.ShapeDtypeStruct)
        return
    # flax.nnx names cond "switch" (its cond runs through switch); lens names
    # the transform called
    called = "(cond|switch)" if name == "cond" else name
    with pytest.raises(
        ValueError,
        match=f"^Cannot return captured Variable of type Param from nnx.{called}",
    ):
        run()


def test_errors_say_where_and_how():
    m = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    with pytest.raises(errors.CapturedOutputError, match="pass it as an argument"):
        lnnx.jit(lambda: m)()
    with pytest.raises(errors.CapturedOutputError, match="Found at path: output"):
        lnnx.jit(lambda: m, graph=False)()


@BOTH
def test_an_abstract_model_restored_from_a_pure_dict(nnx):
    # jaxgarden's BaseModel.load: an abstract copy of the model itself, filled
    # from a checkpoint's pure dict, merged into a new model
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    saved = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    target = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
    abstract = nnx.eval_shape(lambda: target)
    graphdef, abstract_state = nnx.split(abstract)
    nnx.replace_by_pure_dict(abstract_state, saved)
    restored = nnx.merge(graphdef, abstract_state)
    np.testing.assert_array_equal(restored.kernel[...], model.kernel[...])
    np.testing.assert_array_equal(restored.bias[...], model.bias[...])
    # the model captured is untouched
    assert not np.array_equal(target.kernel[...], model.kernel[...])


@BOTH
def test_an_argument_and_a_capture_together(nnx):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    other = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
    a, b = nnx.eval_shape(lambda x: (x, other), m)
    assert isinstance(a.kernel.get_value(), jax.ShapeDtypeStruct)
    assert isinstance(b.kernel.get_value(), jax.ShapeDtypeStruct)
    # an argument returned comes back as a new abstract object, its own
    # references kept; the caller's object is not changed
    a, k = nnx.eval_shape(lambda x: (x, x.kernel), m)
    assert a is not m and k is a.kernel
    assert isinstance(k.get_value(), jax.ShapeDtypeStruct)
    assert isinstance(m.kernel.get_value(), jax.Array)


@BOTH
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_grad_aux_returns_an_argument_as_itself(nnx, transform):
    # aux carries no spec of its own: the model (or its Variables) returned in
    # aux is the caller's object, not an alias lifted two ways
    class Box(nnx.Module):
        def __init__(self, x):
            self.x = x

    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))

    def loss(m):
        return (m(jnp.ones(3)) ** 2).sum(), (m, m.kernel, Box(m))

    t = getattr(nnx, transform)(loss, has_aux=True)
    out = t(m)
    aux = out[1] if transform == "grad" else out[0][1]
    grads = out[0] if transform == "grad" else out[1]
    assert aux[0] is m and aux[1] is m.kernel and aux[2].x is m
    assert grads["kernel"][...].shape == (3, 2)
