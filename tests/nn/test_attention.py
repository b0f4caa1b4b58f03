"""Attention: masks, and autoregressive decoding with the cache."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nn


def test_causal_mask_and_combine():
    m = nn.make_causal_mask(jnp.ones((1, 4)))
    assert m.shape == (1, 1, 4, 4)
    np.testing.assert_array_equal(m[0, 0], np.tril(np.ones((4, 4))))
    pad = nn.make_attention_mask(jnp.array([[1, 1, 0, 0]]), jnp.array([[1, 1, 0, 0]]))
    both = nn.combine_masks(m, pad)
    assert float(both[0, 0, 1, 2]) == 0.0 and float(both[0, 0, 1, 1]) == 1.0
    assert nn.combine_masks(None, None) is None


def test_decode_one_step_at_a_time_matches_full_causal_attention():
    x = jax.random.normal(jax.random.key(1), (2, 5, 8))
    full = nn.SelfAttention(num_heads=2)
    variables = full.init(jax.random.key(0), x)
    y_full = full.apply(variables, x, mask=nn.make_causal_mask(jnp.ones((2, 5))))

    dec = nn.SelfAttention(num_heads=2, decode=True)
    cache = dec.init(jax.random.key(0), x)["cache"]  # initialised for length 5
    assert cache["cache_index"] == 0 and cache["cached_key"].shape == (2, 5, 2, 4)
    outs = []
    for t in range(5):
        y, upd = dec.apply(
            {"params": variables["params"], "cache": cache},
            x[:, t : t + 1],
            mutable=["cache"],
        )
        cache = upd["cache"]
        outs.append(y)
    np.testing.assert_allclose(
        jnp.concatenate(outs, axis=1), y_full, rtol=1e-5, atol=1e-5
    )
    assert int(cache["cache_index"]) == 5
    with pytest.raises(
        ValueError, match="(?s)Autoregressive cache shape error.*one step"
    ):
        dec.apply(
            {"params": variables["params"], "cache": cache}, x[:, :2], mutable=["cache"]
        )


def test_attention_dropout_uses_the_dropout_stream():
    x = jnp.ones((1, 4, 8))
    att = nn.SelfAttention(num_heads=2, dropout_rate=0.5)
    v = att.init(jax.random.key(0), x, deterministic=True)
    a = att.apply(v, x, deterministic=False, rngs={"dropout": jax.random.key(1)})
    b = att.apply(v, x, deterministic=False, rngs={"dropout": jax.random.key(2)})
    assert not np.allclose(a, b)
    np.testing.assert_allclose(
        att.apply(v, x, deterministic=True), att.apply(v, x, deterministic=True)
    )


def test_attention_dropout_without_a_key_raises_jax_type_error_with_the_fix():
    q = jnp.ones((1, 2, 1, 4))
    with pytest.raises(TypeError, match=r"^unexpected PRNG key type") as e:
        nn.dot_product_attention_weights(q, q, dropout_rate=0.5)
    assert "pass dropout_rng, or deterministic=True" in str(e.value)
    # deterministic, or no dropout: no key needed
    w = nn.dot_product_attention_weights(q, q, dropout_rate=0.5, deterministic=True)
    assert w.shape == (1, 1, 2, 2)
