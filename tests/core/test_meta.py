"""Axis metadata: boxes survive vmap/scan; add_axis/remove_axis are inverses."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import PartitionSpec

from lens import errors, struct
from lens.core import apply, init, lift, meta
from lens.core import nn as core_nn


class Hint(struct.PyTreeNode, meta.AxisMetadata):
    """A user-defined box: an optimizer hint per axis."""

    value: object
    hints: tuple = struct.field(pytree_node=False)
    calls: tuple = struct.field(pytree_node=False, default=())

    def unbox(self):
        return self.value

    def replace_boxed(self, val):
        return self.replace(value=val)

    def add_axis(self, index, params):
        h = list(self.hints)
        h.insert(index, params.get("hint", "?"))
        return self.replace(hints=tuple(h), calls=self.calls + (("add", index),))

    def remove_axis(self, index, params):
        h = list(self.hints)
        h.pop(index)
        return self.replace(hints=tuple(h), calls=self.calls + (("remove", index),))


def hinted(scope, x):
    init_fn = lambda k, s: Hint(jax.nn.initializers.normal()(k, s), ("in", "out"))  # noqa: E731
    w = scope.param("w", init_fn, (x.shape[-1], 2))
    assert not isinstance(w, meta.AxisMetadata)  # unbox=True by default
    boxed = scope.get_variable("params", "w", unbox=False)
    assert isinstance(boxed, Hint) and boxed.hints == ("in", "out")
    return x @ w


def test_user_box_through_vmap_and_scan_with_metadata_params():
    vf = lift.vmap(
        hinted,
        variable_axes={"params": 1},
        split_rngs={"params": True},
        metadata_params={"hint": "ensemble"},
    )
    _, v = init(vf)(jax.random.key(0), jnp.ones((3, 4)))
    box = v["params"]["w"]
    assert isinstance(box, Hint) and box.hints == ("in", "ensemble", "out")
    assert box.value.shape == (4, 3, 2)
    # apply removes the axis on the way in (the inner assert sees ("in", "out")).
    assert apply(vf)(v, jnp.ones((3, 4))).shape == (3, 2)

    def body(scope, c, _):
        return hinted(scope, c) @ jnp.ones((2, 2)), None

    sf = lift.scan(
        body,
        variable_axes={"params": 0},
        split_rngs={"params": True},
        length=5,
        metadata_params={"hint": "layers"},
    )
    _, v = init(lambda s, x: sf(s, x, None))(jax.random.key(0), jnp.ones((1, 2)))
    assert v["params"]["w"].hints == ("layers", "in", "out")
    assert v["params"]["w"].value.shape == (5, 2, 2)


def test_partitioned_scan_over_layers_and_missing_name():
    def body(scope, c, _):
        k = scope.param(
            "kernel",
            meta.with_partitioning(
                jax.nn.initializers.lecun_normal(), ("embed", "mlp")
            ),
            (4, 4),
        )
        return c @ k, None

    def scanned(**metadata):
        return lift.scan(
            body,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=8,
            **metadata,
        )

    sf = scanned(metadata_params={meta.PARTITION_NAME: "layers"})
    _, v = init(lambda s, x: sf(s, x, None))(jax.random.key(0), jnp.ones((1, 4)))
    box = v["params"]["kernel"]
    assert box.names == ("layers", "embed", "mlp") and box.value.shape == (8, 4, 4)
    assert meta.get_partition_spec(v)["params"]["kernel"] == PartitionSpec(
        "layers", "embed", "mlp"
    )
    bad = scanned()
    with pytest.raises(errors.PartitionNameMissingError, match="metadata_params"):
        init(lambda s, x: bad(s, x, None))(jax.random.key(0), jnp.ones((1, 4)))
    renamed = scanned(metadata_params={meta.PARTITION_NAME: "blocks"})
    # Flax asserts the name; the error is an AssertionError and a ValueError
    with pytest.raises(errors.PartitionAxisMismatchError, match="'layers'.*'blocks'"):
        apply(lambda s, x: renamed(s, x, None))(v, jnp.ones((1, 4)))
    err = errors.PartitionAxisMismatchError(0, "layers", "blocks")
    assert isinstance(err, AssertionError) and isinstance(err, ValueError)


def test_variable_value_write_keeps_the_box():
    def f(scope):
        v = scope.variable(
            "stats", "m", lambda: meta.Partitioned(jnp.zeros(3), ("data",))
        )
        v.value = v.value + 1
        return v.value

    y, out = init(f)(jax.random.key(0))
    assert isinstance(out["stats"]["m"], meta.Partitioned)
    assert out["stats"]["m"].names == ("data",)
    assert jnp.array_equal(out["stats"]["m"].value, jnp.ones(3))


def test_meta_unbox_strips_boxes():
    tree = {"a": meta.Partitioned(jnp.ones(2), ("x",)), "b": jnp.zeros(1)}
    out = meta.unbox(tree)
    assert not any(
        isinstance(x, meta.AxisMetadata)
        for x in jax.tree_util.tree_leaves(out, is_leaf=meta.is_axis_metadata)
    )


def test_shape_check_sees_through_boxes():
    def f(scope, x):
        return core_nn.dense(
            scope,
            x,
            3,
            kernel_init=meta.with_partitioning(jax.nn.initializers.ones, (None, "m")),
        )

    _, v = init(f)(jax.random.key(0), jnp.ones((1, 2)))
    assert apply(f)(v, jnp.ones((1, 2))).shape == (1, 3)
    with pytest.raises(errors.ScopeParamShapeError):
        apply(f)(v, jnp.ones((1, 5)))


axis_names = st.one_of(st.none(), st.sampled_from(["data", "model", "layers", "embed"]))


@given(st.lists(axis_names, max_size=4), st.data())
def test_add_and_remove_axis_are_inverses(names, data):
    box = meta.Partitioned(jnp.zeros(()), tuple(names))
    i = data.draw(st.integers(0, len(names)))
    p = {meta.PARTITION_NAME: data.draw(axis_names)}
    assert box.add_axis(i, p).remove_axis(i, p) == box
    if names:
        j = data.draw(st.integers(0, len(names) - 1))
        q = {meta.PARTITION_NAME: names[j]}
        assert box.remove_axis(j, q).add_axis(j, q) == box


def test_the_designs_axis_name_key_and_partition_name_hook():
    # the design doc writes metadata_params={nn.Partitioned.AXIS_NAME: "layers"}
    assert meta.Partitioned.AXIS_NAME == meta.PARTITION_NAME
    assert "AXIS_NAME" not in {f.name for f in dataclasses.fields(meta.Partitioned)}
    box = meta.Partitioned(jnp.ones((2, 3)), ("a", "b"))
    params = {meta.Partitioned.AXIS_NAME: "layers"}
    assert box.add_axis(0, params).remove_axis(0, params) == box
    # past the end, the names between are None (as in Flax)
    assert meta.Partitioned(jnp.ones(2), ("a",)).add_axis(3, params).names == (
        "a",
        None,
        None,
        "layers",
    )

    class Stacked(meta.Partitioned):  # a subclass that names the axis itself
        def _get_partition_name(self, params):
            return params.get("stack", "stack")

    assert Stacked(jnp.ones(2), ("a",)).add_axis(0, {}).names == ("stack", "a")
