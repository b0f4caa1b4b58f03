"""lens.nnx Conv / ConvTranspose against flax.nnx (the oracle): same params for the
same key, same outputs, for every padding Flax adds on top of lax's."""

import re

import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx

fnnx = pytest.importorskip("flax.nnx")

# numpy, not jax.random: no compile while a worker only collects this file
X = np.random.default_rng(0).standard_normal((2, 3, 8, 3), np.float32)  # two batch axes


@pytest.mark.parametrize("padding", ["SAME", "VALID", "CIRCULAR", "REFLECT", 1])
@pytest.mark.parametrize("strides", [1, 2])
def test_conv_matches_flax(padding, strides):
    kw = dict(kernel_size=(3,), strides=strides, padding=padding, kernel_dilation=2)
    ours = nnx.Conv(3, 4, rngs=nnx.Rngs(0), **kw)
    theirs = fnnx.Conv(3, 4, rngs=fnnx.Rngs(0), **kw)
    np.testing.assert_array_equal(ours.kernel[...], theirs.kernel[...])
    x = X.reshape(2, 3 * 8, 3)[:, :, :]
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6, atol=1e-6)


def test_conv_causal_and_batch_axes_match_flax():
    ours = nnx.Conv(3, 4, 2, padding="CAUSAL", rngs=nnx.Rngs(1))
    theirs = fnnx.Conv(3, 4, 2, padding="CAUSAL", rngs=fnnx.Rngs(1))
    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", ["SAME", "VALID", "CIRCULAR"])
@pytest.mark.parametrize("transpose_kernel", [False, True])
def test_conv_transpose_matches_flax(padding, transpose_kernel):
    kw = dict(strides=2, padding=padding, transpose_kernel=transpose_kernel)
    ours = nnx.ConvTranspose(3, 4, (3, 3), rngs=nnx.Rngs(0), **kw)
    theirs = fnnx.ConvTranspose(3, 4, (3, 3), rngs=fnnx.Rngs(0), **kw)
    x = X[0].reshape(1, 3, 8, 3)
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-5, atol=1e-5)


def test_mask_multiplies_the_kernel():
    mask = jnp.zeros((3, 3, 4)).at[1].set(1.0)
    ours = nnx.Conv(3, 4, 3, mask=mask, rngs=nnx.Rngs(0))
    theirs = fnnx.Conv(3, 4, 3, mask=mask, rngs=fnnx.Rngs(0))
    x = X[0]
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6, atol=1e-6)


def test_bad_mask_shape_is_flax_error():
    layer = nnx.Conv(3, 4, 3, mask=jnp.ones((2, 2)), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError) as info:
        layer(X[0])
    assert str(info.value).startswith("Mask needs to have the same shape as weights.")


def test_causal_padding_needs_one_spatial_axis():
    layer = nnx.Conv(3, 4, (2, 2), padding="CAUSAL", rngs=nnx.Rngs(0))
    with pytest.raises(ValueError) as info:
        layer(X)
    assert str(info.value).startswith(
        "Causal padding is only implemented for 1D convolutions."
    )


def test_layers_build_no_linen_module(monkeypatch):
    """Issue 28: the nnx layers call lens/_kernels, not a Linen module's apply."""
    import lens.nn

    def boom(*a, **k):
        raise AssertionError("nnx layer built a Linen module")

    for name in ("Conv", "ConvTranspose", "RMSNorm", "GroupNorm"):
        monkeypatch.setattr(getattr(lens.nn, name), "apply", boom)
    nnx.Conv(3, 4, 3, rngs=nnx.Rngs(0))(X[0])
    nnx.ConvTranspose(3, 4, 3, rngs=nnx.Rngs(0))(X[0])
    nnx.RMSNorm(3, rngs=nnx.Rngs(0))(X)
    nnx.GroupNorm(3, num_groups=3, rngs=nnx.Rngs(0))(X)


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: nnx.Linear(2, -1, rngs=nnx.Rngs(0)), "out_features=-1"),
        (lambda: nnx.Linear(0, 3, rngs=nnx.Rngs(0)), "in_features=0"),
        (lambda: nnx.Conv(3, 4, 0, rngs=nnx.Rngs(0)), "kernel_size=0"),
        (lambda: nnx.Conv(3, 4, (3, -1), rngs=nnx.Rngs(0)), "kernel_size=(3, -1)"),
        (
            lambda: nnx.Conv(3, 4, 3, feature_group_count=0, rngs=nnx.Rngs(0)),
            "feature_group_count=0",
        ),
        (lambda: nnx.Dropout(1.5), "rate=1.5"),
        (lambda: nnx.Dropout(-0.1), "rate=-0.1"),
    ],
)
def test_impossible_hyperparameters_are_clear_errors(make, field):
    """Issue 27: no layer has these; flax fails later inside JAX, or never."""
    from lens.errors import InvalidHyperparameterError

    with pytest.raises(InvalidHyperparameterError, match=re.escape(field)) as info:
        make()
    assert isinstance(info.value, ValueError)
    assert "e.g." in str(info.value)
