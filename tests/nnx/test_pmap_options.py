"""nnx.pmap's static_broadcasted_argnums and donate_argnums, as jax.pmap's (and
flax.nnx's): static arguments are hashable Python values every device sees as
constants; donated arguments' buffers are given to the program."""

import jax
import jax.numpy as jnp
import pytest

from lens import nnx

N = 4


class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones((N, 3)))


def test_a_static_argument_is_a_python_value_in_the_body():
    seen = []

    @nnx.pmap(in_axes=(0, None, None), static_broadcasted_argnums=(2,), axis_size=N)
    def f(m, x, k):
        seen.append(type(k))
        return m.w[...] * x * k  # k is the int itself: range(k) would work too

    m = Model()
    assert float(f(m, 2.0, 3)[0, 0]) == 6.0
    assert float(f(m, 2.0, 5)[0, 0]) == 10.0  # another value, another program
    assert seen and all(t is int for t in seen)


def test_in_axes_for_all_arguments_skip_the_static_ones():
    f = nnx.pmap(
        lambda m, scale: m.w[...] * len(scale), static_broadcasted_argnums=1
    )  # in_axes=0 would map a string: not for a static argument
    assert f(Model(), "abc").shape == (N, 3)
    assert float(f(Model(), "abc")[0, 0]) == 3.0


def test_static_arguments_follow_jax_pmaps_rules():
    f = nnx.pmap(lambda m, k: m.w[...], in_axes=(0, None), static_broadcasted_argnums=1)
    with pytest.raises(ValueError, match=r"^Non-hashable static arguments are not"):
        f(Model(), [1, 2])
    g = nnx.pmap(lambda m: m.w[...], static_broadcasted_argnums=3)
    with pytest.raises(ValueError, match=r"^pmapped function has static_broadcasted"):
        g(Model())


def test_donated_arguments_give_their_buffers_and_the_module_gets_the_new_ones():
    m = Model()
    m.w[...] = jax.pmap(lambda x: x)(jnp.ones((N, 3)))  # laid out over the devices
    before = m.w[...]

    @nnx.pmap(in_axes=(0, None), donate_argnums=(0,))
    def step(m, x):
        m.w[...] = m.w[...] + x
        return x

    step(m, 1.0)
    assert before.is_deleted()  # donated, as under jax.pmap
    assert float(m.w[...][0, 0]) == 2.0


def test_only_the_donated_arguments_are_donated():
    a, b = Model(), Model()
    a.w[...] = jax.pmap(lambda x: x)(jnp.ones((N, 3)))
    b.w[...] = jax.pmap(lambda x: x)(jnp.ones((N, 3)))
    kept, given = a.w[...], b.w[...]
    out = nnx.pmap(lambda a, b: a.w[...] + b.w[...], donate_argnums=1)(a, b)
    assert given.is_deleted() and not kept.is_deleted()
    assert float(out[0, 0]) == 2.0
