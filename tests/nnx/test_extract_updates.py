"""lens.nnx.extract's Variable-update helpers (snapshot, get_updates, Updates,
apply_updates, check_no_aliases, ...), compared with flax.nnx.extract."""

import jax
import jax.numpy as jnp
import pytest

from lens import errors, nnx
from lens.nnx import extract

fnnx = pytest.importorskip("flax.nnx")
fextract = fnnx.extract

K = jax.tree_util.GetAttrKey
D = jax.tree_util.DictKey


def _model(mod):
    return mod.Linear(2, 3, rngs=mod.Rngs(0))


def test_snapshot_keeps_current_variables_and_copies_the_snapshot():
    p = nnx.Param(jnp.ones(2))
    current, snap = extract.snapshot({"p": p, "x": 1})
    assert current["p"] is p and snap["p"] is not p
    assert type(snap["p"]) is nnx.Param and snap["x"] == 1
    assert not extract.variable_changed(p, snap["p"])
    p[...] = 2.0
    assert extract.variable_changed(p, snap["p"])
    copied = extract.copy_var_structure({"p": p})
    assert copied["p"] is p


def test_variable_changed_sees_type_and_metadata():
    p = nnx.Param(jnp.ones(2))
    assert extract.variable_changed(nnx.BatchStat(p[...]), p)
    assert extract.variable_changed(p.replace(out_sharding=("a",)), p)
    assert not extract.variable_changed(nnx.Param(p[...]), p)


def _changed_model_updates(mod, ext, **kwargs):
    m = _model(mod)
    current, snap = ext.snapshot(ext.labeled(args=(m,)))
    m.bias[...] = m.bias[...] + 1
    return m, ext.get_updates(current, snap, **kwargs)


def test_get_updates_collects_changed_variables_like_flax():
    m, (updates,) = _changed_model_updates(nnx, extract)
    fm, (fupdates,) = _changed_model_updates(fnnx, fextract)
    assert (
        updates.paths
        == fupdates.paths
        == [(K("args"), jax.tree_util.SequenceKey(0), K("bias"))]
    )
    assert updates.leaves[0] is m.bias and fupdates.leaves[0] is fm.bias
    assert len(updates) == 1 and updates[0] == (updates.paths[0], m.bias)
    assert updates[updates.paths[0]] is m.bias


def test_get_updates_groups_by_prefix():
    a, b = nnx.Param(jnp.ones(2)), nnx.Param(jnp.ones(2))
    current, snap = extract.snapshot({"a": a, "b": b})
    a[...] = 0.0
    b[...] = 0.0
    first, second = extract.get_updates(
        current, snap, prefix={"a": 0, "b": None}, known_prefixes=(None, 0)
    )
    assert first.leaves == [b] and second.leaves == [a]
    with pytest.raises(KeyError, match="is not one of known_prefixes"):
        extract.get_updates(current, snap, prefix={"a": 1, "b": None})


def test_get_updates_keep_fn_decides():
    m = _model(nnx)
    current, snap = extract.snapshot(m)
    (updates,) = extract.get_updates(current, snap, keep_fn=lambda path, p, c, s: True)
    assert [jax.tree_util.keystr(p) for p in updates.paths] == [".bias", ".kernel"]


def test_apply_updates_writes_into_the_callers_variables():
    p = nnx.Param(jnp.zeros(2))
    variables = extract.check_no_aliases("jit", args=(p,))
    path = (K("args"), jax.tree_util.SequenceKey(0))
    assert variables == {path: p}
    extract.apply_updates(
        variables, [extract.Updates.create([(path, nnx.Param(jnp.ones(2)))])]
    )
    assert jnp.allclose(p[...], 1.0)
    with pytest.raises(RuntimeError, match=r"Variable not found at path \.args\[1\]"):
        extract.apply_updates(
            variables,
            [extract.Updates.create([((K("args"), jax.tree_util.SequenceKey(1)), p)])],
        )


