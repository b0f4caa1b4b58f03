"""lens/_kernels/norm.py: the layer-norm entry point and its spec."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

from lens._kernels import norm
from tests.helpers import assert_tree_allclose


def _spec(**over):
    base = dict(
        reduction=(1,),
        feature_axes=(1,),
        use_mean=True,
        epsilon=1e-6,
        dtype=None,
        fast_variance=True,
        stats_dtype=jnp.float32,
        params_dtype=None,
    )
    return norm.LayerNormSpec(**{**base, **over})


@pytest.mark.parametrize("use_mean", [True, False])
def test_apply_layer_norm_normalizes_as_the_spec_says(use_mean):
    x = jax.random.normal(jax.random.key(0), (4, 6)) * 3 + 1
    scale, bias = jnp.full((6,), 2.0), jnp.full((6,), 0.5)
    y = norm.apply_layer_norm(x, scale, bias, None, _spec(use_mean=use_mean))
    centred = x - x.mean(axis=1, keepdims=True) if use_mean else x
    var = (centred**2).mean(axis=1, keepdims=True)
    assert_tree_allclose(y, centred / jnp.sqrt(var + 1e-6) * 2.0 + 0.5, atol=1e-5)


def test_statistics_across_devices_with_axis_name():
    # each device holds two rows; per feature, the statistics span all 16 rows
    x = jax.random.normal(jax.random.key(2), (8, 2, 3))
    spec = _spec(reduction=(0,), feature_axes=(1,), axis_name="d")
    y = jax.pmap(
        lambda v: norm.apply_layer_norm(v, None, None, None, spec), axis_name="d"
    )(x)
    flat = x.reshape(16, 3)
    want = (flat - flat.mean(0)) / jnp.sqrt(flat.var(0) + 1e-6)
    assert_tree_allclose(y.reshape(16, 3), want, atol=1e-5)


def test_spec_is_frozen_and_hashable():
    spec = _spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.epsilon = 1.0  # type: ignore[misc]
    assert hash(spec) == hash(_spec())
