"""lens.nnx.nn.attention's dot_product_attention_weights (flax.nnx's: grouped
heads, is_causal, promote_dtype, weights sown before dropout) and the names the
other nnx.nn modules share with flax.nnx (masks, paddings, initializers,
flip_sequences, RNNBase), against flax.nnx."""

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, PartitionSpec, reshard

from lens import nn as lnn
from lens import nnx as lnnx
from lens.nnx.nn import attention as la
from lens.nnx.nn import initializers as linit
from lens.nnx.nn import linear as llinear
from lens.nnx.nn import lora as llora
from lens.nnx.nn import recurrent as lrec

fnnx = pytest.importorskip("flax.nnx")
fa = pytest.importorskip("flax.nnx.nn.attention")
flora = pytest.importorskip("flax.nnx.nn.lora")
frec = pytest.importorskip("flax.nnx.nn.recurrent")

# Inputs made with numpy: module-level JAX ops would compile while every pytest-xdist
# worker collects this file, not only the one that runs it.
_R = np.random.default_rng(0)
Q = jnp.asarray(_R.standard_normal((2, 5, 4, 8), np.float32))
KEY = jnp.asarray(
    _R.standard_normal((2, 6, 2, 8), np.float32)
)  # 2 key heads for 4 query heads
VALUE = jnp.asarray(_R.standard_normal((2, 6, 2, 3), np.float32))
MASK = jnp.asarray(_R.random((2, 1, 5, 6)) < 0.7)

CASES = {
    "grouped, masked": dict(mask=MASK),
    "causal, dropout": dict(
        is_causal=True, dropout_rng=jax.random.key(3), dropout_rate=0.3
    ),
    "dropout per head": dict(
        broadcast_dropout=False, dropout_rng=jax.random.key(4), dropout_rate=0.3
    ),
    "bfloat16": dict(dtype=jnp.bfloat16),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_weights_match_flax_nnx(case):
    key = KEY[:, :5] if "causal" in case or "dropout" in case else KEY
    ours = la.dot_product_attention_weights(Q, key, **CASES[case])
    theirs = fa.dot_product_attention_weights(Q, key, **CASES[case])
    assert ours.shape == theirs.shape == (2, 4, 5, key.shape[1])
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(
        np.asarray(ours, np.float32),
        np.asarray(theirs, np.float32),
        rtol=1e-5,
        atol=1e-6,
    )


def test_weights_take_the_promote_dtype_function():
    calls = []

    def promote(arrays, dtype=None):
        calls.append(len(arrays))
        return tuple(jnp.asarray(a, jnp.float16) for a in arrays)

    w = la.dot_product_attention_weights(Q, KEY, promote_dtype=promote)
    assert calls == [2] and w.dtype == jnp.float16


def _sown(nnx, attention):
    class Holder(nnx.Module):
        pass

    holder = Holder()
    out = attention.dot_product_attention(
        Q,
        KEY,
        VALUE,
        mask=MASK,
        module=holder,
        dropout_rng=jax.random.key(5),
        dropout_rate=0.5,
    )
    return out, nnx.state(holder, nnx.Intermediate)["attention_weights"].get_value()[0]


@pytest.mark.filterwarnings("ignore:Using .Module.sow\\(\\). outside")  # as flax.nnx
def test_attention_sows_the_weights_before_dropout_as_flax():
    (out, sown), (fout, fsown) = _sown(lnnx, la), _sown(fnnx, fa)
    np.testing.assert_allclose(out, fout, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sown, fsown, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sown.sum(-1), 1.0, rtol=1e-5)  # no dropout in them


def test_weights_refuse_keys_that_do_not_fit():
    with pytest.raises(ValueError, match=r"^q, k must have same rank, but got 4, 5\."):
        la.dot_product_attention_weights(Q, KEY[None])
    with pytest.raises(ValueError, match=r"^q, k depths must match, but got 8 and 4\."):
        la.dot_product_attention_weights(Q, KEY[..., :4])
    with pytest.raises(ValueError, match=r"^Query heads \(4\) must be multiple of Key"):
        la.dot_product_attention_weights(Q, jnp.ones((2, 6, 3, 8)))
    with pytest.raises(TypeError, match="needs a key"):
        la.dot_product_attention_weights(Q, KEY, dropout_rate=0.5)


def test_shared_names_are_lens_nn_functions():
    assert la.make_attention_mask is lnn.make_attention_mask
    assert la.make_causal_mask is lnn.make_causal_mask
    assert llinear.canonicalize_padding is lnn.linear.canonicalize_padding
    assert llinear.canonicalize_padding(1, 2) == [(1, 1), (1, 1)]
    with pytest.raises(ValueError, match="^Invalid padding format"):
        llinear.canonicalize_padding([1, (1, 2, 3)], 2)  # type: ignore[arg-type]
    assert lrec.Output is Any and linit.DtypeLikeInexact is Any
    assert llinear.Axis is int and llinear.Size is int and llora.Axis is int


def test_default_initializers_draw_as_flax():
    key = jax.random.key(7)
    pairs = [
        (llora.default_a_initializer, flora.default_a_initializer),
        (llora.default_b_initializer, flora.default_b_initializer),
        (lrec.default_kernel_init, frec.default_kernel_init),
        (lrec.default_bias_init, frec.default_bias_init),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours(key, (3, 4)), theirs(key, (3, 4)), rtol=1e-6)
    lora = lnnx.LoRA(3, 2, 4, rngs=lnnx.Rngs(0))
    ref = llora.default_a_initializer(lnnx.Rngs(0).params(), (3, 2))
    np.testing.assert_allclose(lora.lora_a.value, ref, rtol=1e-6)


def test_flip_sequences_matches_flax():
    x = jnp.arange(24.0).reshape(2, 4, 3)
    lengths = jnp.array([2, 4])
    for time_major, arr in ((False, x), (True, jnp.swapaxes(x, 0, 1))):
        for seq in (lengths, None):
            np.testing.assert_array_equal(
                lrec.flip_sequences(arr, seq, 1, time_major),
                frec.flip_sequences(arr, seq, 1, time_major),
            )


def test_rnn_base_is_flax_nnx_protocol_and_rnn_satisfies_it():
    ours = inspect.signature(lrec.RNNBase.__call__).parameters
    theirs = inspect.signature(frec.RNNBase.__call__).parameters
    assert list(ours) == list(theirs)
    rnn = lnnx.RNN(lnnx.SimpleCell(3, 4, rngs=lnnx.Rngs(0)))
    assert set(ours) - {"self"} <= set(inspect.signature(rnn.__call__).parameters)
    bi = lnnx.Bidirectional(rnn, lnnx.RNN(lnnx.SimpleCell(3, 4, rngs=lnnx.Rngs(1))))
    assert bi(jnp.ones((2, 5, 3))).shape == (2, 5, 8)


@pytest.mark.parametrize("broadcast_dims", [(), (1,)])
def test_dropout_mask_follows_the_input_sharding(broadcast_dims):
    mesh = jax.make_mesh((2, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        x = reshard(jnp.arange(8.0).reshape(2, 4), PartitionSpec("X", None))
        layer = lnnx.Dropout(0.5, broadcast_dims=broadcast_dims, rngs=lnnx.Rngs(0))
        assert "float32[2@X,4]" in str(jax.typeof(layer(x)))
        y = jax.jit(lambda x, rngs: layer(x, rngs=rngs))(x, lnnx.Rngs(0))
        assert "float32[2@X,4]" in str(jax.typeof(y))
