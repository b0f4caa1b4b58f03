"""The node registry of the graph API (flax.nnx's ``register_graph_node_type``,
``register_pytree_node_type``, ``get_node_impl`` and friends): a user type walked
by split/merge/state/update/pop and the transforms, checked against flax.nnx."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _box_type(nnx):
    """A fresh plain class registered as a graph node (attributes in vars)."""

    class Box:
        def __init__(self, **kw):
            vars(self).update(kw)

    nnx.graphlib.register_graph_node_type(
        Box,
        flatten=lambda b: (sorted(vars(b).items()), None),
        set_key=lambda b, k, v: setattr(b, k, v),
        pop_key=lambda b, k: vars(b).pop(k),
        create_empty=lambda _: Box(),
        clear=lambda b: vars(b).clear(),
        init=lambda b, items: vars(b).update(items),
    )
    return Box


def _pair_type(nnx):
    """A fresh immutable class registered as a pytree node."""

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    nnx.graphlib.register_pytree_node_type(
        Pair,
        flatten=lambda p: ([("a", p.a), ("b", p.b)], None),
        unflatten=lambda items, _: Pair(**dict(items)),
    )
    return Pair


@BOTH
def test_a_registered_graph_node_splits_and_merges_with_its_sharing(nnx):
    Box = _box_type(nnx)
    inner = Box(w=nnx.Param(jnp.ones(2)))
    outer = Box(first=inner, second=inner, n=3)
    graphdef, state = nnx.split(outer)
    assert sorted(state) == ["first"]  # the shared box's state appears once
    np.testing.assert_allclose(state["first"]["w"][...], jnp.ones(2))
    rebuilt = nnx.merge(graphdef, state)
    assert type(rebuilt) is Box and rebuilt.n == 3
    assert rebuilt.first is rebuilt.second and rebuilt.first is not inner
    assert isinstance(graphdef.nodes[0], nnx.graphlib.NodeDef)
    assert graphdef.nodes[0].type is Box


@BOTH
def test_registering_a_type_twice_is_a_value_error(nnx):
    Box = _box_type(nnx)
    with pytest.raises(ValueError, match="already registered"):
        nnx.graphlib.register_graph_node_type(
            Box, lambda b: ([], None), None, None, None, None, None
        )
    with pytest.raises(ValueError, match="already registered"):
        nnx.graphlib.register_graph_node_type(
            nnx.Linear, lambda b: ([], None), None, None, None, None, None
        )


@BOTH
def test_update_and_pop_go_through_the_registered_impl(nnx):
    Box = _box_type(nnx)
    box = Box(w=nnx.Param(jnp.zeros(2)), b=nnx.BatchStat(jnp.ones(1)))
    nnx.update(box, nnx.State({"w": jnp.full(2, 5.0), "extra": jnp.ones(3)}))
    np.testing.assert_allclose(box.w[...], 5.0)
    assert box.extra.shape == (3,)  # a key the node lacked is added
    popped = nnx.pop(box, nnx.BatchStat)
    assert "b" in popped and not hasattr(box, "b")


@BOTH
def test_a_transform_updates_a_registered_node_in_place(nnx):
    Box = _box_type(nnx)
    box = Box(w=nnx.Param(jnp.zeros(())))

    @nnx.jit
    def step(b):
        b.w[...] = b.w[...] + 1.0

    step(box)
    step(box)
    assert float(box.w[...]) == 2.0


@BOTH
def test_a_registered_pytree_node_is_rebuilt_by_merge(nnx):
    Pair = _pair_type(nnx)
    pair = Pair(nnx.Param(jnp.ones(1)), 7)
    graphdef, state = nnx.split(pair)
    assert [p for p, _ in nnx.to_flat_state(state)] == [("a",)]
    rebuilt = nnx.merge(graphdef, state)
    assert type(rebuilt) is Pair and rebuilt.b == 7
    assert nnx.graphlib.get_node_impl(pair).type is Pair


@BOTH
def test_node_classification_matches_flax(nnx):
    g = nnx.graphlib
    linear = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
    param = nnx.Param(1.0)
    assert g.is_node(linear) and g.is_node([1]) and g.is_node({"a": 1})
    assert not g.is_node(param) and not g.is_node(jnp.ones(1))
    assert g.is_graph_node(linear) and g.is_graph_node(param)
    assert not g.is_graph_node([1])
    assert g.is_node_type(nnx.Linear) and g.is_node_type(list)
    assert not g.is_node_type(int)
    assert g.is_pytree_node((1,)) and not g.is_pytree_node(linear)
    assert g.is_node_leaf(param) and g.is_node_leaf(jnp.ones(1))
    assert not g.is_node_leaf(3)
    assert g.get_node_impl(param) is None and g.get_node_impl(3) is None
    assert isinstance(g.get_node_impl(linear), g.GraphNodeImpl)
    assert g.get_node_impl((1, 2)) is g.get_node_impl_for_type(tuple)
    assert g.get_node_impl_for_type(g.GenericPytree) is g.PYTREE_NODE_IMPL
    assert g.get_node_impl(linear).node_dict(linear)["kernel"] is linear.kernel


@BOTH
def test_jax_to_nnx_path_and_the_generic_pytree_impl(nnx):
    g = nnx.graphlib
    path = jax.tree_util.tree_flatten_with_path({"a": [0, {"b": 1}]})[0][1][0]
    assert g.jax_to_nnx_path(path) == ("a", 1, "b")
    nodes, aux = g._flatten_pytree({"b": 1, "a": 2})
    assert [k for k, _ in nodes] == ["a", "b"]
    assert g._unflatten_pytree(list(reversed(nodes)), aux) == {"a": 2, "b": 1}


@BOTH
def test_iter_children_yields_the_graph_nodes_one_level_down(nnx):
    class Block(nnx.Module):
        def __init__(self):
            self.linear = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
            self.scale = nnx.Param(1.0)
            self.n = 3

    block = Block()
    children = list(nnx.graphlib.iter_children(block))
    assert [k for k, _ in children] == ["linear", "scale"]
    modules = list(nnx.graphlib.iter_module_children(block))
    assert [k for k, _ in modules] == ["linear"]
    with pytest.raises(ValueError, match="Expected a graph node"):
        list(nnx.graphlib.iter_children(3))


@BOTH
def test_graph_pop_pops_arrays_and_variables_from_dicts(nnx):
    node = {"a": {"b": jnp.array(1), "c": nnx.Param(jnp.array(2)), "d": jnp.ones(())}}
    (popped,) = nnx.graphlib.graph_pop(node, (lambda _, x: x.shape == (),))
    assert sorted(popped["a"]) == ["b", "c", "d"] and node["a"] == {}
    with pytest.raises(ValueError, match="Cannot pop key"):
        nnx.pop((nnx.Param(1),), nnx.Param)  # a tuple cannot lose an item


@BOTH
def test_a_transform_sees_a_registered_node_change_between_calls(nnx):
    Box = _box_type(nnx)
    box = Box(w=nnx.Param(jnp.ones(())))

    class Holder(nnx.Module):  # a Module argument: lens's cached jit walk
        def __init__(self, box):
            self.box = box

    @nnx.jit
    def total(m):
        return sum(v[...] for v in jax.tree.leaves(nnx.state(m)))

    holder = Holder(box)
    assert float(total(holder)) == 1.0
    box.v = nnx.Param(jnp.full((), 5.0))  # no hook tells lens: its cache checks
    assert float(total(holder)) == 6.0

    @nnx.jit
    def grow(b):
        b.new = nnx.Param(jnp.zeros(()))

    grow(box)
    assert sorted(vars(box)) == ["new", "v", "w"]


def test_the_flat_form_of_registered_nodes_parses_back():
    Box, Pair = _box_type(lnnx), _pair_type(lnnx)
    node = Box(p=Pair(lnnx.Param(jnp.ones(1)), 2), xs=(jnp.zeros(1), 3))
    graphdef, state = lnnx.split(node)
    again = lnnx.graphlib.GraphDef(
        graphdef.nodes, graphdef.attributes, graphdef.num_leaves
    )
    assert again == graphdef
    types = [n.type for n in graphdef.nodes if isinstance(n, lnnx.graphlib.NodeDef)]
    assert types == [Box, Pair, tuple]
    rebuilt = lnnx.merge(again, state)
    assert type(rebuilt.p) is Pair and rebuilt.p.b == 2 and rebuilt.xs[1] == 3
