"""Issue 32 item 4: libraries that intercept flax.nnx layers by patching module
attributes (quantization, LoRA) see lens's layers use the patch."""

import jax.numpy as jnp
import numpy as np

import lens.nnx.nn.dtypes
import lens.nnx.nn.linear
from lens import nnx


def test_patched_linear_call_is_used_by_every_linear(monkeypatch):
    original = lens.nnx.nn.linear.Linear.__call__
    seen = []

    def quantized(self, x, *args, **kwargs):
        seen.append(type(self).__name__)
        return original(self, x, *args, **kwargs)

    monkeypatch.setattr(lens.nnx.nn.linear.Linear, "__call__", quantized)
    assert nnx.Linear is lens.nnx.nn.linear.Linear
    x = jnp.ones((1, 2))
    nnx.Linear(2, 3, rngs=nnx.Rngs(0))(x)
    nnx.LoRALinear(2, 3, lora_rank=1, rngs=nnx.Rngs(0))(x)
    assert seen == ["Linear", "LoRALinear"]


def test_patched_canonicalize_dtype_is_looked_up_at_call_time(monkeypatch):
    calls = []
    original = lens.nnx.nn.dtypes.canonicalize_dtype

    def spy(*args, **kwargs):
        calls.append(len(args))
        return original(*args, **kwargs)

    layer = nnx.WeightNorm(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(1))
    monkeypatch.setattr(lens.nnx.nn.dtypes, "canonicalize_dtype", spy)
    layer(jnp.ones((1, 2)))
    assert calls  # WeightNorm cast through the patched function


def test_custom_promote_dtype_is_called_by_the_fast_layers():
    calls = []

    def promote(arrays, *, dtype=None, inexact=True):
        calls.append(len(arrays))
        return lens.nnx.nn.dtypes.promote_dtype(arrays, dtype=dtype, inexact=inexact)

    x = jnp.ones((2, 4))
    for layer in (
        nnx.Linear(4, 3, promote_dtype=promote, rngs=nnx.Rngs(0)),
        nnx.LayerNorm(4, promote_dtype=promote, rngs=nnx.Rngs(0)),
        nnx.RMSNorm(4, promote_dtype=promote, rngs=nnx.Rngs(0)),
        nnx.Conv(4, 3, 1, promote_dtype=promote, rngs=nnx.Rngs(0)),
    ):
        before = len(calls)
        np.asarray(layer(x))
        assert len(calls) == before + 1, type(layer).__name__
