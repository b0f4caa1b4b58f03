"""nnx.scan as flax.nnx's: traced once per argument structure, broadcast state per
mode, scanned state replaced inside the body (qwix's quantization), and the axis
name of variables made under a vmap with transform_metadata."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx as fnnx
from flax import struct as fstruct

from lens import errors, nnx, struct


@pytest.mark.parametrize("graph_updates", [True, False])
def test_scan_traces_its_body_once_for_the_same_structure(graph_updates):
    n = 0

    @nnx.scan(graph_updates=graph_updates)
    def f(count, x):
        nonlocal n
        n += 1
        return count + 1, x**2

    x = jnp.arange(5)
    count, y = f(jnp.array(0), x)
    count, y = f(count, x)
    assert n == 1
    assert int(count) == 10
    np.testing.assert_array_equal(y, x**2)
    f(count, jnp.arange(3.0))  # another dtype: another trace
    assert n == 2


@pytest.mark.parametrize("graph_updates", [True, False])
def test_scan_over_objects_traces_once_and_again_for_a_new_structure(graph_updates):
    n = 0

    class Foo(nnx.Module):
        def __init__(self, k):
            self.w = nnx.Param(jnp.arange(3 * k, dtype=jnp.float32).reshape(3, k))

    @nnx.scan(in_axes=(nnx.Carry, 0), graph_updates=graph_updates)
    def f(c, foo):
        nonlocal n
        n += 1
        foo.w[...] = foo.w[...] + 1
        return c + foo.w[...].sum(), None

    a, b = Foo(2), Foo(2)
    c1, _ = f(jnp.zeros(()), a)
    c2, _ = f(jnp.zeros(()), b)
    assert n == 1
    np.testing.assert_allclose(c1, np.arange(6).sum() + 6)
    np.testing.assert_allclose(c2, c1)
    np.testing.assert_allclose(a.w[...], np.arange(6).reshape(3, 2) + 1)
    b.extra = nnx.Param(jnp.ones((3,)))  # a new structure: traced again
    f(jnp.zeros(()), b)
    assert n == 2


def _broadcast_keys(lib):
    rngs = lib.Rngs(params=jax.random.split(jax.random.key(0), 3), dropout=1)

    @lib.scan(in_axes=(lib.Carry, lib.StateAxes({"params": 0, ...: None})), length=3)
    def f(_, rngs):
        return (), (rngs.params(), rngs.dropout())

    _, (params, dropout) = f((), rngs)
    return jax.random.key_data(params), jax.random.key_data(dropout), rngs


def test_scan_broadcast_state_is_the_same_at_every_step_as_in_flax():
    """In the graph-updates mode a broadcast stream gives every step the same
    key and its count is not advanced (flax.nnx drops the steps' writes)."""
    params, dropout, rngs = _broadcast_keys(nnx)
    fparams, fdropout, frngs = _broadcast_keys(fnnx)
    assert not np.array_equal(params[0], params[1])
    assert np.array_equal(dropout[0], dropout[1])
    assert np.array_equal(dropout[1], dropout[2])
    np.testing.assert_array_equal(params, fparams)
    np.testing.assert_array_equal(dropout, fdropout)
    assert int(rngs.dropout.count[...]) == int(frngs.dropout.count[...]) == 0


def test_scan_simple_mode_carries_broadcast_state_between_steps():
    v = nnx.Variable(jnp.array(1))

    @nnx.scan(in_axes=(None, nnx.Carry, 0), graph=False, graph_updates=False)
    def f(v, carry, x):
        v[...] = v[...] + 1
        return carry + x, carry

    carry, ys = f(v, jnp.array(0), jnp.arange(3))
    assert int(v[...]) == 4
    assert int(carry) == 3
    np.testing.assert_array_equal(ys, [0, 0, 1])


def _quantized_stack(lib, struct_lib):
    """qwix's PTQ pattern: the first call of each scanned layer replaces its
    kernel Param by a pytree (a registered data type) of new Params."""

    @struct_lib.dataclass
    class WithAux:
        array: dict
        how: str = struct_lib.field(pytree_node=False)

    lib.register_data_type(WithAux)

    class Stack(lib.Module):
        def __init__(self, rngs):
            @lib.split_rngs(splits=2)
            @lib.vmap(axis_size=2)
            def make(rngs):
                return lib.Linear(4, 4, rngs=rngs)

            self.layers = make(rngs)

        def __call__(self, x):
            @lib.scan(out_axes=lib.Carry)
            def step(x, layer):
                if isinstance(layer.kernel, lib.Param):
                    k = layer.kernel
                    q = k.replace(jnp.round(k[...] * 10))
                    s = k.replace(jnp.full((1, 4), 0.1))
                    layer.kernel = WithAux({"q": q, "s": s}, "int8")  # pyright: ignore[reportCallIssue]
                a = layer.kernel.array
                return x @ (a["q"][...] * a["s"][...]) + layer.bias[...]

            return step(x, self.layers)

    m = Stack(lib.Rngs(0))
    x = jnp.ones((3, 4))
    return m, m(x), m(x)


def test_scan_body_may_replace_a_scanned_param_with_a_pytree_as_in_flax():
    m, y1, y2 = _quantized_stack(nnx, struct)
    fm, fy1, fy2 = _quantized_stack(fnnx, fstruct)
    kernel = m.layers.kernel
    assert type(kernel).__name__ == "WithAux" and kernel.how == "int8"
    assert isinstance(kernel.array["q"], nnx.Param)
    assert kernel.array["q"].shape == (2, 4, 4)
    assert kernel.array["s"].shape == (2, 1, 4)
    np.testing.assert_allclose(
        kernel.array["q"][...], fm.layers.kernel.array["q"][...], atol=1e-6
    )
    np.testing.assert_allclose(y1, fy1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y2, y1, rtol=1e-5, atol=1e-5)


def test_scan_refuses_a_body_that_adds_broadcast_state():
    class Foo(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones((3,)))

    foo = Foo()

    @nnx.scan(in_axes=(nnx.Carry, None), length=2)
    def f(c, foo):
        foo.extra = nnx.BatchStat(jnp.zeros(()))
        return c, None

    with pytest.raises(errors.GraphStructureError, match="broadcast state"):
        f(jnp.zeros(()), foo)
    assert not hasattr(foo, "extra")  # the caller's object is untouched
    np.testing.assert_array_equal(foo.w[...], np.ones(3))


def test_vmap_init_puts_the_axis_name_on_the_variables_it_makes():
    axes = nnx.StateAxes({(nnx.Param, nnx.RngState): 0, ...: None})

    class MLP(nnx.Module):
        @nnx.split_rngs(splits=5)
        @nnx.vmap(in_axes=(axes, axes), transform_metadata={nnx.PARTITION_NAME: "l"})
        def __init__(self, rngs):
            init = nnx.with_metadata(
                nnx.initializers.lecun_normal(), out_sharding=("din", "dout")
            )
            self.linear = nnx.Linear(3, 3, kernel_init=init, rngs=rngs)

    mesh = jax.make_mesh((1, 1, 1), ("l", "din", "dout"))
    with jax.set_mesh(mesh):
        m = MLP(rngs=nnx.Rngs(0))
    assert m.linear.kernel.shape == (5, 3, 3)
    assert m.linear.kernel.out_sharding == ("l", "din", "dout")
