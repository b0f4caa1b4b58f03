"""A State and its Variables as pytrees: the keyless flatten jit uses per call
agrees with the keyed one, and unflattening rebuilds what State() builds."""

import jax
import jax.numpy as jnp

from lens import nnx


def _state():
    model = nnx.Sequential(
        nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(1))
    )
    return nnx.state(model)


def test_keyless_and_keyed_flatten_give_the_same_leaves_and_structure():
    state = _state()
    leaves, treedef = jax.tree_util.tree_flatten(state)
    with_path, treedef_k = jax.tree_util.tree_flatten_with_path(state)
    assert treedef == treedef_k
    assert all(a is b for a, (_, b) in zip(leaves, with_path, strict=True))
    # mixed key types (ints and strings at one level) keep their order
    mixed = nnx.State(
        {"b": jnp.ones(1), 1: jnp.zeros(1), "a": jnp.full(1, 2.0), 0: jnp.ones(2)}
    )
    keys = [p[0].key for p, _ in jax.tree_util.tree_flatten_with_path(mixed)[0]]
    assert keys == [0, 1, "a", "b"]
    assert [x.shape for x in jax.tree.leaves(mixed)] == [(2,), (1,), (1,), (1,)]


def test_unflatten_rebuilds_states_variables_and_nested_mappings():
    state = _state()
    again = jax.tree.map(lambda x: x * 2, state)
    assert type(again) is nnx.State and type(again["layers"][0]) is nnx.State
    kernel, before = again["layers"][0]["kernel"], state["layers"][0]["kernel"]
    assert type(kernel) is nnx.Param and kernel.metadata == before.metadata
    assert jnp.array_equal(kernel[...], before[...] * 2)
    # a leaf mapped to a plain dict becomes a State, as State() makes it
    boxed = jax.tree.map(lambda x: {"v": x}, nnx.State({"w": jnp.ones(2)}))
    assert type(boxed["w"]) is nnx.State and jnp.array_equal(
        boxed["w"]["v"], jnp.ones(2)
    )
    # through jit, both ways
    out = jax.jit(lambda s: s)(state)
    assert jax.tree.structure(out) == jax.tree.structure(state)


def test_a_variable_with_metadata_round_trips_through_jit():
    v = nnx.Param(jnp.ones(3), note="kept", tags=["a", "b"])  # a list: unhashable
    out = jax.jit(lambda v: v)(v)
    assert type(out) is nnx.Param and out.metadata == v.metadata
    assert out.note == "kept"


def test_a_subclass_new_is_called_by_merge_and_unflatten():
    # frameworks subclass Variable; its _new runs where Variables are rebuilt
    made = []

    class Tracked(nnx.Param):
        @classmethod
        def _new(cls, value, metadata):
            made.append(cls)
            return super()._new(value, metadata)

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    model.extra = Tracked(jnp.ones(3))
    graphdef, state = nnx.split(model)
    made.clear()
    merged = nnx.merge(graphdef, nnx.to_pure_dict(state))  # arrays: new Variables
    assert type(merged.extra) is Tracked and made.count(Tracked) == 1
    made.clear()
    again = jax.tree.map(lambda x: x, Tracked(jnp.zeros(2)))
    assert type(again) is Tracked and made == [Tracked]
