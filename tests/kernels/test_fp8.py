"""lens/_kernels/fp8.py (re-exported by lens.nn.fp8_ops), checked against
flax.linen.fp8_ops on the same inputs: values, gradients and the meta updates that
the custom gradients carry."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from lens._kernels import fp8
from tests.helpers import assert_tree_allclose

ffp8 = pytest.importorskip("flax.linen.fp8_ops")

E4M3, E5M2 = jnp.float8_e4m3fn, jnp.float8_e5m2
DN = (((1,), (0,)), ((), ()))  # a plain matmul
BATCHED = (((2,), (1,)), ((0,), (0,)))  # [b, m, k] x [b, k, n]


def _x(shape, seed=0, scale=3.0):
    return jax.random.normal(jax.random.key(seed), shape, jnp.float32) * scale


def _history(values):
    return jnp.asarray(values, jnp.float32)


@pytest.mark.parametrize("dtype", [E4M3, E5M2, jnp.float8_e4m3fnuz])
def test_fp8_max_matches_flax(dtype):
    assert fp8.get_fp8_max(dtype, jnp.float32) == ffp8.get_fp8_max(dtype, jnp.float32)
    with pytest.raises(AssertionError):
        fp8.get_fp8_max(jnp.bfloat16, jnp.float32)


@pytest.mark.parametrize("q_dtype", [E4M3, E5M2])
@pytest.mark.parametrize("scale", [0.01, 1.0, 4.0])
def test_quantize_dequantize_and_qdq_match_flax(q_dtype, scale):
    x, s = _x((4, 8)) * 100, jnp.asarray(scale)
    q = fp8.quantize(x, q_dtype, s, jnp.float32)
    assert q.dtype == q_dtype
    assert_tree_allclose(
        q.astype(jnp.float32),
        ffp8.quantize(x, q_dtype, s, jnp.float32).astype(jnp.float32),
    )
    assert_tree_allclose(
        fp8.dequantize(q, jnp.float32, s), ffp8.dequantize(q, jnp.float32, s)
    )
    assert_tree_allclose(
        fp8.qdq(x, q_dtype, s, jnp.float32), ffp8.qdq(x, q_dtype, s, jnp.float32)
    )
    # values past the range clip to its ends instead of becoming nan/inf
    assert bool(jnp.all(jnp.isfinite(fp8.qdq(x * 1e6, q_dtype, s, jnp.float32))))


@pytest.mark.parametrize("amax", [0.0, 2.5, 1e4, np.inf])
@pytest.mark.parametrize("margin", [0, 2])
def test_compute_scale_matches_flax(amax, margin):
    args = (jnp.asarray(amax), jnp.asarray(0.5), jnp.asarray(448.0))
    ours = fp8.compute_scale(*args, margin=margin)
    assert_tree_allclose(ours, ffp8.compute_scale(*args, margin=margin))
    if amax == 0.0 or not np.isfinite(amax):
        assert float(ours) == 0.5  # keeps the old scale


def test_amax_history_and_meta_update_match_flax():
    x, hist, scale = _x((3, 5)), _history([1.0, 7.0, 2.0, 0.0]), jnp.asarray(0.25)
    ours = fp8.compute_amax_history(x, hist)
    assert_tree_allclose(ours, ffp8.compute_amax_history(x, hist))
    assert float(ours[0]) == float(jnp.max(jnp.abs(x)))  # newest first
    assert_tree_allclose(ours[1:], jnp.roll(hist, -1)[1:])
    assert_tree_allclose(
        fp8.update_fp8_meta(x, E4M3, scale, hist),
        ffp8.update_fp8_meta(x, E4M3, scale, hist),
    )
    ours = fp8.quantize_dequantize_update(x, E4M3, scale, hist, jnp.float32)
    theirs = ffp8.quantize_dequantize_update(x, E4M3, scale, hist, jnp.float32)
    assert_tree_allclose(ours, theirs)


def test_meta_dtype_keeps_its_type_through_the_update():
    x = _x((3, 5))
    scale = lax.convert_element_type(jnp.asarray(0.25), fp8.fm32)
    hist = lax.convert_element_type(_history([1.0, 7.0, 2.0]), fp8.fm32)
    new_scale, new_hist = fp8.update_fp8_meta(x, E4M3, scale, hist)
    assert new_scale.dtype == fp8.fp32_max_grad and new_hist.dtype == fp8.fm32
    plain = fp8.update_fp8_meta(x, E4M3, jnp.asarray(0.25), _history([1.0, 7.0, 2.0]))
    as_f32 = [lax.convert_element_type(v, jnp.float32) for v in (new_scale, new_hist)]
    assert_tree_allclose(as_f32, list(plain))


def _two_uses_meta_gradient(mod):
    """The cotangents of a scale and history that two inputs are quantized with
    (extended dtypes: inside jit, as layers use them)."""
    x1, x2 = jnp.full((2, 2), 10.0), jnp.full((2, 2), 100.0)

    @jax.jit
    def grads(s32, h32):
        s = lax.convert_element_type(s32, mod.fm32)
        h = lax.convert_element_type(h32, mod.fm32)

        def f(s, h):
            a = mod.in_qdq(jnp.float32, E4M3, x1, s, h)
            b = mod.in_qdq(jnp.float32, E4M3, x2, s, h)
            return a.sum() + b.sum()

        _, vjp = jax.vjp(f, s, h)
        return [lax.convert_element_type(g, jnp.float32) for g in vjp(jnp.ones(()))]

    return grads(jnp.asarray(1.0), _history([0.0, 0.0]))


def test_meta_dtype_gradients_accumulate_by_max():
    # A scale used twice gets the larger of its two updates, not their sum.
    ours = _two_uses_meta_gradient(fp8)
    assert_tree_allclose(ours, _two_uses_meta_gradient(ffp8))
    assert ours[1].tolist() == [100.0, 0.0]  # max(10, 100), not 110


@pytest.mark.parametrize(
    "dn, lhs_shape, rhs_shape",
    [(DN, (4, 3), (3, 5)), (BATCHED, (2, 4, 3), (2, 3, 5))],
)
def test_dot_general_transposes_are_the_true_cotangents(dn, lhs_shape, rhs_shape):
    x, y = _x(lhs_shape, 1), _x(rhs_shape, 2)
    out, vjp = jax.vjp(lambda a, b: lax.dot_general(a, b, dn), x, y)
    g = _x(out.shape, 3)
    want_x, want_y = vjp(g)
    kw = dict(dimension_numbers=dn, precision=None, preferred_element_type=None)
    got_x = fp8.dot_general_transpose_lhs(g, x, y, **kw)
    got_y = fp8.dot_general_transpose_rhs(g, x, y, **kw)
    assert_tree_allclose((got_x, got_y), (want_x, want_y), rtol=1e-5, atol=1e-5)
    assert_tree_allclose(
        (got_x, got_y),
        (
            ffp8.dot_general_transpose_lhs(g, x, y, **kw),
            ffp8.dot_general_transpose_rhs(g, x, y, **kw),
        ),
    )


def _meta_grads(mod, op, *args):
    """Value and gradients of ``sum(op(compute, q, x, scale, hist))``."""
    return jax.value_and_grad(
        lambda x, s, h: jnp.sum(op(mod, x, s, h)), argnums=(0, 1, 2)
    )(*args)


@pytest.mark.parametrize("name", ["in_qdq", "out_qdq"])
def test_qdq_ops_value_and_gradient_match_flax(name):
    args = (_x((4, 8)) * 50, jnp.asarray(0.5), _history([3.0, 9.0, 1.0]))
    op = lambda mod, x, s, h: getattr(mod, name)(jnp.float32, E4M3, x, s, h)  # noqa: E731
    ours, theirs = _meta_grads(fp8, op, *args), _meta_grads(ffp8, op, *args)
    assert_tree_allclose(ours, theirs)
    # the "gradient" of the scale and history is their updated value
    new_scale, new_hist = fp8.update_fp8_meta(
        args[0] if name == "in_qdq" else jnp.ones((4, 8)), E4M3, args[1], args[2]
    )
    assert_tree_allclose(ours[1][1:], (new_scale, new_hist))


def test_in_q_and_out_dq_match_flax():
    x, s, h = _x((4, 8)) * 50, jnp.asarray(0.5), _history([3.0, 9.0, 1.0])
    q, new_s = fp8.in_q(jnp.float32, E4M3, x, s, h)
    fq, fnew_s = ffp8.in_q(jnp.float32, E4M3, x, s, h)
    assert q.dtype == E4M3
    assert_tree_allclose(
        (q.astype(jnp.float32), new_s), (fq.astype(jnp.float32), fnew_s)
    )
    ours = fp8.out_dq(jnp.float32, new_s, jnp.asarray(2.0), q)
    assert_tree_allclose(ours, ffp8.out_dq(jnp.float32, fnew_s, jnp.asarray(2.0), fq))


@pytest.mark.parametrize("dn, rhs_shape", [(DN, (8, 5)), (BATCHED, (4, 8, 5))])
def test_fp8_scaled_dot_general_value_and_gradients_match_flax(dn, rhs_shape):
    lhs = _x((4, 8) if dn is DN else (4, 2, 8), 1)
    rhs = _x(rhs_shape, 2)
    metas = dict(
        lhs_scale=jnp.asarray(1.0),
        rhs_scale=jnp.asarray(1.0),
        grad_scale=jnp.asarray(1.0),
        lhs_amax_history=_history([4.0, 0.0]),
        rhs_amax_history=_history([4.0, 0.0]),
        grad_amax_history=_history([1.0, 0.0]),
    )

    def loss(mod):
        def f(a, b, m):
            y = mod.fp8_scaled_dot_general(
                a, b, dn, preferred_element_type=jnp.float32, **m
            )
            return jnp.sum(y * jnp.arange(y.size).reshape(y.shape) / y.size)

        return jax.value_and_grad(f, argnums=(0, 1, 2))(lhs, rhs, metas)

    ours, theirs = loss(fp8), loss(ffp8)
    assert_tree_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    exact = jnp.sum(lax.dot_general(lhs, rhs, dn))
    assert ours[0] != 0 and abs(float(ours[0]) - float(exact)) > 0  # it rounded
    with pytest.warns(UserWarning, match="precision"):
        fp8.fp8_scaled_dot_general(lhs, rhs, dn, lax.Precision.HIGHEST, **metas)


def test_dot_general_with_precision_matches_flax():
    x, y = _x((4, 3), 1), _x((3, 5), 2)
    tx, ty = _x((4, 3), 3), _x((3, 5), 4)
    ours = jax.jvp(
        lambda a, b: fp8.dot_general_with_precision(a, b, DN), (x, y), (tx, ty)
    )
    theirs = jax.jvp(
        lambda a, b: ffp8.dot_general_with_precision(a, b, DN), (x, y), (tx, ty)
    )
    assert_tree_allclose(ours, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp8.dot_general_with_precision(x, y, DN)  # no warning by default
    with pytest.warns(UserWarning, match="disregard"):
        fp8.dot_general_with_precision(x, y, DN, lax.Precision.HIGHEST)


def test_parse_dot_inputs():
    x, k = jnp.ones((2, 3), jnp.float32), jnp.ones((3, 4), jnp.bfloat16)
    px, pk, dn, dtype = fp8._parse_dot_inputs(x, k, DN)
    assert px.dtype == dtype == jnp.bfloat16 and pk is k and dn == DN
    with pytest.raises(TypeError, match="positionally"):
        fp8._parse_dot_inputs(x, k)
