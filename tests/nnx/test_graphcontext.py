"""split_context / merge_context / update_context, RefMap, to_tree / from_tree,
with_vars / as_pure, and the statelib / filterlib helpers flax.nnx has."""

import warnings

import jax
import jax.numpy as jnp
import pytest

from lens import nnx
from lens.nnx import extract, filterlib, graphlib, statelib
from lens.nnx.deprecations import deprecated


class Foo(nnx.Module):
    def __init__(self):
        self.a = nnx.Param(jnp.array(1.0))
        self.b = nnx.Param(jnp.array(2.0))


def test_refmap_is_keyed_by_identity():
    a, b = nnx.Param(1), nnx.Param(1)
    refmap = graphlib.RefMap({a: 0})
    refmap[b] = 1
    assert a in refmap and b in refmap and len(refmap) == 2
    assert graphlib.IndexMap.from_refmap(refmap) == {0: a, 1: b}
    assert graphlib.RefMap.from_indexmap({0: a})[a] == 0


def test_flatten_with_ref_index_numbers_and_refs():
    shared = {"b": nnx.Param(2)}
    g = [shared, 3, shared, nnx.Param(4)]
    refmap = graphlib.RefMap()
    _, flat = graphlib.flatten(g, ref_index=refmap)
    assert [v.get_value() for _, v in flat] == [2, 4]
    assert len(refmap) == 2 and shared["b"] in refmap
    graphdef, flat = graphlib.flatten(shared["b"], ref_index=refmap)
    assert isinstance(graphdef.nodes[0], graphlib.NodeRef) and len(flat) == 0


def test_flatten_rejects_a_refmap_with_gaps():
    with pytest.raises(ValueError, match="RefMap indices must be"):
        graphlib.flatten(Foo(), ref_index=graphlib.RefMap({nnx.Param(1): 3}))


def test_split_and_merge_context_keep_sharing():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    with graphlib.split_context() as ctx:
        g1, s1 = ctx.split(m)
        g2, s2 = ctx.split(m)
    assert not hasattr(ctx, "ref_index")
    assert isinstance(g1.nodes[0], graphlib.NodeDef)
    assert isinstance(g2.nodes[0], graphlib.NodeRef)
    assert len(nnx.to_flat_state(s1)) == 2 and len(nnx.to_flat_state(s2)) == 0
    with graphlib.merge_context() as ctx:
        m1, m2 = ctx.merge(g1, s1), ctx.merge(g2, s2)
    assert m1 is m2 and m1 is not m
    assert jnp.array_equal(m1.kernel.value, m.kernel.value)


def test_update_context_writes_back_into_the_objects_that_went_in():
    m = Foo()
    a, b = m.a, m.b
    with nnx.update_context("t"):
        with nnx.split_context("t") as ctx:
            graphdef, state = ctx.split(m)

        @jax.jit
        def f(graphdef, state):
            with nnx.merge_context("t", True) as ctx:
                inner = ctx.merge(graphdef, state)
            inner.a, inner.b = inner.b, inner.a
            inner.b.value = inner.b.value * 10
            inner.me = inner
            with nnx.split_context("t") as ctx:
                return ctx.split(inner)

        graphdef_out, state_out = f(graphdef, state)
        with nnx.merge_context("t", False) as ctx:
            out = ctx.merge(graphdef_out, state_out)
    assert out is m and m.me is m
    assert m.a is b and m.b is a
    assert float(m.b.value) == 10.0


def _ref_round_trip(how: str) -> tuple:
    """flax's update-context protocol for refs: split outside, merge inside,
    split inside (the inner model, a new model, the inner model again), merge
    outside. Returns (outside model, new model, inner states, outside result)."""
    m1 = nnx.with_vars(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), ref=True)
    with nnx.update_context("r"):
        if how == "to_tree":
            (m2,) = nnx.from_tree(
                nnx.to_tree((m1,), ctxtag="r"), ctxtag="r", is_inner=True
            )
        else:
            with nnx.split_context("r") as ctx:
                graphdef, state = getattr(ctx, how)(m1)
            with nnx.merge_context("r", True) as ctx:
                m2 = ctx.merge(graphdef, state)
        new = nnx.with_vars(nnx.Linear(1, 1, rngs=nnx.Rngs(1)), ref=True)
        if how == "to_tree":
            out = nnx.to_tree((m2, new, m2), ctxtag="r")
            states = [dict(o.states[0].flat_state()) for o in out]
            m3, new2, _ = nnx.from_tree(out, ctxtag="r", is_inner=False)
        else:
            with nnx.split_context("r") as ctx:
                graphdef_out, state_out = getattr(ctx, how)((m2, new, m2))
            flat = dict(state_out) if how == "flatten" else dict(state_out.flat_state())
            states = [
                {p[1:]: v for p, v in flat.items() if p[0] == i} for i in range(3)
            ]
            out = state_out
            with nnx.merge_context("r", False) as ctx:
                m3, new2, _ = ctx.merge(graphdef_out, state_out)
    return m1, new, states, out, m3, new2


