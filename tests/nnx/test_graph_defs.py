"""GraphDef's flat form (flax.nnx's ``nodes``/``attributes``/``num_leaves``),
``nnx.data`` leaves, ``nnx.update``'s flax semantics, and the graph context
internals (``GRAPH_CONTEXT``, ``static_cache``); checked against flax.nnx where
the API is the same."""

import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _model(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.a = jnp.zeros(3)
            self.n = 3
            self.sub = nnx.Linear(1, 1, rngs=nnx.Rngs(0))

    return M()


@BOTH
def test_graphdef_nodes_and_attributes_are_flaxs_flat_form(nnx):
    g = nnx.graphlib
    graphdef = nnx.graphdef(_model(nnx))
    root = graphdef.nodes[0]
    assert isinstance(root, g.NodeDef) and root.index == 0
    assert root.outer_index is None and root.type.__name__ == "M"
    # flax also lists its private _pytree__ attributes (lens keeps none)
    attrs = [(k, a) for k, a in graphdef.attributes if not k.startswith("_pytree")]
    kinds = [(k, type(a).__name__) for k, a in attrs]
    assert kinds[:4] == [
        ("a", "LeafAttr"),
        ("n", "Static"),
        ("sub", "NodeAttr"),  # depth first: sub's own attributes come next
        ("bias", "NodeAttr"),
    ]
    assert kinds[-1] == ("w", "NodeAttr") and attrs[1][1] == g.Static(3)
    assert graphdef.num_leaves == 4
    indexed = [n for n in graphdef.nodes if n.index is not None]
    assert [type(n).__name__ for n in indexed] == ["NodeDef"] * 2 + ["VariableDef"] * 3
    assert [n.index for n in indexed] == [0, 1, 2, 3, 4]


def test_a_graphdef_built_from_the_flat_form_merges():
    m = _model(lnnx)
    graphdef, state = lnnx.split(m)
    again = lnnx.graphlib.GraphDef(
        graphdef.nodes, graphdef.attributes, graphdef.num_leaves
    )
    assert again == graphdef and hash(again) == hash(graphdef)
    rebuilt = lnnx.merge(again, state)
    assert rebuilt.n == 3 and rebuilt.sub.kernel is m.sub.kernel
    with pytest.raises(ValueError, match="num_leaves is 7"):
        lnnx.graphlib.GraphDef(graphdef.nodes, graphdef.attributes, 7)


def test_outer_index_variants_rebuild_the_graphdef():
    graphdef = lnnx.graphdef(_model(lnnx))
    same = graphdef.with_same_outer_index()
    assert [n.outer_index for n in same.nodes] == [0, 1, 2, 3, 4]
    assert same.with_no_outer_index() == graphdef
    assert graphdef.with_matching_outer_index(same) == same


@BOTH
def test_a_shared_node_is_a_noderef_and_a_leaf_root_has_no_nodes(nnx):
    p = nnx.Param(1.0)
    graphdef, _ = nnx.split([p, p])
    assert isinstance(graphdef.nodes[-1], nnx.graphlib.NodeRef)
    leaf_def, leaf = nnx.split(jnp.ones(2))
    assert leaf_def.nodes == [] and leaf_def.num_leaves == 1
    assert nnx.merge(leaf_def, leaf) is leaf


@BOTH
def test_an_nnx_data_attribute_is_a_state_leaf(nnx):
    class Foo(nnx.Pytree):
        def __init__(self):
            self.count = nnx.data(2)
            self.label = nnx.static("x")

    foo = Foo()
    foo.none = nnx.data(None)  # None is an empty node, not a leaf
    graphdef, state = nnx.split(foo)
    assert state["count"] == 2 and "label" not in state and "none" not in state
    assert (("count", nnx.graphlib.LEAF_ATTR)) in graphdef.attributes
    assert nnx.merge(graphdef, nnx.State({"count": 5})).count == 5


@BOTH
def test_update_adds_keys_and_replaces_plain_values(nnx):
    node = {"a": {"b": 1, "c": nnx.Param(jnp.array(2)), "d": 3}}
    nnx.update(node, {"a": {"b": 4, "c": jnp.array(10), "e": 5}})
    assert node["a"]["b"] == 4 and node["a"]["d"] == 3 and node["a"]["e"] == 5
    assert int(node["a"]["c"][...]) == 10
    v = nnx.Param(jnp.array(1))
    nnx.update(v, nnx.State({}), nnx.Param(jnp.array(7)))
    assert int(v[...]) == 7
    with pytest.raises(ValueError, match="Expected exactly one non-empty state"):
        nnx.update(v, nnx.Param(jnp.array(1)), nnx.Param(jnp.array(2)))
    with pytest.raises(ValueError, match="immutable node"):
        nnx.update((1, 2), {2: 3})


def test_a_bad_update_writes_nothing():
    node = {"ok": nnx_param(0.0), "bad": nnx_param(jnp.zeros(2))}
    with pytest.raises(errors.GraphStructureError, match="has shape"):
        lnnx.update(node, {"ok": 1.0, "new": 5, "bad": jnp.zeros(3)})
    assert float(node["ok"][...]) == 0.0 and "new" not in node


def nnx_param(x):
    return lnnx.Param(jnp.asarray(x))


@BOTH
def test_unflatten_checks_the_number_of_leaves(nnx):
    graphdef, leaves = nnx.graphlib.flatten(_model(nnx), with_paths=False)
    with pytest.raises(ValueError, match="Incorrect number of leaves"):
        nnx.graphlib.unflatten(graphdef, leaves[:-1])
    rebuilt = nnx.graphlib.unflatten(graphdef, leaves)
    np.testing.assert_allclose(rebuilt.w[...], 1.0)


@BOTH
def test_tree_mode_refuses_a_pytree_false_object_with_its_path(nnx):
    class NotAPytree(nnx.Pytree, pytree=False):
        def __init__(self):
            self.x = 1

    with pytest.raises(ValueError, match=r"pytree=False.*Found at path: \[0\]"):
        nnx.graphlib.flatten([NotAPytree()], graph=False)
    with pytest.raises(ValueError, match="pytree=False"):
        list(nnx.graphlib.iter_children(NotAPytree(), graph=False))


def test_graph_context_shows_the_open_contexts():
    ctx = lnnx.graphlib.GRAPH_CONTEXT
    assert ctx.update_context_stacks == {} and ctx.ref_index_stack == []
    with lnnx.update_context("t"):
        assert [type(c).__name__ for c in ctx.update_context_stacks["t"]] == [
            "UpdateContext"
        ]
        with lnnx.graphlib.split_context("t") as split_ctx:
            assert ctx.ref_index_stack == [split_ctx]
        with lnnx.graphlib.set_graph_mode(False):
            assert ctx.graph_mode_stack == [False]
    assert ctx.update_context_stacks == {} and ctx.ref_index_stack == []
    record = lnnx.graphlib.GraphContext(caching=True)
    assert record.caching and record.graph_mode_stack == []


def test_static_cache_goes_to_the_next_update_context():
    cache: dict = {}
    with lnnx.graphlib.static_cache(cache):
        with lnnx.update_context("t") as uctx:
            assert uctx.static_cache is cache
            assert lnnx.graphlib.GRAPH_CONTEXT.caching
    with pytest.raises(ValueError, match="no context consumed it"):
        with lnnx.graphlib.static_cache(cache):
            pass
    assert lnnx.graphlib.GRAPH_CONTEXT.tmp_static_cache is None


def test_static_cache_create_derives_the_final_graphdef():
    graphdef, flat = lnnx.graphlib.flatten(_model(lnnx))
    refmap = lnnx.graphlib.RefMap()
    cache = lnnx.graphlib.StaticCache.create(
        graphdef, tuple(p for p, _ in flat), [v for _, v in flat], refmap
    )
    assert cache.final_graphdef == graphdef.with_same_outer_index()
    assert cache.new_index_ref == {}


@BOTH
def test_cached_partial_binds_clones_that_share_the_variables(nnx):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    seen = []

    @nnx.jit
    def step(m, other):
        seen.append(m)
        m.kernel[...] = m.kernel[...] + 1.0
        return m

    before = model.kernel[...]
    cached = nnx.compat.cached_partial(step, model)
    out1, out2 = cached(model), cached(model)
    assert out1 is out2 and out1 is not model  # the same clone every call
    assert out1.kernel is model.kernel
    np.testing.assert_allclose(model.kernel[...], before + 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="graph-mode-only"):
        nnx.cached_partial(step, model, graph=False)


def test_merge_keeps_an_object_initializing():
    from lens.nnx.pytreelib import PytreeState

    m = _model(lnnx)
    object.__setattr__(m, "_pytree__state", PytreeState(initializing=True))
    rebuilt = lnnx.merge(*lnnx.split(m))
    assert rebuilt._pytree__state.initializing
    assert not rebuilt.sub._pytree__state.initializing
    # part of the structure, as in flax.nnx (a jitted function re-traces)
    initializing = lnnx.graphdef(m)
    object.__setattr__(m, "_pytree__state", PytreeState())
    assert lnnx.graphdef(m) != initializing


def test_a_hijax_variable_made_inside_a_transform_comes_out():
    import jax

    with lnnx.var_defaults(hijax=True):
        abstract = lnnx.eval_shape(lambda: lnnx.Linear(1, 2, rngs=lnnx.Rngs(0)))
    assert isinstance(abstract, lnnx.Linear)
    assert isinstance(abstract.kernel.get_value(), jax.ShapeDtypeStruct)
