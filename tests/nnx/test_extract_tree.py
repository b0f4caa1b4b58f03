"""lens.nnx.extract's to_tree2 / from_tree2 / TreeState / Opaque / GraphDefState,
check_consistent_aliasing2 and check_prefix, compared with flax.nnx.extract."""

import jax
import jax.numpy as jnp
import pytest

from lens import errors, nnx
from lens.nnx import extract

fnnx = pytest.importorskip("flax.nnx")
fextract = fnnx.extract


def _model(mod):
    return mod.Linear(2, 3, rngs=mod.Rngs(0))


def _paths(tree):
    return [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(tree)]


def test_to_tree2_makes_tree_states_with_flax_paths():
    m, fm = _model(nnx), _model(fnnx)
    t = extract.to_tree2({"a": m, "b": [m.kernel], "c": 1})
    ft = fextract.to_tree2({"a": fm, "b": [fm.kernel], "c": 1})
    assert isinstance(t["a"], extract.TreeState)
    assert _paths(t) == _paths(ft)
    # the shared kernel is a ref the second time: no leaves there
    assert jax.tree.leaves(t["b"]) == [] and t["c"] == 1
    assert t["a"].state["kernel"] is m.kernel  # the object's own Variables
    assert isinstance(t["a"].prefix_fn, extract.Opaque)


def test_from_tree2_rebuilds_shared_objects_around_the_same_variables():
    m = _model(nnx)
    out = extract.from_tree2(extract.to_tree2((m, m, m.kernel)))
    assert out[0] is out[1] and out[0] is not m
    assert out[0].kernel is m.kernel and out[2] is m.kernel
    y = out[0](jnp.ones((1, 2)))
    assert jnp.allclose(y, m(jnp.ones((1, 2))), atol=1e-6)


def test_from_tree2_after_a_tree_map_and_recreate_variables():
    m = _model(nnx)
    doubled = jax.tree.map(lambda x: 2 * x, extract.to_tree2(m))
    back = extract.from_tree2(doubled)
    assert back.kernel is not m.kernel
    assert jnp.allclose(back.kernel[...], 2 * m.kernel[...])
    raw = jax.tree.map(
        lambda v: v[...],
        extract.to_tree2(m),
        is_leaf=lambda x: isinstance(x, nnx.Variable),
    )
    assert isinstance(extract.from_tree2(raw).kernel, nnx.Param)
    kept = extract.from_tree2(raw, recreate_variables=False).kernel
    assert isinstance(kept, jax.Array) and not isinstance(kept, nnx.Variable)


def test_tree_state_is_a_pytree_with_static_graphdef():
    m = _model(nnx)
    t = extract.to_tree2(m)
    leaves, treedef = jax.tree.flatten(t)
    assert len(leaves) == 2
    again = jax.tree.unflatten(treedef, leaves)
    assert again.graphdef == t.graphdef and again.prefix_fn == t.prefix_fn
    assert t.replace(prefix_fn=extract.Opaque(len)).prefix_fn.value is len
    with pytest.raises(TypeError, match="TreeState has no field 'nope'"):
        t.replace(nope=1)


def test_to_tree2_with_jit():
    m = _model(nnx)

    @jax.jit
    def f(t):
        return jax.tree.map(lambda x: x + 1, t)

    out = extract.from_tree2(f(extract.to_tree2(m)))
    assert jnp.allclose(out.bias[...], m.bias[...] + 1)


def test_opaque_values_never_differ():
    assert extract.Opaque(1) == extract.Opaque(2)
    assert hash(extract.Opaque(1)) == hash(extract.Opaque([]))
    assert extract.Opaque(1) != 1


def test_graphdef_state_is_a_pytree_of_its_state():
    m = _model(nnx)
    graphdef, state = nnx.split(m)
    gs = extract.GraphDefState(graphdef, state)
    leaves, treedef = jax.tree.flatten(gs)
    assert len(leaves) == 2
    assert jax.tree.unflatten(treedef, leaves).graphdef == graphdef


@pytest.mark.parametrize(
    "make, prefix",
    [
        (lambda m: (m, m), (0, 1)),
        (lambda m: (m, m.kernel), (0, 1)),
    ],
)
def test_to_tree2_refuses_inconsistent_aliasing_like_flax(make, prefix):
    for mod, ext in ((nnx, extract), (fnnx, fextract)):
        with pytest.raises(ValueError, match="Inconsistent aliasing detected") as e:
            ext.to_tree2(make(_model(mod)), prefix=prefix)
        assert "0/kernel: 0" in str(e.value)
    t = extract.to_tree2((_model(nnx),) * 2, prefix=(0, 0))
    assert isinstance(t[1], extract.TreeState)
    # check_aliasing=False lets it through
    extract.to_tree2((_model(nnx),) * 2, prefix=(0, 1), check_aliasing=False)