@pytest.mark.parametrize("how", ["split", "flatten", "to_tree"])
def test_update_context_gives_no_update_for_a_ref_the_outside_has(how):
    m1, new, states, out, m3, new2 = _ref_round_trip(how)
    kernel_ref = m1.kernel.get_raw_value()
    # the inner model's refs are the outside's: NO_UPDATE, no leaf
    assert isinstance(states[0][("kernel",)].get_value(), graphlib.NoUpdate)
    assert isinstance(states[0][("bias",)].get_value(), graphlib.NoUpdate)
    # refs made inside leave as their values
    made = states[1][("kernel",)].get_value()
    assert isinstance(made, graphlib.ArrayRefOutput)
    assert jnp.array_equal(made.value, new.kernel[...])
    assert states[2] == {}  # the inner model again: a NodeRef
    assert len(jax.tree.leaves(out)) == 2
    # merged outside: the model that went in, its own refs; a new one, new refs
    assert m3 is m1 and m1.kernel.get_raw_value() is kernel_ref
    assert new2 is not new and isinstance(new2.kernel.get_raw_value(), jax.Ref)
    assert new2.kernel.get_raw_value() is not new.kernel.get_raw_value()
    assert jnp.array_equal(new2.kernel[...], new.kernel[...])


def test_a_ref_is_a_shared_node_of_the_graph():
    class Foo(nnx.Module):
        def __init__(self, ref):
            self.a = ref
            self.b = self.a
            self.p = nnx.Param(jnp.ones(2), ref=True)
            self.q = self.p

    m = Foo(jax.new_ref(jnp.zeros(3)))
    refmap = graphlib.RefMap()
    graphdef, flat = graphlib.flatten(m, ref_index=refmap, graph=True)
    # Foo, a's ref, p, p's ref: each once; the ref is the state leaf
    assert len(refmap) == 4 and m.a in refmap and m.p.get_raw_value() in refmap
    assert [p for p, _ in flat] == [("a",), ("p",)] and flat[0][1] is m.a
    assert isinstance(graphdef.nodes[1], graphlib.ArrayRefDef)
    assert isinstance(graphdef.nodes[3].array_refdef, graphlib.ArrayRefDef)
    assert jax.tree.leaves(flat) == [m.a, m.p.get_raw_value()]  # a pytree
    m2 = nnx.merge(graphdef, flat)
    assert m2.a is m2.b and m2.a is m.a and m2.p is m2.q
    # a state holding a bare ref maps (with_vars) and merges back
    frozen = nnx.with_vars(flat, hijax=False)
    assert nnx.merge(graphdef, frozen).a is m.a
    # a jax.Ref attribute is no static value: split gives it as state
    _, state = nnx.split(m)
    assert state["a"] is m.a


def test_update_context_decorator_and_errors():
    @nnx.update_context("deco")
    def inside():
        return nnx.current_update_context("deco")

    assert isinstance(inside(), nnx.UpdateContext)
    with pytest.raises(ValueError, match="No update context found for tag 'deco'"):
        nnx.current_update_context("deco")
    with nnx.update_context("x"), pytest.raises(ValueError, match="inner_merge must"):
        with nnx.merge_context("x"):
            pass


def test_merge_context_unflatten_rejects_a_list_and_more_states():
    graphdef, state = nnx.split(Foo())
    with nnx.merge_context() as ctx, pytest.raises(ValueError, match="multiple"):
        ctx.unflatten(graphdef, list(state.flat_state().leaves), state)


