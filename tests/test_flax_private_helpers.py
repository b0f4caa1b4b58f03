"""Flax's private helpers that real projects import, at Flax's paths, against flax.

Projects write their own layers with ``flax.linen.linear._conv_dimension_numbers``,
``flax.linen.normalization._compute_stats`` / ``_normalize`` / ``_canonicalize_axes``
(RL agents' custom norms, scico, aqt, gemma's LoRA with ``_canonicalize_tuple``), and
etils checks ``isinstance(x, flax.linen.summary._ArrayRepresentation)`` on every
array once flax.linen is imported. Each is served at its Flax path and compared
with flax's here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.nn as lnn

flax_linen = pytest.importorskip("flax.linen")
fnnx = pytest.importorskip("flax.nnx")

import flax.linen.linear as flinear  # noqa: E402
import flax.linen.normalization as fnorm  # noqa: E402
import flax.linen.recurrent as frecurrent  # noqa: E402
import flax.linen.summary as fsummary  # noqa: E402
import flax.nnx.nn.linear as fnnx_linear  # noqa: E402
import flax.nnx.nn.normalization as fnnx_norm  # noqa: E402
import flax.nnx.nn.recurrent as fnnx_recurrent  # noqa: E402

import lens.nn.linear as llinear  # noqa: E402
import lens.nn.normalization as lnorm  # noqa: E402
import lens.nn.recurrent as lrecurrent  # noqa: E402
import lens.nn.summary as lsummary  # noqa: E402
import lens.nnx.nn.linear as lnnx_linear  # noqa: E402
import lens.nnx.nn.normalization as lnnx_norm  # noqa: E402
import lens.nnx.nn.recurrent as lnnx_recurrent  # noqa: E402

X = jax.random.normal(jax.random.key(0), (2, 3, 5))


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"), [(llinear, flinear), (lnnx_linear, fnnx_linear)]
)
def test_linear_helpers(lens_mod, flax_mod):
    for x in (3, (1, 2), [4]):
        assert lens_mod._canonicalize_tuple(x) == flax_mod._canonicalize_tuple(x)
    for axes in ((-1, 0), (2, -2), ()):
        assert lens_mod._normalize_axes(axes, 3) == flax_mod._normalize_axes(axes, 3)
    for shape in ((1, 8, 3), (2, 8, 8, 3), (1, 4, 4, 4, 2)):
        got = lens_mod._conv_dimension_numbers(shape)
        assert got == flax_mod._conv_dimension_numbers(shape)
    kernel = jnp.ones((3, 3, 3, 4))
    dims = llinear._conv_dimension_numbers((2, 8, 8, 3))
    y = jax.lax.conv_general_dilated(
        jnp.ones((2, 8, 8, 3)), kernel, (1, 1), "SAME", dimension_numbers=dims
    )
    assert y.shape == (2, 8, 8, 4)


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"), [(lnorm, fnorm), (lnnx_norm, fnnx_norm)]
)
def test_statistics_helpers(lens_mod, flax_mod):
    for axes in (-1, (0, -1), [2, 2, -1]):
        assert lens_mod._canonicalize_axes(3, axes) == tuple(
            sorted(flax_mod._canonicalize_axes(3, axes))
        )
    z = X + 1j * X[::-1]
    np.testing.assert_allclose(lens_mod._abs_sq(z), flax_mod._abs_sq(z), rtol=1e-6)
    mask = X > -0.5
    cases = [
        dict(axes=-1, dtype=None),
        dict(axes=(1, 2), dtype=jnp.bfloat16),
        dict(axes=(0, 2), dtype=None, use_mean=False),
        dict(axes=-1, dtype=None, use_fast_variance=False),
        dict(axes=-1, dtype=None, mask=mask),
    ]
    for case in cases:
        got = lens_mod._compute_stats(X, **case)
        want = flax_mod._compute_stats(X, **case)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, case
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if lens_mod is lnorm:  # Linen's also takes force_float32_reductions
        half = X.astype(jnp.bfloat16)
        got = lnorm._compute_stats(half, -1, None, force_float32_reductions=False)
        want = fnorm._compute_stats(half, -1, None, force_float32_reductions=False)
        assert got[1].dtype == want[1].dtype == jnp.bfloat16


def test_l2_normalize():
    np.testing.assert_allclose(
        lnnx_norm._l2_normalize(X, axis=-1),
        fnnx_norm._l2_normalize(X, axis=-1),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        lnorm._l2_normalize(X), fnorm._l2_normalize(X), rtol=1e-6
    )


def _custom_norm(nn, norm_mod):
    """A Linen norm written as projects write theirs: the private helpers."""

    class CustomNorm(nn.Module):
        use_bias: bool = True

        @nn.compact
        def __call__(self, x):
            mean, var = norm_mod._compute_stats(x, (1, 2), None)
            return norm_mod._normalize(
                self,
                x,
                mean,
                var,
                (1, 2),
                -1,
                None,
                jnp.float32,
                1e-6,
                self.use_bias,
                True,
                nn.initializers.zeros,
                nn.initializers.ones,
            )

    return CustomNorm


@pytest.mark.parametrize("use_bias", [True, False])
def test_a_linen_norm_written_with_the_helpers(use_bias):
    got_vars = _custom_norm(lnn, lnorm)(use_bias).init(jax.random.key(0), X)
    want_vars = _custom_norm(flax_linen, fnorm)(use_bias).init(jax.random.key(0), X)
    assert jax.tree.map(jnp.shape, dict(got_vars)) == jax.tree.map(
        jnp.shape, dict(want_vars)
    )
    params = jax.tree.map(lambda v: v + 0.5, dict(want_vars))
    got = _custom_norm(lnn, lnorm)(use_bias).apply(params, X)
    want = _custom_norm(flax_linen, fnorm)(use_bias).apply(params, X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nnx_normalize():
    mean, var = fnnx_norm._compute_stats(X, -1, None)
    scale, bias = jnp.full((5,), 2.0), jnp.full((5,), 0.5)
    for s, b in ((scale, bias), (None, bias), (scale, None), (None, None)):
        got = lnnx_norm._normalize(X, mean, var, s, b, -1, -1, None, 1e-6)
        want = fnnx_norm._normalize(X, mean, var, s, b, -1, -1, None, 1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"),
    [(lrecurrent, frecurrent), (lnnx_recurrent, fnnx_recurrent)],
)
def test_recurrent_helpers(lens_mod, flax_mod):
    carries = {"h": jnp.arange(24.0).reshape(4, 3, 2)}  # (time, batch, features)
    lengths = jnp.array([1, 4, 2])
    got = lens_mod._select_last_carry(carries, lengths)
    np.testing.assert_array_equal(
        got["h"], flax_mod._select_last_carry(carries, lengths)["h"]
    )
    assert (
        lens_mod._expand_dims_like(jnp.ones(3), X).shape
        == flax_mod._expand_dims_like(jnp.ones(3), X).shape
    )
    np.testing.assert_array_equal(
        lens_mod._concatenate(X, X), flax_mod._concatenate(X, X)
    )


def test_summary_representations_render_as_flaxs():
    for x in (X, jnp.ones((), jnp.int8)):
        got = lsummary._ArrayRepresentation.from_array(x)
        want = fsummary._ArrayRepresentation.from_array(x)
        assert (tuple(got.shape), got.dtype) == (tuple(want.shape), want.dtype)
        assert got.render() == want.render()
        assert isinstance(got, lsummary._ValueRepresentation)
    boxed = lnn.Partitioned(X, ("a", "b", None))
    got = lsummary._PartitionedArrayRepresentation.from_partitioned(boxed)
    want = fsummary._PartitionedArrayRepresentation.from_partitioned(
        flax_linen.Partitioned(X, ("a", "b", None))
    )
    assert got.render() == want.render()
    for n in (0, 512, 3 * 1024**2):
        assert lsummary._bytes_repr(n) == fsummary._bytes_repr(n)
    assert lsummary._size_and_bytes_repr(6, 24) == fsummary._size_and_bytes_repr(6, 24)


def test_nnx_and_linen_names_are_one_object():
    # one implementation behind both paths, served lazily by the facades
    assert lnorm._compute_stats is lnnx_norm._compute_stats
    assert llinear._conv_dimension_numbers is lnnx_linear._conv_dimension_numbers


def test_pmap_device_order_is_the_local_devices():
    import flax.jax_utils

    import lens.jax_utils

    assert lens.jax_utils._pmap_device_order() == flax.jax_utils._pmap_device_order()


def test_empty_node_class_at_nnx_traversals():
    import flax.nnx.traversals

    import lens.nnx.traversals

    assert isinstance(lens.nnx.traversals.empty_node, lens.nnx.traversals._EmptyNode)
    assert isinstance(flax.nnx.traversals.empty_node, flax.nnx.traversals._EmptyNode)
