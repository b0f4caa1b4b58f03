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
