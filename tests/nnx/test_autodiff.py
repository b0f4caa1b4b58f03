"""nnx.custom_vjp, nnx.vjp and nnx.jvp against flax.nnx (its graph-update
custom_vjp; its vjp/jvp, whose object cotangents are objects of the argument's type)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")


def _foo(nnx):
    class Foo(nnx.Module):
        def __init__(self, x, y):
            self.x = nnx.Param(x)
            self.y = nnx.Param(y)

    return Foo(x=jnp.array(1.0), y=jnp.array(2.0))


def _custom(nnx, nondiff=(), **kw):
    @nnx.custom_vjp(nondiff_argnums=nondiff, **kw)
    def f(m):
        return jnp.sin(m.x) * m.y

    def f_fwd(m):
        return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

    def f_bwd(res, g):
        input_updates_g, out_g = g
        cos_x, sin_x, m = res
        (m_updates_g,) = input_updates_g
        m_g = jax.tree.map(lambda x: x, m_updates_g)
        m_g["x"][...] = cos_x * out_g * m.y
        if "y" in m_g:
            m_g["y"][...] = sin_x * out_g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_vjp_matches_flax_doc_example():
    lg = lnnx.grad(_custom(lnnx))(_foo(lnnx))
    fg = fnnx.state(fnnx.grad(_custom(fnnx, graph_updates=True))(_foo(fnnx)))
    for k in ("x", "y"):
        np.testing.assert_allclose(lg[k].value, fg[k].get_value(), rtol=1e-6)
    np.testing.assert_allclose(lg["x"].value, np.cos(1.0) * 2.0, rtol=1e-6)


def test_custom_vjp_with_a_diff_state_differentiates_only_that_part():
    only_x = lnnx.DiffState(0, lnnx.PathContains("x"))

    @lnnx.custom_vjp(nondiff_argnums=(only_x,))
    def f(m):
        return jnp.sin(m.x) * m.y

    def f_fwd(m):
        return f(m), (jnp.cos(m.x), m)

    def f_bwd(res, g):
        (m_updates_g,), out_g = g
        cos_x, m = res
        assert sorted(m_updates_g.keys()) == ["x", "y"]  # every updated variable
        m_g = jax.tree.map(lambda x: x, m_updates_g)
        m_g["x"][...] = cos_x * out_g * m.y
        del m_g["y"]  # y is not differentiable (as in Flax's example)
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    g = lnnx.grad(f, argnums=only_x)(_foo(lnnx))
    assert sorted(g.keys()) == ["x"]
    np.testing.assert_allclose(g["x"].value, np.cos(1.0) * 2.0, rtol=1e-6)


def test_custom_vjp_updates_come_back_and_errors_are_clear():
    class Counter(lnnx.Module):
        def __init__(self):
            self.count = lnnx.BatchStat(jnp.array(0))
            self.w = lnnx.Param(jnp.array(3.0))

    @lnnx.custom_vjp
    def f(m, x):
        m.count.value += 1
        return m.w * x

    def f_fwd(m, x):
        return f(m, x), (m.w.value, x)

    def f_bwd(res, g):
        (m_g, _), out_g = g
        w, x = res
        m_g = jax.tree.map(lambda v: v, m_g)
        m_g["w"][...] = x * out_g
        return m_g, w * out_g

    f.defvjp(f_fwd, f_bwd)
    m = Counter()
    gm, gx = lnnx.grad(f, argnums=(0, 1))(m, jnp.array(2.0))
    assert int(m.count.value) == 1
    np.testing.assert_allclose(gm["w"].value, 2.0)
    np.testing.assert_allclose(gx, 3.0)

    g = lnnx.custom_vjp(lambda m: m.w * 1.0)
    with pytest.raises(ValueError, match="has no backward pass"):
        g(m)
    g.defvjp(lambda m: (m.w * 1.0, None), lambda res, g: ())
    with pytest.raises(ValueError, match="must return a tuple of 1 tangents"):
        lnnx.grad(g)(m)


@pytest.mark.parametrize(
    "bwd,flax_error",
    [
        # g is (updates_g, out_g) in the full graph mode: g * 2 repeats the pair
        (lambda x, g: (g * 2,), TypeError),
        (lambda x, g: (g[1], g[1]), ValueError),  # one tangent too many
        (lambda x, g: g[1], ValueError),  # not a tuple
    ],
    ids=["wrong-structure", "too-many", "bare-array"],
)
def test_custom_vjp_tangents_of_another_structure_raise_flaxs_class(bwd, flax_error):
    from lens import errors

    for nnx, error in ((fnnx, flax_error), (lnnx, errors.TangentStructureError)):

        @nnx.custom_vjp
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (jnp.sin(x), x), bwd)
        with pytest.raises(flax_error) as info:
            jax.grad(lambda x: f(x).sum())(jnp.ones(2))
        assert isinstance(info.value, error)


def test_vjp_and_jvp_match_flax_tree_mode():
    x = jax.random.normal(jax.random.key(1), (2, 2))
    lm = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    fm = fnnx.Linear(2, 3, rngs=fnnx.Rngs(0))
    ct = jnp.ones((2, 3))
    lo, lfn = lnnx.vjp(lambda m, x: m(x), lm, x)
    fo, ffn = fnnx.vjp(lambda m, x: m(x), fm, x, graph=False)
    (lgm, lgx), (fgm, fgx) = lfn(ct), ffn(ct)
    np.testing.assert_allclose(lo, fo, rtol=1e-6)
    assert type(lgm) is lnnx.Linear  # object-shaped, as flax.nnx gives it
    np.testing.assert_allclose(lgm.kernel.value, fgm.kernel.get_value(), rtol=1e-6)
    np.testing.assert_allclose(lgm.bias.value, fgm.bias.get_value(), rtol=1e-6)
    np.testing.assert_allclose(lgx, fgx, rtol=1e-6)

    lt = jax.tree.map(jnp.ones_like, lnnx.state(lm))
    ft = jax.tree.map(jnp.ones_like, fm)
    (lo, lot), (fo, fot) = (
        lnnx.jvp(lambda m, x: m(x), (lm, x), (lt, jnp.zeros_like(x))),
        fnnx.jvp(lambda m, x: m(x), (fm, x), (ft, jnp.zeros_like(x)), graph=False),
    )
    np.testing.assert_allclose(lot, fot, rtol=1e-6)
    with pytest.raises(ValueError, match="1 primals but 2 tangents"):
        lnnx.jvp(lambda m: m(x), (lm,), (lt, lt))


def test_vjp_has_aux_and_updates():
    bn = lnnx.BatchNorm(3, rngs=lnnx.Rngs(0))
    x = jax.random.normal(jax.random.key(0), (4, 3))
    out, fn, aux = lnnx.vjp(lambda bn, x: (bn(x), {"n": 4}), bn, x, has_aux=True)
    assert aux == {"n": 4}
    assert not np.allclose(bn.mean.value, 0.0)  # the batch statistics were updated
    g_bn, g_x = fn(jnp.ones_like(out))
    assert type(g_bn) is lnnx.BatchNorm
    assert sorted(lnnx.state(g_bn).keys()) == ["bias", "mean", "scale", "var"]
    assert g_x.shape == (4, 3)


def test_custom_vjp_simple_mode_has_jaxs_conventions():
    """graph_updates=False: bwd(residuals, out_g) returns tangents shaped like the
    arguments (an object as the pytree it is), as jax.custom_vjp's."""

    @lnnx.custom_vjp(graph_updates=False)
    def f(m, x):
        return jnp.sum(m.w[...] * x)

    def f_fwd(m, x):
        return f(m, x), (m, x)

    def f_bwd(res, g):
        m, x = res
        m_g = jax.tree.map(lambda v: 2 * g * x, m)  # deliberately not the true grad
        return m_g, g * m.w[...]

    f.defvjp(f_fwd, f_bwd)

    class M(lnnx.Module):
        def __init__(self):
            self.w = lnnx.Param(jnp.array([1.0, 2.0]))

    m, x = M(), jnp.array([3.0, 4.0])
    gm, gx = jax.grad(lambda m, x: f(m, x), argnums=(0, 1))(m, x)
    np.testing.assert_allclose(gm.w[...], [6.0, 8.0])
    np.testing.assert_allclose(gx, [1.0, 2.0])
