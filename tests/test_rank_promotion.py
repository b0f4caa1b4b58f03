"""lens's layers under ``jax_numpy_rank_promotion='raise'``.

Flax's CI runs its tests and examples with implicit rank promotion as an error,
and so do users who want shape bugs caught; a lens kernel that adds a ``(n,)``
bias to a ``(b, n)`` array without reshaping it fails there though it computes
the same numbers. Each layer here is built, initialized and called eagerly and
under jit with promotion raising.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import lens.nn as nn
from lens import nnx

X2 = jnp.ones((2, 6))
X3 = jnp.ones((2, 5, 6))
X4 = jnp.ones((2, 8, 8, 3))
TOKENS = jnp.array([[1, 2, 3], [0, 4, 5]])
STATS = {"mutable": ["batch_stats"]}  # apply's keywords for layers with statistics


class _Pool(nn.Module):
    """A pooling function (Linen's are functions) as a layer of this table."""

    fn: object

    @nn.compact
    def __call__(self, x):
        return self.fn(x, (2, 2), strides=(1, 1), padding="SAME")  # type: ignore[operator]


LINEN = {
    "Dense": (lambda: nn.Dense(4), X2),
    "Dense 3d": (lambda: nn.Dense(4), X3),
    "DenseGeneral": (lambda: nn.DenseGeneral((2, 3), axis=-1), X3),
    "Einsum": (lambda: nn.Einsum((6, 4), "abc,cd->abd"), X3),
    "Conv": (lambda: nn.Conv(4, (3, 3)), X4),
    "ConvTranspose": (lambda: nn.ConvTranspose(4, (3, 3)), X4),
    "ConvLocal": (lambda: nn.ConvLocal(4, (3, 3)), X4),
    "Embed": (lambda: nn.Embed(8, 4), TOKENS),
    "LayerNorm": (lambda: nn.LayerNorm(), X3),
    "RMSNorm": (lambda: nn.RMSNorm(), X3),
    "GroupNorm": (lambda: nn.GroupNorm(num_groups=3), X4),
    "InstanceNorm": (lambda: nn.InstanceNorm(), X4),
    "BatchNorm": (lambda: nn.BatchNorm(use_running_average=False), X4, STATS),
    "avg_pool": (lambda: _Pool(nn.avg_pool), X4),
    "avg_pool without padding counted": (
        lambda: _Pool(
            lambda x, *a, **k: nn.avg_pool(x, *a, count_include_pad=False, **k)
        ),
        X4,
    ),
    "max_pool": (lambda: _Pool(nn.max_pool), X4),
    "min_pool": (lambda: _Pool(nn.min_pool), X4),
    "MultiHeadDotProductAttention": (
        lambda: nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4),
        X3,
    ),
    "LSTM RNN": (lambda: nn.RNN(nn.LSTMCell(4)), X3),
    "OptimizedLSTM RNN": (lambda: nn.RNN(nn.OptimizedLSTMCell(4)), X3),
    "GRU RNN": (lambda: nn.RNN(nn.GRUCell(4)), X3),
    "MGU RNN": (lambda: nn.RNN(nn.MGUCell(4)), X3),
    "SimpleCell RNN": (lambda: nn.RNN(nn.SimpleCell(4)), X3),
    "Bidirectional": (
        lambda: nn.Bidirectional(nn.RNN(nn.GRUCell(4)), nn.RNN(nn.GRUCell(4))),
        X3,
    ),
    "WeightNorm": (lambda: nn.WeightNorm(nn.Dense(4)), X2),
    "SpectralNorm": (
        lambda: nn.SpectralNorm(nn.Dense(4)),
        X2,
        {"update_stats": True, **STATS},
    ),
}


@pytest.mark.parametrize("name", sorted(LINEN))
def test_linen_layers_do_not_promote_ranks(name):
    make, x, *rest = LINEN[name]
    kwargs = rest[0] if rest else {}
    init_kwargs = {k: v for k, v in kwargs.items() if k != "mutable"}
    with jax.numpy_rank_promotion("raise"):
        variables = make().init(jax.random.key(0), x, **init_kwargs)
        eager = make().apply(variables, x, **kwargs)
        jitted = jax.jit(lambda v, x: make().apply(v, x, **kwargs))(variables, x)
    assert jax.tree.map(jnp.shape, eager) == jax.tree.map(jnp.shape, jitted)


def _nnx_layers():
    rngs = nnx.Rngs(0)
    return {
        "Linear": (lambda: nnx.Linear(6, 4, rngs=rngs), X2),
        "Linear 3d": (lambda: nnx.Linear(6, 4, rngs=rngs), X3),
        "LinearGeneral": (
            lambda: nnx.LinearGeneral(6, (2, 3), axis=-1, rngs=rngs),
            X3,
        ),
        "Einsum": (lambda: nnx.Einsum("abc,cd->abd", (6, 4), (4,), rngs=rngs), X3),
        "Conv": (lambda: nnx.Conv(3, 4, (3, 3), rngs=rngs), X4),
        "ConvTranspose": (lambda: nnx.ConvTranspose(3, 4, (3, 3), rngs=rngs), X4),
        "Embed": (lambda: nnx.Embed(8, 4, rngs=rngs), TOKENS),
        "LayerNorm": (lambda: nnx.LayerNorm(6, rngs=rngs), X3),
        "RMSNorm": (lambda: nnx.RMSNorm(6, rngs=rngs), X3),
        "GroupNorm": (lambda: nnx.GroupNorm(3, num_groups=3, rngs=rngs), X4),
        "InstanceNorm": (lambda: nnx.InstanceNorm(3, rngs=rngs), X4),
        "BatchNorm": (lambda: nnx.BatchNorm(3, rngs=rngs), X4),
        "MultiHeadAttention": (
            lambda: nnx.MultiHeadAttention(2, 6, 4, decode=False, rngs=rngs),
            X3,
        ),
        "LSTM RNN": (lambda: nnx.RNN(nnx.LSTMCell(6, 4, rngs=rngs)), X3),
        "OptimizedLSTM RNN": (
            lambda: nnx.RNN(nnx.OptimizedLSTMCell(6, 4, rngs=rngs)),
            X3,
        ),
        "GRU RNN": (lambda: nnx.RNN(nnx.GRUCell(6, 4, rngs=rngs)), X3),
        "SimpleCell RNN": (lambda: nnx.RNN(nnx.SimpleCell(6, 4, rngs=rngs)), X3),
        "LoRA": (lambda: nnx.LoRA(6, 2, 4, rngs=rngs), X2),
        "LoRALinear": (lambda: nnx.LoRALinear(6, 4, lora_rank=2, rngs=rngs), X2),
        "Dropout": (lambda: nnx.Dropout(0.5, rngs=rngs), X3),
    }


@pytest.mark.parametrize("name", sorted(_nnx_layers()))
def test_nnx_layers_do_not_promote_ranks(name):
    with jax.numpy_rank_promotion("raise"):
        make, x = _nnx_layers()[name]
        layer = make()
        eager = layer(x)
        jitted = nnx.jit(lambda m, x: m(x))(layer, x)
    assert jax.tree.map(jnp.shape, eager) == jax.tree.map(jnp.shape, jitted)
