"""Differential tests against flax.linen over a zoo of models.

The same model source runs under ``lens.nn`` and ``flax.linen``: identical variable
trees, identical initial values for the same keys (under scan, vmap, jit and remat
too), identical outputs, random draws included, and identical gradients for the
same variables and keys. Skipped when flax is not installed.

The models are checked by the ``test_flax_zoo_*.py`` files, one per group in
:data:`GROUPS`, so that test workers (``--dist loadfile``) share them.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.nn as lnn

fnn = pytest.importorskip("flax.linen")


def zoo(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for f in (8, 8, 2):
                x = nn.relu(nn.Dense(f)(x))
            return x

    class SetupMLP(nn.Module):
        sizes: tuple = (5, 4, 3)

        def setup(self):
            self.layers = [nn.Dense(s) for s in self.sizes]

        def __call__(self, x):
            for layer in self.layers:
                x = nn.gelu(layer(x))
            return x

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3, 3), padding="SAME")(x)
            x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.Conv(4, (3, 3), strides=2, padding="VALID")(x)
            x = nn.max_pool(x, (1, 1))
            return nn.Dense(3)(x.reshape(x.shape[0], -1))

    class Norms(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.LayerNorm()(x)
            x = nn.RMSNorm()(x)
            return nn.GroupNorm(num_groups=2)(x)

    class Variants(nn.Module):
        """Layer options off the default path: two-pass variance, batch dims,
        bfloat16 compute, a per-operand precision pair."""

        @nn.compact
        def __call__(self, x):
            x = nn.LayerNorm(use_fast_variance=False, reduction_axes=(1, 2))(x)
            x = nn.GroupNorm(num_groups=3, use_fast_variance=False)(x)
            x = nn.DenseGeneral((2, 3), axis=-1, batch_dims=(0,))(x)
            x = nn.DenseGeneral(4, axis=(-2, -1), dtype=jnp.bfloat16)(x)
            y = nn.Dense(4, precision=["highest", "highest"], use_bias=False)(x)
            return y.astype(jnp.float32) + nn.RMSNorm(reduction_axes=(0, 1))(x)

    class Attention(nn.Module):
        @nn.compact
        def __call__(self, x):
            mask = nn.make_causal_mask(jnp.ones(x.shape[:2]))
            y = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)(
                x, mask=mask
            )
            return nn.SelfAttention(num_heads=2, normalize_qk=True)(y)

    class EmbedAttend(nn.Module):
        @nn.compact
        def __call__(self, ids):
            e = nn.Embed(11, 4)
            return e.attend(nn.Dense(4)(e(ids)))

    class Ensemble(nn.Module):
        @nn.compact
        def __call__(self, x):
            V = nn.vmap(
                MLP,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes=None,
                axis_size=3,
            )
            return V()(x)

    class LSTM(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.RNN(nn.LSTMCell(6))(x)

    class ScanLayers(nn.Module):
        @nn.compact
        def __call__(self, x):
            class Block(nn.Module):
                @nn.compact
                def __call__(self, c, _):
                    return nn.tanh(nn.Dense(c.shape[-1])(c)), None

            S = nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=3,
            )
            return S()(x, None)[0]

    class Remat(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(MLP)()(x)

    class Jit(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(MLP)()(x)

    class Cond(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            return nn.cond(jnp.sum(x) > 0, lambda m, x: m(x), lambda m, x: -m(x), d, x)

    class SamplingDecoder(nn.Module):
        """A cell drawing from a split stream inside nn.RNN (like the seq2seq
        example): the draws under scan must match Flax's."""

        @nn.compact
        def __call__(self, x):
            class Cell(nn.RNNCellBase):
                @nn.compact
                def __call__(self, c, x):
                    c, y = nn.LSTMCell(4)(c, x)
                    logits = nn.Dense(3)(y)
                    tok = jax.random.categorical(self.make_rng("sample"), logits)
                    return c, (logits, tok)

                @property
                def num_feature_axes(self):
                    return 1

            rnn = nn.RNN(Cell(), split_rngs={"params": False, "sample": True})
            carry = nn.LSTMCell(4).initialize_carry(jax.random.key(1), x[:, 0].shape)
            return rnn(x, initial_carry=carry)

    class ScanDropout(nn.Module):
        @nn.compact
        def __call__(self, x):
            class Block(nn.Module):
                @nn.compact
                def __call__(self, c, _):
                    c = nn.Dense(c.shape[-1])(c)
                    return nn.Dropout(0.5, deterministic=False)(c), None

            S = nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True, "dropout": True},
                length=3,
            )
            return S()(x, None)[0]

    class BiLSTM(nn.Module):
        @nn.compact
        def __call__(self, x):
            bi = nn.Bidirectional(
                nn.RNN(nn.OptimizedLSTMCell(3)),
                nn.RNN(nn.GRUCell(3)),
                return_carry=True,
            )
            return bi(x, seq_lengths=jnp.array([5, 2]))

    class MoreLayers(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.SpectralNorm(nn.Dense(6))(x, update_stats=train)
            x = nn.WeightNorm(nn.Dense(6))(x)
            x = nn.InstanceNorm()(x[..., None, :])[..., 0, :]
            x = nn.Einsum((6, 2, 3), "ab,bcd->acd")(x)
            x = nn.ConvLocal(2, (2,))(x)
            return nn.MGUCell(4)(
                jnp.zeros(x.shape[:1] + (4,)), x.reshape(x.shape[0], -1)
            )

    class ConvFamily(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.ConvTranspose(3, (3, 3), strides=(2, 2), padding="CIRCULAR")(x)
            x = nn.Conv(4, (3, 3), feature_group_count=1, padding="CIRCULAR")(x)
            x = nn.Conv(4, (2, 2), kernel_dilation=2, feature_group_count=2)(x)
            x = nn.PReLU()(x)
            x = nn.pool(x, 0.0, jax.lax.add, (2, 2), (1, 1), "SAME")
            x = nn.avg_pool(x, (2, 2), padding="SAME", count_include_pad=False)
            return (
                nn.max_pool(x, (2, 2))
                - nn.max_pool(-x, (2, 2), (1, 1), "SAME")[:, :-1, :-1]
            )

    class Cells(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.RNN(nn.SimpleCell(3))(x)
            z = nn.RNN(nn.GRUCell(3), reverse=True, keep_order=True)(x)
            img = x[..., None, None, :]  # (batch, time, 1, 1, features)
            w = nn.RNN(nn.ConvLSTMCell(2, (1, 1)))(img)
            return y + z + w.reshape(w.shape[:2] + (-1,)).sum(-1, keepdims=True)

    class Seq(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Sequential([nn.Dense(4), nn.relu, nn.Dense(2), nn.sigmoid])(x)

    class RematScan(nn.Module):
        @nn.compact
        def __call__(self, x):
            class Block(nn.Module):
                @nn.compact
                def __call__(self, c):
                    return nn.tanh(nn.Dense(c.shape[-1])(c))

            return nn.remat_scan(Block, lengths=(2, 3))()(x)

    class WhileLoop(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(x.shape[-1])
            d(x)  # create the params before the loop

            def body(m, c):
                i, y = c
                return i + 1, jnp.tanh(m(y))

            return nn.while_loop(lambda m, c: c[0] < 3, body, d, (0, x))[1]

    class Switch(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            branches = [lambda m, x: m(x), lambda m, x: -m(x), lambda m, x: 2 * m(x)]
            return nn.switch(jnp.argmax(x[0]) % 3, branches, d, x)

    class CustomVJP(nn.Module):
        @nn.compact
        def __call__(self, x):
            def fwd(m, x):
                y = m(x)
                return y, (x,)

            def bwd(res, g):
                (x,) = res
                return {
                    "params": jax.tree.map(
                        lambda p: 0.5 * p, {"kernel": x.T @ g, "bias": g.sum(0)}
                    )
                }, g @ jnp.ones((3, x.shape[-1]))

            f = nn.custom_vjp(lambda m, x: m(x), forward_fn=fwd, backward_fn=bwd)
            return f(nn.Dense(3), x)

    class TiedTranspose(nn.Module):
        @nn.compact
        def __call__(self, x):
            T = nn.map_variables(
                nn.Dense,
                "params",
                trans_in_fn=lambda v: jax.tree.map(jnp.transpose, v),
                init=True,
            )
            return T(x.shape[-1], use_bias=False)(x)

    class JvpVjp(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            d(x)  # create the params, to give them tangents
            vt = {"params": jax.tree.map(jnp.ones_like, d.variables["params"])}
            y, t = nn.jvp(lambda m, x: m(x), d, (x,), (jnp.ones_like(x),), vt)
            z, pull = nn.vjp(lambda m, x: m(x), d, x)
            gp, gx = pull(jnp.ones_like(z))
            return y + t + z + gx.sum() + jax.tree.leaves(gp)[0].sum()

    class Dropouts(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dropout(0.3, deterministic=False)(x)
            return nn.Dropout(0.5, broadcast_dims=(0,))(x, deterministic=False)

    class ShareScope(nn.Module):
        def setup(self):
            self.inner = nn.Dense(3)
            nn.share_scope(self, self.inner)

        def __call__(self, x):
            return self.inner(x)

    return {
        "mlp": (MLP, (2, 3), True),
        "setup_mlp": (SetupMLP, (2, 3), True),
        "cnn": (CNN, (2, 8, 8, 3), True),
        "norms": (Norms, (4, 6), True),
        "variants": (Variants, (2, 5, 6), True),
        "attention": (Attention, (2, 5, 4), True),
        "embed_attend": (EmbedAttend, "ids", True),
        "vmap_ensemble": (Ensemble, (2, 3), True),
        "lstm": (LSTM, (2, 5, 3), True),
        "scan": (ScanLayers, (2, 4), True),
        "remat": (Remat, (2, 3), True),
        "jit": (Jit, (2, 3), True),
        "cond": (Cond, (2, 3), True),
        "sampling_decoder": (SamplingDecoder, (2, 5, 3), True),
        "scan_dropout": (ScanDropout, (2, 4), True),
        "bilstm_seq_lengths": (BiLSTM, (2, 5, 3), True),
        "more_layers": (MoreLayers, (2, 6), True),
        "conv_family": (ConvFamily, (2, 5, 5, 2), True),
        "cells": (Cells, (2, 4, 3), True),
        "sequential": (Seq, (2, 3), True),
        "remat_scan": (RematScan, (2, 4), True),
        "while_loop": (WhileLoop, (2, 4), True),
        "switch": (Switch, (2, 4), True),
        "custom_vjp": (CustomVJP, (2, 4), True),
        "tied_transpose": (TiedTranspose, (2, 4), True),
        "jvp_vjp": (JvpVjp, (2, 4), True),
        "dropouts": (Dropouts, (2, 4), True),
        "share_scope": (ShareScope, (2, 4), True),
    }


LENS, FLAX = zoo(lnn), zoo(fnn)
# JAX cannot differentiate a while_loop in reverse mode.
NO_GRAD = {"while_loop"}


def _plain(tree):
    return jax.tree.map(lambda x: x, dict(tree))


# Which test file checks which model (groups of similar run time).
GROUPS = {
    "layers": ["mlp", "setup_mlp", "cnn", "norms", "variants", "sequential", "dropouts"],
    "attention_conv": ["more_layers", "conv_family", "attention", "embed_attend"],
    "recurrent": ["lstm", "cells", "bilstm_seq_lengths"],
    "transforms": [
        "vmap_ensemble", "scan", "remat", "jit", "cond", "scan_dropout",
        "remat_scan", "while_loop", "switch", "custom_vjp", "tied_transpose",
        "jvp_vjp", "share_scope", "sampling_decoder",
    ],
}  # fmt: skip


def check_same_as_flax(name):
    """Model ``name`` gives the same variables, outputs and gradients in both."""
    lcls, shape, same_init = LENS[name]
    fcls, _, _ = FLAX[name]
    if shape == "ids":
        x = jnp.array([[1, 4, 10]])
    else:
        x = jax.random.normal(jax.random.key(7), shape)
    rngs = {"params": jax.random.key(0), "dropout": jax.random.key(1)}
    rngs["sample"] = jax.random.key(2)
    lv = lcls().init(rngs, x)
    fv = _plain(fcls().init(rngs, x))
    assert jax.tree.structure(lv) == jax.tree.structure(fv)
    assert jax.tree.map(np.shape, lv) == jax.tree.map(np.shape, fv)
    if same_init:
        for a, b in zip(jax.tree.leaves(lv), jax.tree.leaves(fv)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # identical outputs for the same variables
    apply_rngs = {"dropout": jax.random.key(3), "sample": jax.random.key(4)}
    ly = lcls().apply(fv, x, rngs=apply_rngs, mutable=False)
    fy = fcls().apply(fv, x, rngs=apply_rngs)
    for a, b in zip(jax.tree.leaves(ly), jax.tree.leaves(fy)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    if "params" not in fv or name in NO_GRAD:
        return
    # identical gradients with respect to the parameters
    rest = {k: v for k, v in fv.items() if k != "params"}

    def loss(cls, params):
        y = cls().apply({"params": params, **rest}, x, rngs=apply_rngs)
        floats = [
            a for a in jax.tree.leaves(y) if jnp.issubdtype(a.dtype, jnp.floating)
        ]
        return sum(jnp.sum(jnp.sin(a.astype(jnp.float32))) for a in floats)

    # Under jit, as a train step takes them: op by op, the backward pass of every
    # model in both libraries compiled each of its ops alone (25 of the zoo's 62 s).
    # init and apply above stay eager, as a notebook calls them.
    lg = jax.jit(jax.grad(lambda p: loss(lcls, p)))(fv["params"])
    fg = jax.jit(jax.grad(lambda p: loss(fcls, p)))(fv["params"])
    assert jax.tree.structure(lg) == jax.tree.structure(fg)
    for a, b in zip(jax.tree.leaves(lg), jax.tree.leaves(fg)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
