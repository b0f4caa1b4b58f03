"""The Module lifecycle answers as Flax's does (flax as the oracle where installed).

Each probe runs the same code under ``lens.nn`` and ``flax.linen`` and compares
the outcome: the value, or the exception's class name and first line.
"""

from __future__ import annotations

import copy
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.nn as lnn

KEY = jax.random.key(0)
X = jnp.ones((2, 3))


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        first = str(e).split("\n")[0]
        first = re.sub(r" ?\((docs: |https://).*\)$", "", first)  # the docs pointer
        return ("raises", type(e).__name__, first)
    return ("value", jax.tree.map(lambda a: np.asarray(a).tolist(), out))


def probes(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.Dense(4, name="hidden")(x)
            self.sow("intermediates", "h", h)
            self.sow(
                "stats", "count", 1, reduce_fn=lambda a, b: a + b, init_fn=lambda: 0
            )
            h = self.perturb("h", h)
            return nn.Dense(2, name="out")(nn.relu(h))

        def encode(self, x):
            return self.hidden(x) if hasattr(self, "hidden") else x

    class WithSetup(nn.Module):
        def setup(self):
            self.enc = nn.Dense(3)
            self.dec = nn.Dense(2)

        def __call__(self, x):
            return self.dec(self.enc(x))

    class KwOnly(nn.Module, kw_only=True):
        a: int = 1
        b: int

        def __call__(self, x):
            return x * self.a * self.b

    v = MLP().init(KEY, X)
    vs = WithSetup().init(KEY, X)
    unbound = MLP()

    def intercept_order():
        seen = []

        def outer(f, args, kwargs, ctx):
            seen.append(("outer", type(ctx.module).__name__, ctx.method_name))
            return f(*args, **kwargs)

        def inner(f, args, kwargs, ctx):
            seen.append(("inner", type(ctx.module).__name__, ctx.method_name))
            return f(*args, **kwargs)

        with nn.intercept_methods(outer), nn.intercept_methods(inner):
            WithSetup().apply(vs, X)
        return seen

    return {
        "unbound_has_variable": lambda: unbound.has_variable("params", "x"),
        "unbound_has_rng": lambda: unbound.has_rng("params"),
        "unbound_make_rng": lambda: unbound.make_rng("params"),
        "unbound_variables": lambda: unbound.variables,
        "unbound_path": lambda: unbound.path,
        "unbound_is_initializing": lambda: unbound.is_initializing(),
        "unbound_scope": lambda: unbound.scope,
        "bound_path_and_vars": lambda: (
            MLP().bind(v).path,
            sorted(MLP().bind(v).variables),
        ),
        "capture_all": lambda: sorted(
            MLP().apply(v, X, capture_intermediates=True, mutable=["intermediates"])[1][
                "intermediates"
            ]
        ),
        "capture_filter": lambda: sorted(
            MLP().apply(
                v,
                X,
                capture_intermediates=lambda m, name: (
                    name == "__call__" and isinstance(m, nn.Dense)
                ),
                mutable=["intermediates"],
            )[1]["intermediates"]
        ),
        "sow_reduce_init": lambda: MLP().apply(v, X, mutable=["stats"])[1],
        "perturb_grad_shape": lambda: jax.tree.map(
            jnp.shape,
            jax.grad(lambda p: jnp.sum(MLP().apply(p, X)))(
                {"params": v["params"], "perturbations": v["perturbations"]}
            )["perturbations"],
        ),
        "apply_method_string": lambda: (
            WithSetup().apply(vs, X, method="__call__").shape
        ),
        "apply_submodule_method": lambda: (
            WithSetup().apply(vs, X, method=lambda m, x: m.enc(x)).shape
        ),
        "intercept_order": intercept_order,
        "kw_only": lambda: (KwOnly(b=3)(jnp.ones(())), KwOnly(a=2, b=3).a),
        "kw_only_positional_fails": lambda: KwOnly(2, 3),
        "deepcopy_equal": lambda: copy.deepcopy(nn.Dense(3)) == nn.Dense(3),
        "hash_equal": lambda: hash(nn.Dense(3)) == hash(nn.Dense(3)),
        "module_paths": lambda: sorted(MLP().module_paths(KEY, X)),
        "set_attribute_in_compact": lambda: MLP().apply(
            v, X, method=lambda m, x: setattr(m, "features", 3)
        ),
        "unbound_setup_attribute": lambda: WithSetup().enc,
    }


LENS = probes(lnn)


@pytest.mark.parametrize("name", sorted(LENS))
def test_lifecycle_probe_matches_flax(name):
    got = _outcome(LENS[name])
    fnn = pytest.importorskip("flax.linen")
    want = _outcome(probes(fnn)[name])
    if want[0] == "raises":
        assert got[0] == "raises", f"lens returned {got[1]!r}, Flax raises {want}"
        assert got[1] == want[1], f"{got} != Flax's {want}"
        assert got[2].startswith(want[2]) or want[2].startswith(got[2]), (
            f"{got[2]!r} does not start with Flax's {want[2]!r}"
        )
    else:
        assert got == want


def test_tabulate_has_flax_columns():
    out = lnn.Dense(3).tabulate(KEY, X, console_kwargs={"width": 200})
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    header = next(line for line in plain.splitlines() if "path" in line)
    cols = [c.strip() for c in header.strip("┃ ").split("┃")]
    assert cols == ["path", "module", "inputs", "outputs", "params"]


def test_layer_reprs_are_flaxs():
    # what a notebook cell showing an unbound layer prints (fields, defaults and
    # the names of default functions such as Bidirectional's merge_fn)
    fnn = pytest.importorskip("flax.linen")

    def layers(nn):
        return [
            nn.Dense(3),
            nn.DenseGeneral(3),
            nn.Conv(3, (3,)),
            nn.ConvTranspose(3, (3,)),
            nn.ConvLocal(3, (3,)),
            nn.Embed(4, 3),
            nn.BatchNorm(),
            nn.LayerNorm(),
            nn.RMSNorm(),
            nn.GroupNorm(),
            nn.InstanceNorm(),
            nn.Dropout(0.5),
            nn.MultiHeadDotProductAttention(2),
            nn.SelfAttention(2),
            nn.LSTMCell(3),
            nn.OptimizedLSTMCell(3),
            nn.GRUCell(3),
            nn.MGUCell(3),
            nn.SimpleCell(3),
            nn.ConvLSTMCell(3, (3, 3)),
            nn.PReLU(),
            nn.Einsum((2, 3), "ab,bc->ac"),
            nn.SpectralNorm(nn.Dense(2)),
            nn.WeightNorm(nn.Dense(2)),
            nn.Bidirectional(nn.RNN(nn.LSTMCell(3)), nn.RNN(nn.GRUCell(3))),
            nn.Sequential([nn.Dense(2), nn.relu]),
        ]

    def text(m):
        return re.sub(r" at 0x[0-9a-f]+", "", repr(m))

    for ours, theirs in zip(layers(lnn), layers(fnn), strict=True):
        assert text(ours) == text(theirs)