def test_updates_is_a_pytree_sequence():
    u = extract.Updates.create(
        [((K("x"),), nnx.Param(1.0)), ((K("y"),), nnx.Param(2.0))]
    )
    fu = fextract.Updates.create(
        [((K("x"),), fnnx.Param(1.0)), ((K("y"),), fnnx.Param(2.0))]
    )
    assert jax.tree.leaves(u) == jax.tree.leaves(fu) == [1.0, 2.0]
    doubled = jax.tree.map(lambda x: 2 * x, u)
    assert (
        isinstance(doubled, extract.Updates) and doubled[(K("y"),)].get_value() == 4.0
    )
    assert [k for k, _ in u] == [(K("x"),), (K("y"),)]
    assert u[1:] == [((K("y"),), u.leaves[1])]
    assert ".x" in repr(u) and repr(extract.Updates()) == "Updates({})"
    with pytest.raises(ValueError, match="have no Variable at .z"):
        u[(K("z"),)]


def test_to_masked_puts_updates_at_their_paths():
    u = extract.Updates.create([((D("a"),), nnx.Param(1.0))])
    fu = fextract.Updates.create([((D("a"),), fnnx.Param(1.0))])
    out = extract.to_masked({"a": 0, "b": None}, [u])
    assert out["a"] is u.leaves[0] and out["b"] is None
    assert fextract.to_masked({"a": 0, "b": None}, [fu])["b"] is None


def test_check_no_aliases_refuses_a_variable_reached_twice():
    p = nnx.Param(jnp.ones(2))
    for ext, v in ((extract, p), (fextract, fnnx.Param(jnp.ones(2)))):
        with pytest.raises(ValueError, match=r"Duplicate Param") as e:
            ext.check_no_aliases("jit", args=(v,), out=v)
        assert "  - .args[0]\n  - .out" in str(e.value)
        assert "nnx.jit with graph_updates=False" in str(e.value)
    m = _model(nnx)
    found = extract.check_no_aliases("grad", args=(m,), kwargs={})
    assert list(found.values()) == [m.bias, m.kernel]


def test_check_no_aliases_refuses_a_captured_output():
    outside = nnx.Param(jnp.ones(2))

    @nnx.jit
    def f(m):
        extract.check_no_aliases("jit", args=(m,), out=outside, check=["out"])
        return m

    with pytest.raises(
        errors.CapturedOutputError, match="Cannot return captured Variable"
    ):
        f(_model(nnx))
    assert issubclass(errors.CapturedOutputError, ValueError)

    @jax.jit
    def g(x):  # a JAX trace: the Variable was made outside it
        extract.check_no_aliases("jit", out=outside, check=["out"])
        return x

    with pytest.raises(
        ValueError, match="Cannot return captured Variable of type Param"
    ):
        g(1.0)
    # not checked outside `check`, nor for a Variable made inside
    assert extract.check_no_aliases("jit", args=(outside,), check=["out"])

    @jax.jit
    def h(x):
        inside = nnx.Param(x)
        return len(extract.check_no_aliases("jit", out=inside, check=["out"]))

    assert h(1.0) == 1


def test_treemap_copy_args_passes_copies():
    p = nnx.Param(jnp.ones(2))
    seen = []

    @extract.treemap_copy_args
    def f(x, *, y):
        seen.append((x, y))
        return x

    out = f({"p": p}, y=[p])
    assert out["p"] is not p and jnp.allclose(out["p"][...], p[...])
    assert seen[0][1][0] is not p and f.__name__ == "f"


def test_check_same_variables_and_update_carry_variables():
    p = nnx.Param(jnp.ones(2))
    extract.check_same_variables(
        (p, extract.Mask(), 1), (p, extract.Mask(), 2), "fori_loop"
    )
    with pytest.raises(
        ValueError, match="fori_loop Variable identity must be preserved"
    ):
        extract.check_same_variables([p], [nnx.Param(jnp.ones(2))], "fori_loop")
    new = nnx.Param(jnp.zeros(2))
    out = extract.update_carry_variables((p, 1), (new, 2))
    assert out[0] is p and out[1] == 2 and jnp.allclose(p[...], 0.0)
