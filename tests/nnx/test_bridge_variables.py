"""lens.nnx.bridge.variables: Linen variables and boxes as nnx Variables and back
(to_nnx_var, to_linen_var, is_vanilla_variable, the whole-tree conversions), each
against flax.nnx's bridge."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nn as lnn
from lens import nnx as lnnx
from lens.nnx.bridge import variables as lbv

fnnx = pytest.importorskip("flax.nnx")
fnn = pytest.importorskip("flax.linen")
fbv = pytest.importorskip("flax.nnx.bridge.variables")

# metadata whose values are classes of each library: compared by name
_OWN = {"hijax", "ref", "eager_sharding"}


def _meta(v):
    out = {}
    for k, x in v.get_metadata().items():
        out[k] = x.__name__ if isinstance(x, type) else x
    return out


def _mesh():
    return jax.make_mesh(
        (2, 2), ("in", "out"), axis_types=(jax.sharding.AxisType.Auto,) * 2
    )


@pytest.mark.parametrize("kind", ["partitioned", "logical"])
def test_linen_boxes_become_variables_with_flax_metadata(kind):
    def box(nn):
        if kind == "partitioned":
            return nn.Partitioned(jnp.ones((4, 2)), names=("in", "out"))
        return nn.LogicallyPartitioned(
            jnp.ones((4, 2)), names=("a", "b"), rules=(("a", "in"), ("b", "out"))
        )

    with jax.set_mesh(_mesh()):
        ours = lbv.to_nnx_var("params", box(lnn))
        theirs = fbv.to_nnx_var("params", box(fnn))
        assert type(ours) is lnnx.Param
        assert _meta(ours) == _meta(theirs)
        back_ours, back_theirs = lbv.to_linen_var(ours), fbv.to_linen_var(theirs)
    assert type(back_ours).__name__ == type(back_theirs).__name__
    assert back_ours.names == back_theirs.names
    assert getattr(back_ours, "rules", None) == getattr(back_theirs, "rules", None)
    np.testing.assert_array_equal(back_ours.value, back_theirs.value)


def test_partition_rules_of_a_linen_box_reach_the_partition_spec():
    with jax.set_mesh(_mesh()):  # (an array made outside cannot be constrained)
        box = lnn.LogicallyPartitioned(
            jnp.ones((2,)), names=("alias",), rules=(("alias", "out"),)
        )
        v = lbv.to_nnx_var("params", box)
        spec = lnnx.get_partition_spec(lnnx.State({"b": v}))["b"].value
    assert v.sharding_rules == (("alias", "out"),)
    assert spec == jax.sharding.PartitionSpec("out")


def test_a_partitioned_box_without_a_mesh_keeps_its_names():
    # lens: no mesh to shard on, so only the names are kept (flax.nnx raises)
    v = lbv.to_nnx_var("params", lnn.Partitioned(jnp.ones(3), names=("x",)))
    assert v.out_sharding == ("x",) and v.eager_sharding is False
    box = lbv.to_linen_var(v)
    assert isinstance(box, lnn.Partitioned) and box.names == ("x",)


@pytest.mark.parametrize(
    "metadata", [{}, {"foo": 2}, {"on_set_hooks": ()}, {"on_set_hooks": (print,)}]
)
def test_is_vanilla_variable_matches_flax(metadata):
    ours = lbv.is_vanilla_variable(lnnx.Param(jnp.ones(2), **metadata))
    assert ours == fbv.is_vanilla_variable(fnnx.Param(jnp.ones(2), **metadata))
    assert ours == (not metadata or metadata == {"on_set_hooks": ()})


def test_a_variable_with_metadata_crosses_as_nnxmeta_and_back():
    v = lnnx.BatchStat(jnp.arange(3.0), note="keep")
    boxed = lbv.to_linen_var(v)
    assert isinstance(boxed, lbv.NNXMeta) and boxed.metadata == {"note": "keep"}
    back = lbv.to_nnx_var("batch_stats", boxed)
    assert type(back) is lnnx.BatchStat and back.note == "keep"
    np.testing.assert_array_equal(back.value, v.value)
    with pytest.raises(ValueError, match="Type stored in NNXMeta .* != type inferred"):
        lbv.to_nnx_var("params", boxed)
    assert lbv.to_linen_var(lnnx.Param(1.0)) == 1.0  # vanilla: the plain value


def test_sort_variable_types_puts_subclasses_first():
    class Mine(lnnx.Param):
        pass

    types = [lnnx.Variable, lnnx.Param, Mine, lnnx.BatchStat]
    assert lbv.sort_variable_types(types)[:2] == [Mine, lnnx.Param]
    assert lbv.sort_variable_types(types)[-1] is lnnx.Variable
    theirs = fbv.sort_variable_types([fnnx.Variable, fnnx.Param, fnnx.BatchStat])
    ours = lbv.sort_variable_types([lnnx.Variable, lnnx.Param, lnnx.BatchStat])
    assert [t.__name__ for t in ours] == [t.__name__ for t in theirs]


def _linen_vars():
    return {
        "params": {"dense": {"kernel": jnp.ones((2, 3)), "bias": jnp.zeros(3)}},
        "batch_stats": {"bn": {"mean": jnp.ones(3)}},
    }


def _shape(tree, nnx):
    return jax.tree.map(
        lambda v: (type(v).__name__, v.get_value().shape),
        tree,
        is_leaf=lambda x: isinstance(x, nnx.Variable),
    )


def test_linen_variables_become_one_tree_of_variables_as_in_flax():
    ours = lbv.linen_vars_to_nnx_attrs(_linen_vars())
    theirs = fbv.linen_vars_to_nnx_attrs(_linen_vars())
    assert _shape(ours, lnnx) == _shape(theirs, fnnx)
    back = lbv.nnx_attrs_to_linen_vars(ours)
    assert jax.tree.map(jnp.shape, back) == jax.tree.map(
        jnp.shape, fbv.nnx_attrs_to_linen_vars(theirs)
    )
    assert jax.tree.map(jnp.shape, back) == jax.tree.map(jnp.shape, _linen_vars())


def test_tree_conversions_refuse_clashes_and_plain_values():
    clash = {"params": {"a": jnp.ones(1)}, "batch_stats": {"a": jnp.ones(1)}}
    with pytest.raises(ValueError, match=r"^Found duplicate variable path \('a',\)"):
        lbv.linen_vars_to_nnx_attrs(clash)
    with pytest.raises(
        ValueError, match=r"^Cannot infer collection name from value: 1 \(at b/c\)"
    ):
        lbv.nnx_attrs_to_linen_vars({"b": {"c": 1}})


def test_get_col_name_reads_the_collection_of_a_key_path():
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(_linen_vars())[0]]
    assert sorted({lbv.get_col_name(p) for p in paths}) == ["batch_stats", "params"]
    assert lbv.get_col_name(paths[0]) == fbv.get_col_name(paths[0])
    with pytest.raises(ValueError, match="does not start with a collection name"):
        lbv.get_col_name((jax.tree_util.SequenceKey(0),))


def test_to_nnx_keeps_logical_rules_of_a_linen_module():
    dense = lnn.Dense(
        2,
        bias_init=lnn.with_logical_partitioning(
            lnn.initializers.zeros_init(), ("alias",), rules=(("alias", "out"),)
        ),
    )
    with jax.set_mesh(_mesh()):
        model = lnnx.bridge.ToNNX(dense, rngs=lnnx.Rngs(0)).lazy_init(jnp.ones((1, 4)))
        spec = lnnx.get_partition_spec(lnnx.state(model))["bias"].value
    assert model.bias.sharding_rules == (("alias", "out"),)
    assert spec == jax.sharding.PartitionSpec("out")
    y = model(jnp.ones((1, 4)))  # back to Linen as a LogicallyPartitioned box
    np.testing.assert_allclose(y, jnp.ones((1, 4)) @ model.kernel.value, rtol=1e-6)
