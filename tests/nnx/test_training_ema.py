"""lens.nnx.EMA: flax.nnx's exponential moving average of Variables."""

import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx


def test_update_blends_and_apply_to_shares():
    model = nnx.Linear(2, 2, use_bias=False, rngs=nnx.Rngs(0))
    start = np.asarray(model.kernel[...])
    ema = nnx.EMA(model, decay=0.9)
    view = ema.apply_to(model)
    assert view.kernel is ema.params.kernel
    model.kernel[...] = model.kernel[...] * 2
    ema.update(model)
    np.testing.assert_allclose(ema.params.kernel[...], 1.1 * start, rtol=1e-6)
    np.testing.assert_allclose(view.kernel[...], 1.1 * start, rtol=1e-6)


def test_only_filter_tracks_a_subset():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    ema = nnx.EMA(model, decay=0.5, only=nnx.PathContains("kernel"))
    assert set(ema.params) == {"kernel"}


def test_non_variable_leaf_is_flax_type_error():
    with pytest.raises(TypeError) as info:
        nnx.EMA({"w": jnp.ones(2)}, decay=0.9)
    assert str(info.value).startswith("EMA only supports Variable leaves, got")
    assert "only=nnx.Param" in str(info.value)