def test_to_tree2_refuses_a_non_prefix():
    with pytest.raises(ValueError, match="tree prefix"):
        extract.to_tree2((_model(nnx), 1), prefix=(0, 1, 2))


def test_to_tree2_reads_a_graph_prefix_per_variable():
    m = _model(nnx)
    px = nnx.prefix(m, {nnx.PathContains("kernel"): 0, ...: None}, graph=True)
    assert isinstance(px, extract.TreeState) and px.prefix_fn.value is not None
    node_prefixes = {}
    extract.check_consistent_aliasing2(m, px, node_prefixes=node_prefixes)
    assert node_prefixes[id(m.kernel)] == [(("kernel",), 0)]
    assert node_prefixes[id(m.bias)] == [(("bias",), None)]
    with pytest.raises(ValueError, match="Inconsistent aliasing"):
        extract.to_tree2((m, m.kernel), prefix=(px, None))
    extract.to_tree2((m, m.kernel), prefix=(px, 0))


def test_tree_state_prefix_without_a_prefix_fn_is_refused():
    for ext, mod in ((extract, nnx), (fextract, fnnx)):
        with pytest.raises(ValueError, match="must have been produced by `nnx.prefix"):
            ext.check_consistent_aliasing2(
                _model(mod), ext.TreeState(None, {}), node_prefixes={}
            )


def test_check_consistent_aliasing2_accumulates_between_calls():
    m = _model(nnx)
    seen = {}
    extract.check_consistent_aliasing2(m, 0, base_path=("x",), node_prefixes=seen)
    extract.check_consistent_aliasing2(
        m.kernel, 0, base_path=("y",), node_prefixes=seen
    )
    assert seen[id(m.kernel)] == [(("x", "kernel"), 0), (("y",), 0)]
    with pytest.raises(ValueError, match="  y: 1"):
        extract.check_consistent_aliasing2(
            m.kernel, 1, base_path=("y",), node_prefixes=seen
        )


def test_check_prefix_returns_distinct_leaves():
    got = extract.check_prefix(
        (0, None, {"a": 1, "b": 0}), "in_axes", "vmap", True, True
    )
    want = fextract.check_prefix(
        (0, None, {"a": 1, "b": 0}), "in_axes", "vmap", True, True
    )
    assert sorted(got, key=repr) == sorted(want, key=repr)
    got = extract.check_prefix(
        (0, None), "in_specs", "shard_map", True, True, none_leaf=False
    )
    assert got == [0]


@pytest.mark.parametrize(
    "prefix, graph, updates, message",
    [
        (
            (0, "VAR"),
            True,
            True,
            "Found Variable of type Param at path [1] in `in_axes`",
        ),
        (
            ("AXES",),
            False,
            True,
            "`in_axes` cannot contain `StateAxes` objects when `graph=False`",
        ),
        (
            ("AXES",),
            True,
            False,
            "`in_axes` cannot contain `StateAxes` objects when `graph=False`",
        ),
        (("MODEL",), True, True, "Found graph node of type Linear at path [0]"),
        (
            ("TREESTATE",),
            True,
            True,
            "Found `TreeState` object at path [0] in `in_axes` for nnx.vmap.",
        ),
        (
            ("TREESTATE",),
            False,
            False,
            "Found `TreeState` object at path [0] in `in_axes` for nnx.vmap.",
        ),
    ],
)
def test_check_prefix_refuses_what_flax_refuses(prefix, graph, updates, message):
    def resolve(mod, ext):
        return {
            "VAR": mod.Param(jnp.ones(2)),
            "AXES": mod.StateAxes({mod.Param: 0}),
            "MODEL": _model(mod),
            "TREESTATE": ext.to_tree2(_model(mod)),
        }

    for mod, ext in ((nnx, extract), (fnnx, fextract)):
        table = resolve(mod, ext)
        p = tuple(table.get(x, x) if isinstance(x, str) else x for x in prefix)
        with pytest.raises(ValueError) as e:
            ext.check_prefix(p, "in_axes", "vmap", graph, updates)
        assert str(e.value).startswith(message), (mod, str(e.value))


def test_check_prefix_takes_what_lens_transforms_take():
    m = _model(nnx)
    # nnx.prefix's result: lens's transforms take it in every mode
    px = nnx.prefix(m, {...: 0}, graph=True)
    for graph in (True, False):
        for updates in (True, False):
            assert extract.check_prefix((px,), "in_axes", "vmap", graph, updates) == [
                px
            ]
    # a to_tree2 TreeState is taken with graph=True, graph_updates=False
    t = extract.TreeState(None, {"kernel": 0, "bias": 1})
    assert extract.check_prefix((t,), "in_axes", "vmap", True, False) == [1, 0]


def test_from_tree2_refuses_a_state_missing_a_variable():
    t = extract.to_tree2(_model(nnx))
    state = nnx.State({"kernel": t.state["kernel"]})
    with pytest.raises(errors.GraphStructureError, match="no value for bias"):
        extract.from_tree2(t.replace(__state__=state))
