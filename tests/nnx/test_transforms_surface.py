"""flax.nnx.transforms names lens gives with flax's signatures and behaviour:
CustomVjp (generic), SimpleCustomVjp, CustomVjpFnWrapper, Broadcasted,
ValueMetadata, LiftedModule."""

import inspect
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
from flax.nnx.transforms import autodiff as fautodiff

from lens import nnx
from lens.nnx._transforms.lifted import to_value_metadata, to_variable
from lens.nnx.transforms import autodiff, iteration, transforms
from lens.nnx.transforms.general import lift_args


def _params(cls):
    return list(inspect.signature(cls).parameters)


def test_custom_vjp_classes_take_flax_arguments():
    assert _params(autodiff.SimpleCustomVjp) == _params(fautodiff.SimpleCustomVjp)
    assert _params(autodiff.CustomVjpFnWrapper) == _params(fautodiff.CustomVjpFnWrapper)
    assert autodiff.CustomVjp[int] is not None  # generic, as flax's


def test_custom_vjp_in_a_simple_mode_is_a_simple_custom_vjp():
    def f(x):
        return jnp.sin(x)

    g = nnx.custom_vjp(f, graph=False, graph_updates=False)
    assert isinstance(g, autodiff.SimpleCustomVjp) and g.graph is False
    g.defvjp(lambda x: (jnp.sin(x), x), lambda res, out_g: (2.0 * out_g,))
    np.testing.assert_allclose(jax.grad(g)(1.0), 2.0)
    assert not isinstance(nnx.custom_vjp(f), autodiff.SimpleCustomVjp)


def test_custom_vjp_fn_wrapper_runs_the_function_on_the_rebuilt_arguments():
    class Counter(nnx.Module):
        def __init__(self):
            self.n = nnx.BatchStat(jnp.array(1.0))

    m = Counter()
    skel, entries, _ = lift_args("custom_vjp", (m, 3.0))
    held = [False, True]  # the counter differentiated, the number held

    def f(m, x):
        m.n[...] = m.n[...] * x
        return m.n[...] + 1

    nodedefs: deque = deque()
    wrapper = autodiff.CustomVjpFnWrapper(
        f, (1,), "custom_vjp_f", [skel, held, entries], nodedefs
    )
    graph, out, changed = wrapper([jnp.array(2.0)], [3.0])
    np.testing.assert_allclose(graph[0], 6.0)
    np.testing.assert_allclose(out, 7.0)
    assert len(nodedefs) == 1 and nodedefs[0] is None  # no structure change
    assert float(m.n[...]) == 1.0  # the caller's object is untouched


def test_broadcasted_is_a_pytree_of_its_data():
    b = iteration.Broadcasted(data=[jnp.ones(2), jnp.zeros(3)])
    leaves = jax.tree.leaves(b)
    assert len(leaves) == 2
    doubled = jax.tree.map(lambda a: a + 1, b)
    assert isinstance(doubled, iteration.Broadcasted)
    np.testing.assert_array_equal(doubled.data[1], np.ones(3))


def test_value_metadata_carries_a_variable_through_eval_shape():
    p = nnx.Param(jnp.ones((2, 3)), tag="kernel")
    vm = to_value_metadata({"w": p})["w"]
    assert isinstance(vm, transforms.ValueMetadata) and vm.var_type is nnx.Param
    assert jax.tree.leaves(vm)[0].shape == (2, 3)
    shapes = jax.eval_shape(lambda t: t, vm)
    assert isinstance(shapes, transforms.ValueMetadata)
    assert shapes.value.shape == (2, 3) and shapes.metadata["tag"] == "kernel"
    back = to_variable(vm)
    assert type(back) is nnx.Param and back.get_metadata("tag") == "kernel"
    np.testing.assert_array_equal(back[...], np.ones((2, 3)))


class _Jitted(transforms.LiftedModule):
    """Calls its submodule (or a method of it) through nnx.jit."""

    def __init__(self, inner):
        self.inner = inner

    @property
    def _submodule(self):
        return self.inner

    def _call(self, accessor, *args):
        return nnx.jit(lambda m, *a: accessor(m)(*a))(self.inner, *args)


class _Scaler(nnx.Module):
    def __init__(self):
        self.s = nnx.Param(jnp.array(3.0))
        self.calls = nnx.BatchStat(jnp.array(0))

    def __call__(self, x):
        self.calls[...] += 1
        return x * self.s[...]

    def half(self, x):
        return x * self.s[...] / 2


def test_lifted_module_calls_its_submodule_through_the_transform():
    lifted = _Jitted(_Scaler())
    np.testing.assert_allclose(lifted(jnp.array(2.0)), 6.0)
    np.testing.assert_allclose(lifted.call.half(jnp.array(2.0)), 3.0)
    assert int(lifted.inner.calls[...]) == 1  # the update came back
    nested = _Jitted(_Jitted(_Scaler()))
    np.testing.assert_allclose(nested.call.half(jnp.array(4.0)), 6.0)
