"""nnx.shard_map on 8 CPU devices, against flax.nnx as the oracle."""

import flax.nnx as fnnx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from lens import nnx

LIBS = [nnx, fnnx]


def _mesh(name):
    assert jax.device_count() >= 8, "tests/conftest.py sets 8 virtual CPU devices"
    return jax.sharding.Mesh(jax.local_devices()[:8], (name,))


def _data_parallel(lib):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    x = jnp.arange(64.0).reshape(32, 2)

    @lib.shard_map(
        mesh=_mesh("data"), in_specs=(P(None), P("data")), out_specs=P("data")
    )
    def f(m, x):
        assert x.shape == (4, 2)  # each device sees its shard
        return m(x)

    return f(m, x)


def test_data_parallel_matches_flax_and_shards_the_output():
    y, y_flax = (_data_parallel(lib) for lib in LIBS)
    np.testing.assert_allclose(y, y_flax, rtol=1e-6)
    assert y.sharding.spec == P("data")


def _tensor_parallel(lib):
    class MLP(lib.Module):
        def __init__(self, rngs):
            self.linear1 = lib.Linear(2, 64, use_bias=False, rngs=rngs)
            self.linear2 = lib.Linear(64, 3, use_bias=False, rngs=rngs)

        def __call__(self, x):
            return self.linear2(jax.nn.relu(self.linear1(x)))

    def ends_with(*suffix):
        return lambda path, value: path[-len(suffix) :] == suffix

    m = MLP(lib.Rngs(0))
    spec = lib.StateSharding(
        {
            ends_with("linear1", "kernel"): P(None, "model"),
            ends_with("linear2", "kernel"): P("model", None),
        }
    )
    shapes = {}

    @lib.shard_map(mesh=_mesh("model"), in_specs=(spec, P()), out_specs=P())
    def f(m, x):
        shapes["k1"], shapes["k2"] = m.linear1.kernel.shape, m.linear2.kernel.shape
        return jax.lax.psum(m(x), "model")

    x = jnp.ones((32, 2))
    return f(m, x), m(x), shapes


def test_state_sharding_splits_each_kernel_on_its_own_axis():
    (y, full, shapes), (y_flax, _, shapes_flax) = (
        _tensor_parallel(lib) for lib in LIBS
    )
    assert shapes == shapes_flax == {"k1": (2, 8), "k2": (8, 3)}
    np.testing.assert_allclose(y, full, rtol=1e-5)
    np.testing.assert_allclose(y, y_flax, rtol=1e-5)


def test_updates_inside_come_back_with_their_input_spec():
    class Counter(nnx.Module):
        def __init__(self):
            self.count = nnx.BatchStat(jnp.arange(8.0))

    c = Counter()

    @nnx.shard_map(mesh=_mesh("d"), in_specs=(P("d"),), out_specs=P())
    def inc(c):
        c.count.value = c.count.value + jax.lax.axis_index("d")
        return jnp.zeros(())

    inc(c)
    np.testing.assert_array_equal(c.count.value, 2 * np.arange(8.0))
    assert c.count.value.sharding.spec == P("d")


def test_spec_count_mismatch_names_the_fix():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    f = nnx.shard_map(
        lambda m, x: m(x), mesh=_mesh("d"), in_specs=(P(),), out_specs=P()
    )
    with pytest.raises(ValueError, match=r"in_specs has 1 entries for 2 arguments"):
        f(m, jnp.ones((8, 2)))


def test_state_sharding_without_a_match_names_the_variable():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    spec = nnx.StateSharding({"nothing": P()})
    f = nnx.shard_map(
        lambda m: m.kernel.sum(), mesh=_mesh("d"), in_specs=(spec,), out_specs=P()
    )
    with pytest.raises(ValueError, match=r"^args\[0\]\.bias: StateSharding"):
        f(m)


def _pmapped(lib):
    @lib.split_rngs(splits=8)
    @lib.pmap(in_axes=0, out_axes=0, axis_size=8)
    def make(rngs):
        return lib.Linear(2, 3, rngs=rngs)

    model = make(lib.Rngs(0))

    @lib.pmap(in_axes=(0, None), axis_name="d")
    def forward(m, x):
        return jax.lax.pmean(m(x), "d")

    return model, forward(model, jnp.ones((1, 2)))


def test_pmap_builds_and_runs_per_device_models_like_flax():
    (lm, ly), (fm, fy) = _pmapped(nnx), _pmapped(fnnx)
    assert lm.kernel.shape == (8, 2, 3)
    np.testing.assert_allclose(lm.kernel.value, fm.kernel.get_value(), rtol=1e-6)
    np.testing.assert_allclose(ly, fy, rtol=1e-5)
    # every device's mean is the same
    np.testing.assert_allclose(ly, np.broadcast_to(ly[:1], ly.shape), rtol=1e-6)
    # static_broadcasted_argnums, donate_argnums: tests/nnx/test_pmap_options.py
