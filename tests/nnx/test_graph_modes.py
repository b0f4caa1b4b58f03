"""Modules and Variables as pytrees, the graph API in tree mode (``graph=False``),
``set_graph_mode``, and the graph/state behaviours of issues 27 and 32; each
checked against flax.nnx where flax is installed."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens import nnx as lnnx
from lens.nnx._graph.tree import tree_flatten, tree_unflatten

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _model(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.l = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
            self.n = 3
            self.a = jnp.ones(2)
            self.b = nnx.Param(jnp.ones(1))

    return M()


@BOTH
def test_a_module_is_a_pytree_of_its_data_attributes(nnx):
    m = _model(nnx)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(m)]
    assert paths == [".a", ".b.value", ".l.bias.value", ".l.kernel.value"]
    doubled = jax.tree.map(lambda x: x * 2, m)
    assert type(doubled) is type(m) and doubled.n == 3
    np.testing.assert_allclose(doubled.l.kernel[...], 2 * m.l.kernel[...])
    out = jax.jit(lambda m, x: m.l(x))(m, jnp.ones((1, 2)))
    np.testing.assert_allclose(out, m.l(jnp.ones((1, 2))))


def test_pytree_false_opts_out():
    class P(lnnx.Module, pytree=False):
        def __init__(self):
            self.w = lnnx.Param(jnp.ones(2))

    p = P()
    assert jax.tree.leaves(p) == [p]


@BOTH
@pytest.mark.parametrize("graph", [True, False])
def test_split_shares_variables_and_merge_puts_them_back(nnx, graph):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    gdef, state = nnx.split(m, graph=graph)
    assert state["kernel"] is m.kernel
    m2 = nnx.merge(gdef, state)
    assert isinstance(m2, nnx.Linear) and m2.kernel is state["kernel"]
    assert nnx.merge(gdef, state, copy=True).kernel is not state["kernel"]
    assert nnx.clone(m, graph=graph).kernel is not m.kernel


@BOTH
def test_tree_mode_shared_variable_is_a_value_error(nnx):
    v = nnx.Param(jnp.array(1))
    for call in (nnx.split, nnx.state, nnx.graphdef, nnx.clone):
        with pytest.raises(ValueError):
            call([v, v], graph=False)
    with pytest.raises(ValueError, match="found at paths"):
        list(nnx.iter_graph([v, v], graph=False))


@BOTH
def test_tree_mode_flatten_is_sorted_by_path(nnx):
    g = {"b": [nnx.Param(jnp.array(1)), jnp.array(2)], "a": (nnx.Param(3), 4)}
    gdef, flat = nnx.graphlib.flatten(g, graph=False)
    assert [p for p, _ in flat] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    g2 = nnx.graphlib.unflatten(gdef, flat)
    assert g2["b"][0][...] == 1 and g2["a"][1] == 4


def test_tree_flatten_and_unflatten_are_inverse():
    m = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    gdef, flat = tree_flatten(m)
    m2 = tree_unflatten(gdef, [leaf for _, leaf in flat], copy_variables=True)
    assert m2.kernel is not m.kernel
    np.testing.assert_array_equal(m2.kernel[...], m.kernel[...])


@BOTH
def test_set_graph_mode_scopes_tree_mode(nnx):
    v = nnx.Param(jnp.array(1))
    with nnx.set_graph_mode(False):
        with pytest.raises(ValueError):
            nnx.split([v, v])
    nnx.split([v, v])  # graph mode again: sharing is fine


def test_set_graph_mode_is_per_thread():
    seen = []
    with lnnx.set_graph_mode(False):
        t = threading.Thread(
            target=lambda: seen.append(lnnx.set_graph_mode.current_value())
        )
        t.start()
        t.join()
    assert seen == [True]


@BOTH
def test_merge_from_a_flat_list_of_leaves(nnx):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    gdef, state = nnx.split(m)
    m2 = nnx.merge(gdef, jax.tree.leaves(state))
    np.testing.assert_array_equal(m2.kernel[...], m.kernel[...])


@BOTH
def test_unpack_and_merge_round_trip(nnx):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    gs = nnx.unpack(m)
    assert isinstance(gs, nnx.GraphState) and "kernel" in gs
    assert isinstance(nnx.merge(gs), nnx.Linear)
    doubled = jax.tree.map(lambda x: 2 * x, gs)
    np.testing.assert_allclose(nnx.merge(doubled).kernel[...], 2 * m.kernel[...])
    with pytest.raises(TypeError, match="Expected a GraphDef or GraphState"):
        nnx.merge(42, gs)


def test_update_with_another_shape_is_an_error_and_changes_nothing():
    m = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    before = m.bias[...]
    bad = {"bias": jnp.ones(3), "kernel": jnp.ones((3, 3))}
    with pytest.raises(errors.GraphStructureError, match="has shape"):
        lnnx.update(m, bad)
    np.testing.assert_array_equal(m.bias[...], before)  # untouched


@BOTH
def test_split_of_a_leaf_gives_the_leaf(nnx):
    for leaf in (nnx.Param(1), 42, jnp.array([1, 2])):
        gdef, state = nnx.split(leaf)
        assert nnx.merge(gdef, state) is state


@BOTH
def test_variable_compares_and_subscripts_as_flax(nnx):
    p1, p2 = nnx.Param(jnp.array([1, 2])), nnx.Param(jnp.array([1, 3]))
    assert (p1 == p2).tolist() == [True, False]
    assert nnx.Param(1) == 1
    assert nnx.Param[jax.Array] is not None and nnx.GraphDef[nnx.Module] is not None


@BOTH
def test_var_defaults_scopes(nnx):
    assert nnx.var_defaults().hijax is False
    with nnx.var_defaults(hijax=True):
        assert nnx.var_defaults().hijax is True
    assert nnx.var_defaults().hijax is False


@BOTH
def test_reprs_show_the_values(nnx):
    text = repr(nnx.Param(jnp.arange(3.0)))
    assert text.startswith("Param( # 3 (12 B)") and "0., 1., 2." in text
    state_text = repr(nnx.state(nnx.Linear(1, 2, rngs=nnx.Rngs(0))))
    assert state_text.startswith("State({") and "value=Array([0., 0.]" in state_text


@BOTH
def test_rngs_with_a_string_seed_is_a_value_error(nnx):
    with pytest.raises(ValueError, match="^Invalid rng value: abc"):
        nnx.Rngs("abc")
    assert lnnx.Rngs(0).params().shape == ()


@BOTH
def test_rngs_wraps_an_old_style_uint32_key(nnx):
    # jax.random.PRNGKey(0) (uint32[2]) is what Linen code and older examples
    # pass; the stream holds the typed key and draws from it, eagerly, under
    # eval_shape and as a batch of keys
    raw = jax.random.PRNGKey(7)
    typed = jax.random.wrap_key_data(raw)
    stream = nnx.Rngs(params=raw).params
    assert jnp.issubdtype(stream.key[...].dtype, jax.dtypes.prng_key)
    assert stream.count[...].shape == ()
    first = jax.random.key_data(stream())
    np.testing.assert_array_equal(
        first, jax.random.key_data(jax.random.fold_in(typed, 0))
    )
    linear = nnx.Linear(3, 4, rngs=nnx.Rngs(params=raw))
    same = nnx.Linear(3, 4, rngs=nnx.Rngs(params=typed))
    np.testing.assert_array_equal(linear.kernel[...], same.kernel[...])
    abstract = nnx.eval_shape(lambda: nnx.Linear(3, 4, rngs=nnx.Rngs(params=raw)))
    assert abstract.kernel.shape == (3, 4)
    batch = nnx.Rngs(params=jax.random.split(raw, 3)).params
    assert batch.key[...].shape == (3,) and batch.count[...].shape == (3,)


@BOTH
def test_rngs_takes_a_bool_seed_as_its_integer(nnx):
    # bool is an int subclass; flax.nnx seeds with it as such
    a = nnx.Linear(1, 2, rngs=nnx.Rngs(True)).kernel[...]
    np.testing.assert_array_equal(a, nnx.Linear(1, 2, rngs=nnx.Rngs(1)).kernel[...])


def test_rngs_error_is_lens_invalid_rng_error():
    with pytest.raises(errors.InvalidRngError, match="nnx.Rngs"):
        lnnx.Rngs(dropout=1.5)


def test_update_may_add_leading_axes_as_flax_code_stacks_models():
    m = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    lnnx.update(m, {"bias": jnp.ones((4, 3))})  # a vmapped state into a template
    assert m.bias.shape == (4, 3)