def test_to_tree_from_tree_round_trip():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    pure = nnx.to_tree((m, 1, {"b": m}))
    assert isinstance(pure[0], nnx.NodeStates) and pure[1] == 1
    assert isinstance(pure[2]["b"].graphdef.nodes[0], graphlib.NodeRef)
    assert len(jax.tree.leaves(pure)) == 3  # kernel, bias, and the 1
    back = nnx.from_tree(pure)
    assert back[0] is back[2]["b"] and back[1] == 1


def test_to_tree_checks_consistent_prefixes():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    nnx.to_tree((m, 1, {"b": m}), prefix=(0, None, 0))
    with pytest.raises(ValueError, match="Inconsistent aliasing detected"):
        nnx.to_tree((m, 1, {"b": m}), prefix=(0, None, 1))


def test_node_states_errors():
    with pytest.raises(ValueError, match="No graphdef available"):
        _ = nnx.NodeStates.from_states(1).graphdef
    with pytest.raises(ValueError, match="Expected exactly one"):
        _ = nnx.NodeStates.from_prefixes((0, 1)).state
    with nnx.merge_context() as ctx, pytest.raises(ValueError, match="Expected Tree"):
        extract.merge_tree_node(ctx, (), None, 1)


def test_with_vars_copies_the_variables_that_change():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    m2 = nnx.with_vars(m, mutable=False)
    assert m2.kernel is not m.kernel and m2.kernel.mutable is False
    assert nnx.with_vars(m, ref=False).kernel is m.kernel  # nothing to change
    m3 = nnx.with_vars(m, ref=True)
    assert m3.kernel.ref and isinstance(m3.kernel.get_raw_value(), jax.Ref)


def test_with_vars_refuses_to_split_a_shared_variable():
    class Two(nnx.Module):
        def __init__(self, inner):
            self.x, self.y = inner, inner

    with pytest.raises(ValueError, match="Found duplicate at paths"):
        nnx.with_vars(Two(nnx.Linear(1, 1, rngs=nnx.Rngs(0))), mutable=False)


def test_as_pure_and_its_deprecated_name():
    state = nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    assert jax.tree.map(jnp.shape, nnx.as_pure(state)) == {
        "bias": (3,),
        "kernel": (2, 3),
    }
    with pytest.warns(DeprecationWarning, match="Use as_pure instead"):
        nnx.pure(state)


def test_deprecated_keeps_the_docstring():
    def new(x):
        """Doubles."""
        return 2 * x

    old = deprecated(new)
    assert "deprecated" in old.__doc__ and "Doubles." in old.__doc__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert old(2) == 4


def test_statelib_helpers():
    m = nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])
    state = nnx.state(m)
    assert statelib.to_pure_dict(state, lambda v: 1) == {0: {"bias": 1, "kernel": 1}}
    assert nnx.restore_int_paths({"0": {"bias": 1}}) == {0: {"bias": 1}}
    statelib.replace_by_pure_dict(
        state, {"0": {"bias": jnp.ones(2)}}, lambda v, x: v.replace(x)
    )
    assert jnp.array_equal(state[0]["bias"].value, jnp.ones(2))
    with pytest.raises(ValueError, match="key in pure_dict not available"):
        statelib.replace_by_pure_dict(state, {"nope": 1})
    params = nnx.state(m, nnx.Param)
    assert statelib.diff(state, params) == {}
    assert statelib.diff(state, nnx.State({})) is state
    filters = statelib.create_path_filters(nnx.State({"a": 1, "b": {"c": 1}, "d": 2}))
    assert filters == {
        filterlib.PathIn(("a",), ("b", "c")): 1,
        filterlib.PathIn(("d",)): 2,
    }
    assert statelib.from_flat_state([(("a",), 1)], cls=nnx.State) == {"a": 1}


def test_state_without_copy_uses_the_dict():
    d = {"a": 1}
    s = nnx.State(d, _copy=False)
    s["b"] = 2
    assert d == {"a": 1, "b": 2} and s.raw_mapping is d
    with pytest.raises(ValueError, match="Expected a dictionary when `_copy=False`"):
        nnx.State([("a", 1)], _copy=False)


def test_filters():
    assert filterlib.PathIn(("a",))(("a",), None)
    assert not filterlib.PathIn(("a",))(("b",), None)
    assert len(filterlib.filters_to_predicates([nnx.Param, ...])) == 2
    with pytest.raises(ValueError, match="can only be used as the last filters"):
        filterlib.filters_to_predicates([..., nnx.Param])
