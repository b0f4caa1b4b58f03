"""nnx.grad and nnx.jit cases from flax's transforms_test and qwix: the gradient
of a Variable met twice in a pytree, and a jit that walks again after
set_attributes changed a static attribute."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx as fnnx

from lens import nnx


def _grads(lib, graph_updates):
    p1, p2 = lib.Param(10.0), lib.Param(20.0)
    m = {"a": [p1, p2], "b": p1}
    grads = lib.grad(
        lambda m: m["a"][0] + m["a"][1] + m["b"],
        graph=True,
        graph_updates=graph_updates,
    )(m)
    return m, grads


@pytest.mark.parametrize("graph_updates", [True, False])
def test_grad_of_a_pytree_holding_one_variable_twice_as_flax(graph_updates):
    m, grads = _grads(nnx, graph_updates)
    _, fgrads = _grads(fnnx, graph_updates)
    assert len(jax.tree.leaves(grads)) == len(jax.tree.leaves(fgrads))
    assert type(grads["b"]).__name__ == type(fgrads["b"]).__name__
    assert float(grads["a"][0][...]) == float(fgrads["a"][0][...]) == 2.0
    if graph_updates:  # the second reference gets an empty State
        assert isinstance(grads["b"], nnx.State) and not dict(grads["b"])
    nnx.update(m, nnx.state(grads, graph=True))
    assert m["a"][0] is m["b"]
    assert float(m["b"][...]) == 2.0 and float(m["a"][1][...]) == 1.0


class _Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.BatchStat(jnp.zeros(()))
        self.off = False

    def __call__(self, x):
        if not self.off:
            self.count[...] += 1
        return x * 2


def test_jit_sees_a_static_attribute_set_by_set_attributes():
    """qwix's static-range test: set_attributes turns the statistics update
    off between two calls of one jitted grad; the second call must not count."""
    m = _Counter()

    @nnx.jit
    def step(m, x):
        return nnx.grad(lambda m, x: jnp.sum(m(x)))(m, x)

    step(m, jnp.ones(()))
    assert float(m.count[...]) == 1.0
    m.set_attributes(off=True, raise_if_not_found=False)
    step(m, jnp.ones(()))
    assert float(m.count[...]) == 1.0
    m.set_attributes(off=False)
    step(m, jnp.ones(()))
    assert float(m.count[...]) == 2.0


def test_jit_partial_is_flax_simple_jit_partial_wrapped_and_its_trace_compiles():
    from lens.nnx.transforms import compilation

    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))
    f = nnx.jit_partial(lambda m, x: m(x), m)
    assert isinstance(f, compilation.SimpleJitPartialWrapped)
    assert isinstance(f, compilation.SimpleJitWrapped)
    traced = f.trace(x)
    assert isinstance(traced, compilation.SimplePartialTraced)
    assert traced.jit_wrapped is f and traced.traced.jaxpr is not None
    m.kernel[...] = m.kernel[...] * 2  # the compiled form reads the bound state
    assert jnp.allclose(traced.lower().compile()(x), m(x))


def test_simple_jit_wrapped_takes_flax_arguments_and_binds_partial_args():
    from lens.nnx.transforms import compilation

    counter = _Counter()
    f = compilation.SimpleJitWrapped(
        lambda m, x: m(x),
        None,  # in_shardings
        None,  # out_shardings
        None,  # static_argnums
        None,  # static_argnames
        None,  # donate_argnums
        None,  # donate_argnames
        False,  # keep_unused
        None,  # device
        None,  # backend
        False,  # inline
        (counter,),  # partial_args
        True,  # graph
        (),  # update_shardings
    )
    assert float(f(jnp.ones(()))) == 2.0
    assert float(counter.count[...]) == 1.0  # the update came back
    assert isinstance(f.trace(jnp.ones(())), compilation.SimpleTraced)
    assert f.partial_args == (counter,) and f.graph is True


def test_jit_trace_is_flax_traced_and_lowers_to_a_stage_taking_objects():
    from lens.nnx.transforms import compilation

    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))
    f = nnx.jit(lambda m, x: m(x))
    traced = f.trace(m, x)
    assert isinstance(traced, compilation.Traced) and traced.jit_wrapped is f
    assert traced.out_info is not None
    assert jnp.allclose(traced.lower().compile()(m, x), m(x))


def test_jit_returns_array_refs_as_flax_jit_does():
    """An argument reference comes back as itself, a new one as a new Ref;
    the cached second call does the same."""
    m = jax.new_ref(jnp.array(1.0))

    @nnx.jit(graph=True, graph_updates=True)
    def f(m):
        m[...] += 1.0
        return jax.new_ref(jnp.array(10.0)), m, m[...] * 2

    for step in (1, 2):
        new, same, doubled = f(m)
        assert same is m
        assert isinstance(new, jax.Ref) and new is not m
        assert float(new[...]) == 10.0
        assert float(m[...]) == 1.0 + step
        assert float(doubled) == 2.0 * (1.0 + step)


def test_jit_returns_an_object_that_holds_itself():
    """The outputs are searched for jax.Refs without flattening objects (one
    that refers to itself would never end)."""

    class Node(nnx.Module):
        def __init__(self):
            self.ref = nnx.data(None)

    @nnx.jit(graph=True, graph_updates=True)
    def f(m):
        m.ref = m
        return m

    m = Node()
    assert f(m) is m and m.ref is m
    assert f(m) is m and m.ref is m


@pytest.mark.parametrize("lib", [nnx, fnnx], ids=["lens", "flax"])
def test_jit_static_argnums_name_their_parameters_as_jax_jit(lib):
    """A static position may come by keyword or be left to its default (tunix's
    samplers call ``f(x, n, flag=True)`` with ``static_argnums=(1, 3)``)."""
    traces = []

    def f(x, n, y=None, flag=False):
        traces.append((n, flag))
        return x if flag else x * n

    g = lib.jit(f, static_argnums=(1, 3))
    x = jnp.ones(2)
    assert g(x, 2).tolist() == [2.0, 2.0]
    assert g(x, n=3).tolist() == [3.0, 3.0]
    assert g(x, 2, flag=True).tolist() == [1.0, 1.0]
    assert g(x, 2, None, True).tolist() == [1.0, 1.0]
    assert g(x, n=3).tolist() == [3.0, 3.0]  # cached: n=3 is part of the key
    assert traces == [(2, False), (3, False), (2, True), (2, True)]
    with pytest.raises(ValueError, match="Non-hashable static"):
        g(x, n=[1])


def test_jit_donate_argnums_name_their_parameters_as_jax_jit():
    def f(x, y):
        return x + y

    g = nnx.jit(f, donate_argnums=(1,))
    assert g.specs.donate_names == frozenset({"y"})
    assert g(jnp.ones(2), y=jnp.ones(2)).tolist() == [2.0, 2.0]
