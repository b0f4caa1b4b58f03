"""Axis metadata end to end: boxes, logical rules, and real sharding on 8 CPU devices."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from lens import errors, nn

KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def mesh():
    assert jax.device_count() >= 8, "tests/conftest.py sets 8 virtual CPU devices"
    return jax.make_mesh((2, 4), ("data", "model"))


def test_seed_example_shapes_and_sharding_specs():
    partitioned_dense = nn.Dense(
        8,
        kernel_init=nn.with_partitioning(
            nn.initializers.lecun_normal(), (None, "data")
        ),
    )
    variables = partitioned_dense.init(KEY, jnp.ones((4,)))
    shaped = jax.tree.map(np.shape, variables)
    assert shaped == {
        "params": {
            "kernel": nn.Partitioned(value=(4, 8), names=(None, "data")),
            "bias": (8,),
        }
    }
    assert (
        repr(shaped["params"]["kernel"])
        == "Partitioned(value=(4, 8), names=(None, 'data'), mesh=None)"  # Flax's
    )

    def to_sharding_spec(x):
        if isinstance(x, nn.Partitioned):
            return PartitionSpec(*x.names)
        else:
            # fully replicated
            return PartitionSpec()

    specs = jax.tree.map(
        to_sharding_spec, variables, is_leaf=lambda x: isinstance(x, nn.Partitioned)
    )
    assert specs == {
        "params": {"kernel": PartitionSpec(None, "data"), "bias": PartitionSpec()}
    }
    assert nn.get_partition_spec(variables) == specs


def test_partitioned_box_basics():
    box = nn.Partitioned(jnp.ones((2, 3)), ("data", None))
    assert box == nn.Partitioned(box.value, ("data", None))
    assert box.replace(names=(None, "model")).names == (None, "model")
    assert box.unbox() is box.value
    assert box.add_axis(0, {nn.PARTITION_NAME: "layers"}).names == (
        "layers",
        "data",
        None,
    )
    with pytest.raises(errors.PartitionNameMissingError, match="metadata_params"):
        box.add_axis(0, {})


def test_modules_see_plain_arrays_unless_unbox_false():
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            k = self.param(
                "k", nn.with_partitioning(nn.initializers.ones, ("a", "b")), (2, 2)
            )
            assert not isinstance(k, nn.Partitioned)
            boxed = self.get_variable("params", "k")  # the stored box, as in Flax
            assert isinstance(boxed, nn.Partitioned)
            v = self.variable(
                "stats", "s", lambda: nn.Partitioned(jnp.zeros(2), ("a",)), unbox=False
            )
            assert isinstance(v.value, nn.Partitioned)
            return x @ k

    M().init(KEY, jnp.ones((1, 2)))


def test_boxes_survive_vmap_and_scan_over_layers():
    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x, _):
            k = self.param(
                "kernel",
                nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp")),
                (4, 4),
            )
            return x @ k, None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            S = nn.scan(
                Layer,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=8,
                metadata_params={nn.PARTITION_NAME: "layers"},
            )
            return S()(x, None)[0]

    v = Stack().init(KEY, jnp.ones((2, 4)))
    box = v["params"]["ScanLayer_0"]["kernel"]
    assert box.names == ("layers", "embed", "mlp") and box.value.shape == (8, 4, 4)
    assert Stack().apply(v, jnp.ones((2, 4))).shape == (2, 4)

    class Ens(nn.Module):
        @nn.compact
        def __call__(self, x):
            V = nn.vmap(
                lambda m, x: m(x, None)[0],
                variable_axes={"params": 0},
                split_rngs={"params": True},
                metadata_params={nn.PARTITION_NAME: "ensemble"},
            )
            return V(Layer(), x)

    v = Ens().init(KEY, jnp.ones((3, 4)))
    assert v["params"]["Layer_0"]["kernel"].names == ("ensemble", "embed", "mlp")


def test_optax_state_inherits_the_boxes():
    model = nn.Dense(
        8,
        kernel_init=nn.with_partitioning(
            nn.initializers.lecun_normal(), (None, "model")
        ),
    )
    params = model.init(KEY, jnp.ones((1, 4)))["params"]
    state = optax.adam(1e-3).init(params)
    mu = state[0].mu["kernel"]
    assert isinstance(mu, nn.Partitioned) and mu.names == (None, "model")
    assert nn.get_partition_spec(state[0].nu)["kernel"] == PartitionSpec(None, "model")


class Block(nn.Module):
    """A transformer block annotated with logical axis names."""

    heads: int = 4
    embed: int = 16
    mlp: int = 32

    @nn.compact
    def __call__(self, x):
        lp = nn.with_logical_partitioning
        h = nn.LayerNorm(
            scale_init=lp(nn.initializers.ones, ("embed",)),
            bias_init=lp(nn.initializers.zeros, ("embed",)),
        )(x)
        h = nn.SelfAttention(
            num_heads=self.heads,
            kernel_init=lp(nn.initializers.lecun_normal(), ("embed", "heads", "kv")),
        )(h)
        x = x + h
        h = nn.Dense(
            self.mlp,
            kernel_init=lp(nn.initializers.lecun_normal(), ("embed", "mlp")),
            bias_init=lp(nn.initializers.zeros, ("mlp",)),
        )(x)
        h = nn.with_logical_constraint(nn.gelu(h), ("batch", "length", "mlp"))
        h = nn.Dense(
            self.embed,
            kernel_init=lp(nn.initializers.lecun_normal(), ("mlp", "embed")),
            bias_init=lp(nn.initializers.zeros, ("embed",)),
        )(h)
        return x + h


RULES = [
    ("batch", "data"),
    ("embed", None),
    ("mlp", "model"),
    ("heads", "model"),
    ("kv", None),
    ("length", None),
]


def test_logical_rules_resolution():
    with nn.logical_axis_rules(RULES):
        assert nn.logical_to_mesh_axes(("embed", "mlp")) == PartitionSpec(None, "model")
        # a mesh axis shards one dimension only: 'heads' gets nothing after 'mlp'
        assert nn.logical_to_mesh_axes(("mlp", "heads")) == PartitionSpec("model", None)
        assert nn.logical_to_mesh_axes(("unknown",)) == PartitionSpec(None)
    assert nn.get_logical_axis_rules() == ()
    with pytest.raises(ValueError, match="more than once"):
        nn.logical_to_mesh_axes(("embed", "embed"), RULES)


def test_jit_init_with_shardings_from_the_boxes(mesh):
    model = nn.Dense(
        8,
        kernel_init=nn.with_partitioning(
            nn.initializers.lecun_normal(), ("data", "model")
        ),
    )
    x = jnp.ones((4, 6))
    abstract = jax.eval_shape(model.init, KEY, x)
    shardings = nn.get_sharding(abstract, mesh)
    variables = jax.jit(model.init, out_shardings=shardings)(KEY, x)
    kernel = variables["params"]["kernel"]
    assert kernel.value.sharding.spec == PartitionSpec("data", "model")
    assert kernel.value.sharding.mesh.shape == {"data": 2, "model": 4}
    assert variables["params"]["bias"].sharding.spec == PartitionSpec()
    # same values as an unsharded init
    np.testing.assert_allclose(
        kernel.value, model.init(KEY, x)["params"]["kernel"].value, rtol=1e-6
    )


def test_sharded_optax_train_step_keeps_sharding():
    # Auto (GSPMD) axes: the partitioner propagates shardings through contractions.
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))
    model = Block()
    x = jax.random.normal(KEY, (8, 4, 16))
    with jax.set_mesh(mesh), nn.logical_axis_rules(RULES):
        abstract = jax.eval_shape(model.init, KEY, x)
        specs = nn.get_partition_spec(abstract)
        shardings = nn.get_sharding(abstract, mesh)
        # logical specs, as in Flax; the rules map them to the mesh
        assert specs["params"]["Dense_0"]["kernel"] == PartitionSpec("embed", "mlp")
        mesh_specs = nn.logical_to_mesh_sharding(specs, mesh, RULES)
        assert mesh_specs["params"]["Dense_0"]["kernel"].spec == PartitionSpec(
            None, "model"
        )
        assert shardings["params"]["SelfAttention_0"]["query"][
            "kernel"
        ].spec == PartitionSpec(None, "model", None)
        variables = jax.jit(model.init, out_shardings=shardings)(KEY, x)
        params = variables["params"]
        tx = optax.adam(1e-3)
        opt_state = jax.jit(tx.init)(params)

        @jax.jit
        def step(params, opt_state, x):
            def loss(p):
                return jnp.mean(model.apply({"params": p}, x) ** 2)

            value, grads = jax.value_and_grad(loss)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, value

        x = jax.device_put(x, NamedSharding(mesh, PartitionSpec("data")))
        params2, opt_state2, loss = step(params, opt_state, x)
    k = params2["Dense_0"]["kernel"]
    assert isinstance(k, nn.LogicallyPartitioned)
    assert k.value.sharding.spec == PartitionSpec(None, "model")
    assert opt_state2[0].mu["Dense_0"]["kernel"].value.sharding.spec == PartitionSpec(
        None, "model"
    )
    assert np.isfinite(float(loss))


flinen = pytest.importorskip("flax.linen")


def _block(fnn):
    """The same block written against ``fnn`` (flax.linen or lens.nn)."""

    class Block(fnn.Module):
        @fnn.compact
        def __call__(self, x):
            lp = fnn.with_logical_partitioning
            h = fnn.SelfAttention(
                num_heads=4,
                kernel_init=lp(
                    fnn.initializers.lecun_normal(), ("embed", "heads", "kv")
                ),
            )(x)
            h = fnn.Dense(
                32,
                kernel_init=lp(fnn.initializers.lecun_normal(), ("embed", "mlp")),
                bias_init=lp(fnn.initializers.zeros, ("mlp",)),
            )(x + h)
            return fnn.Dense(
                16,
                kernel_init=fnn.with_partitioning(
                    fnn.initializers.lecun_normal(), ("model", None)
                ),
            )(h)

    return Block


def _flax_block():
    return _block(flinen), _block(nn)


def test_same_partition_specs_as_flax():
    FBlock, LBlock = _flax_block()
    x = jnp.ones((2, 4, 16))
    f_specs = flinen.get_partition_spec(jax.eval_shape(FBlock().init, KEY, x))
    l_specs = nn.get_partition_spec(jax.eval_shape(LBlock().init, KEY, x))
    as_tuples = lambda t: jax.tree.map(
        tuple, dict(t), is_leaf=lambda s: isinstance(s, PartitionSpec)
    )
    assert as_tuples(l_specs) == as_tuples(f_specs)  # logical specs, boxes alike
    assert as_tuples(nn.logical_to_mesh(l_specs, RULES)) == as_tuples(
        flinen.logical_to_mesh(f_specs, RULES)
    )
