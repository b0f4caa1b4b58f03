"""lens.core.nn.multi_head_dot_product_attention: masks and the decoding cache."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens.core import apply, init
from lens.core import nn as cnn


def _attend(scope, x, **kw):
    return cnn.multi_head_dot_product_attention(
        scope, x, None, num_heads=2, qkv_features=4, causal_mask=True, **kw
    )


def _decoding_state(x):
    # As Flax: a first call with the full shape stores an init function; calling
    # it with (batch, length) gives the empty CacheEntry.
    _, variables = init(_attend, mutable=True)(jax.random.key(0), x, cache=True)
    entry = variables["cache"]["entry"](x.shape[:2])
    assert isinstance(entry, cnn.attention.CacheEntry)
    return dict(variables, cache={"entry": entry})


def test_cached_decoding_matches_causal_attention_position_by_position():
    x = jax.random.normal(jax.random.key(1), (1, 5, 4))
    y_full, _ = init(_attend)(jax.random.key(0), x)
    state = _decoding_state(x)
    ys = []
    for t in range(x.shape[1]):
        y, upd = apply(_attend, mutable=["cache"])(state, x[:, t : t + 1], cache=True)
        state = dict(state, cache=upd["cache"])
        ys.append(y)
    np.testing.assert_allclose(jnp.concatenate(ys, 1), y_full, rtol=1e-5, atol=1e-5)
    assert int(state["cache"]["entry"].i) == x.shape[1]


def test_cache_rejects_a_step_of_the_wrong_shape():
    x = jnp.ones((1, 5, 4))
    state = _decoding_state(x)
    with pytest.raises(ValueError, match="Invalid shape provided"):
        apply(_attend, mutable=["cache"])(state, x[:, :2], cache=True)


def test_uninitialised_cache_entry_is_named():
    x = jnp.ones((1, 5, 4))
    state = dict(_decoding_state(x), cache={"entry": jnp.zeros(())})
    with pytest.raises(ValueError, match="Cache is not initialized"):
        apply(_attend, mutable=["cache"])(state, x[:, :1], cache=True)


def test_padding_mask_hides_padded_keys():
    x = jax.random.normal(jax.random.key(2), (1, 4, 4))
    pad = jnp.array([[1, 1, 0, 0]], jnp.float32)[..., None]
    y, v = init(_attend)(jax.random.key(0), x, padding_mask=pad)
    changed = x.at[:, 2:].set(100.0)  # padded keys must not matter for query 0..1
    y2 = apply(_attend)(v, changed, padding_mask=pad)
    np.testing.assert_allclose(y[:, :2], y2[:, :2], rtol=1e-5, atol=1e-5)
