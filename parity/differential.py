"""Random layer configurations, built and called with flax and with lens.

Each configuration (a layer kind and its options, drawn from a seeded generator)
is built with ``Rngs(0)`` / ``init(key(0))`` under flax.nnx and lens.nnx (or
flax.linen and lens.nn), called on the same input, and compared: the variables'
paths and initial values, the outputs, and (nnx) the state after the call. Both
raising is agreement when the error classes match. It is how stop 53 found the
RNN cells' ``keep_rngs`` and other differences; the cases it found are tests
(tests/nnx/test_flax_nnx_layers.py, tests/nnx/test_error_parity.py).

    python -m parity.differential --api nnx --seed 0 --count 80
    python -m parity.differential --api linen --seed 1

Prints each configuration that differs and exits 1 if any did. Needs flax (the
``flax`` extra).
"""

from __future__ import annotations

import argparse
import random
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Case = tuple[str, dict[str, Any], Callable[[Any], Any], Callable[[Any, Any], Any]]


def _x(*shape: int) -> jax.Array:
    return jnp.asarray(np.random.RandomState(0).randn(*shape), jnp.float32)


def _same(a: Any, b: Any, tol: float) -> str | None:
    """None when equal (floats within ``tol``), else what differs."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.dtype.kind in "fc":
        if np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
            return None
        diff = np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))
        return f"max |difference| {diff:.3g}"
    return None if np.array_equal(a, b) else "values differ"


def nnx_cases(rnd: random.Random, count: int) -> Iterator[Case]:
    """``(kind, options, build(nnx), call(nnx, layer))`` for random nnx layers."""

    def pick(*xs: Any) -> Any:
        return rnd.choice(xs)

    for _ in range(count):
        kind = pick("Linear", "Conv", "ConvTranspose", "Embed", "LayerNorm")
        kind = pick(kind, "RMSNorm", "GroupNorm", "BatchNorm", "MultiHeadAttention")
        kind = pick(kind, "LSTMCell", "GRUCell", "Dropout", "LoRALinear", "RNN")
        if kind == "Linear":
            kw = dict(
                use_bias=pick(True, False),
                dtype=pick(None, jnp.bfloat16),
                param_dtype=pick(jnp.float32, jnp.bfloat16),
            )
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.Linear(3, 5, rngs=nnx.Rngs(0), **kw),
                lambda nnx, m: m(_x(2, 3)),
            )
        elif kind in ("Conv", "ConvTranspose"):
            nd = pick(1, 2)
            kw = dict(
                kernel_size=(3,) * nd,
                strides=pick(1, 2),
                padding=pick("SAME", "VALID", "CIRCULAR", 1),
                kernel_dilation=pick(1, 2),
                use_bias=pick(True, False),
            )
            shape = (2, *(8,) * nd, 4)
            yield (
                kind,
                kw,
                lambda nnx, kw=kw, k=kind: getattr(nnx, k)(
                    4, 6, rngs=nnx.Rngs(0), **kw
                ),
                lambda nnx, m, s=shape: m(_x(*s)),
            )
        elif kind == "Embed":
            yield (
                kind,
                {},
                lambda nnx: nnx.Embed(10, 4, rngs=nnx.Rngs(0)),
                lambda nnx, m: (m(jnp.array([[1, 2], [9, 0]])), m.attend(_x(2, 4))),
            )
        elif kind in ("LayerNorm", "RMSNorm"):
            kw = dict(
                use_scale=pick(True, False),
                epsilon=pick(1e-6, 1e-3),
                reduction_axes=pick(-1, (1, 2)),
            )
            yield (
                kind,
                kw,
                lambda nnx, kw=kw, k=kind: getattr(nnx, k)(4, rngs=nnx.Rngs(0), **kw),
                lambda nnx, m: m(_x(2, 3, 4) * 3 + 1),
            )
        elif kind == "GroupNorm":
            kw = dict(num_groups=pick(1, 2, 4), use_bias=pick(True, False))
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.GroupNorm(4, rngs=nnx.Rngs(0), **kw),
                lambda nnx, m: m(_x(2, 5, 4)),
            )
        elif kind == "BatchNorm":
            kw = dict(momentum=pick(0.9, 0.5), axis=pick(-1, 1))
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.BatchNorm(
                    4, use_running_average=False, rngs=nnx.Rngs(0), **kw
                ),
                lambda nnx, m: (m(_x(3, 4, 4)), m(_x(3, 4, 4) * 2)),
            )
        elif kind == "MultiHeadAttention":
            kw = dict(
                qkv_features=pick(None, 8),
                out_features=pick(None, 6),
                normalize_qk=pick(False, True),
            )
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.MultiHeadAttention(
                    2, 4, decode=False, rngs=nnx.Rngs(0), **kw
                ),
                lambda nnx, m: m(_x(2, 3, 4), mask=jnp.tril(jnp.ones((3, 3), bool))),
            )
        elif kind in ("LSTMCell", "GRUCell"):
            yield (
                kind,
                {},
                lambda nnx, k=kind: getattr(nnx, k)(3, 4, rngs=nnx.Rngs(0)),
                lambda nnx, m: m(
                    m.initialize_carry((2, 3), rngs=nnx.Rngs(1)), _x(2, 3)
                ),
            )
        elif kind == "Dropout":
            kw = dict(rate=pick(0.1, 0.5, 0.9), broadcast_dims=pick((), (0,)))
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.Dropout(rngs=nnx.Rngs(dropout=3), **kw),
                lambda nnx, m: (m(_x(4, 5)), m(_x(4, 5))),
            )
        elif kind == "LoRALinear":
            yield (
                kind,
                {},
                lambda nnx: nnx.LoRALinear(3, 4, lora_rank=2, rngs=nnx.Rngs(0)),
                lambda nnx, m: m(_x(2, 3)),
            )
        else:  # RNN
            kw = dict(reverse=pick(False, True), return_carry=pick(False, True))
            yield (
                kind,
                kw,
                lambda nnx, kw=kw: nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(0)), **kw),
                lambda nnx, m: m(_x(2, 5, 3), seq_lengths=jnp.array([5, 3])),
            )


def _nnx_state(nnx: Any, m: Any) -> dict[str, Any]:
    out = {}
    for path, v in nnx.state(m).flat_state():
        value = v.get_value()
        if jnp.issubdtype(getattr(value, "dtype", float), jax.dtypes.prng_key):
            value = jax.random.key_data(value)
        out["/".join(map(str, path))] = np.asarray(value)
    return out


def run_nnx(rnd: random.Random, count: int) -> int:
    """Compares ``count`` random nnx layers; returns how many differ."""
    from flax import nnx as fnnx

    from lens import nnx as lnnx

    def outcome(nnx: Any, build: Any, call: Any) -> tuple:
        m = build(nnx)
        before = _nnx_state(nnx, m)
        out = jax.tree.leaves(call(nnx, m))
        return before, out, _nnx_state(nnx, m)

    return _compare((fnnx, lnnx), nnx_cases(rnd, count), outcome)


def linen_cases(rnd: random.Random, count: int) -> Iterator[Case]:
    """``(kind, options, build(nn), call(nn, module))`` for random Linen layers;
    the call returns ``(variables, outputs)``."""

    def pick(*xs: Any) -> Any:
        return rnd.choice(xs)

    def init_apply(m: Any, *args: Any, mutable: Any = False, rngs: Any = None):
        keys = {"params": jax.random.key(0), **(rngs or {})}
        v = m.init(keys, *args)
        return v, m.apply(v, *args, rngs=rngs, mutable=mutable)

    for _ in range(count):
        kind = pick("Dense", "DenseGeneral", "Conv", "ConvTranspose", "Embed")
        kind = pick(kind, "LayerNorm", "GroupNorm", "BatchNorm", "Dropout")
        kind = pick(kind, "MultiHeadDotProductAttention", "Einsum", "RNN")
        if kind == "Dense":
            kw = dict(
                features=5, use_bias=pick(True, False), dtype=pick(None, jnp.bfloat16)
            )
            args: tuple = (_x(2, 3),)
        elif kind == "DenseGeneral":
            kw = dict(features=pick(4, (2, 3)), axis=pick(-1, (-2, -1)))
            args = (_x(2, 3, 4),)
        elif kind in ("Conv", "ConvTranspose"):
            nd = pick(1, 2)
            kw = dict(
                features=6,
                kernel_size=(3,) * nd,
                strides=pick(1, 2),
                padding=pick("SAME", "VALID", "CIRCULAR", 1),
                use_bias=pick(True, False),
            )
            args = (_x(2, *(8,) * nd, 4),)
        elif kind == "Embed":
            kw = dict(num_embeddings=10, features=4)
            args = (jnp.array([[1, 2], [9, 0]]),)
        elif kind == "LayerNorm":
            kw = dict(use_scale=pick(True, False), reduction_axes=pick(-1, (1, 2)))
            args = (_x(2, 3, 4) * 3 + 1,)
        elif kind == "GroupNorm":
            kw = dict(num_groups=pick(1, 2, 4))
            args = (_x(2, 5, 4),)
        elif kind == "BatchNorm":
            kw = dict(momentum=pick(0.9, 0.5), use_running_average=False)
            args = (_x(3, 4, 4),)
        elif kind == "Dropout":
            kw = dict(rate=pick(0.1, 0.5, 0.9), deterministic=False)
            args = (_x(4, 5),)
        elif kind == "MultiHeadDotProductAttention":
            kw = dict(num_heads=2, qkv_features=pick(None, 8), deterministic=True)
            args = (_x(2, 3, 4),)
        elif kind == "Einsum":
            kw = dict(shape=(3, 4), einsum_str="bi,io->bo")
            args = (_x(2, 3),)
        else:  # RNN
            kw = {}
            args = (_x(2, 5, 3),)
        options = dict(
            mutable=["batch_stats"] if kind == "BatchNorm" else False,
            rngs={"dropout": jax.random.key(3)} if kind == "Dropout" else None,
        )

        def build(nn: Any, kind: str = kind, kw: dict = kw) -> Any:
            if kind == "RNN":
                return nn.RNN(nn.GRUCell(4))
            return getattr(nn, kind)(**kw)

        yield (
            kind,
            kw,
            build,
            lambda nn, m, args=args, options=options: init_apply(m, *args, **options),
        )


def _flat(tree: Any) -> dict[str, Any]:
    leaves = jax.tree_util.tree_leaves_with_path(dict(tree))
    return {jax.tree_util.keystr(p): np.asarray(v) for p, v in leaves}


def run_linen(rnd: random.Random, count: int) -> int:
    """Compares ``count`` random Linen layers; returns how many differ."""
    import flax.linen as fnn

    import lens.nn as lnn

    def outcome(nn: Any, build: Any, call: Any) -> tuple:
        variables, out = call(nn, build(nn))
        return _flat(variables), jax.tree.leaves(out), {}

    return _compare((fnn, lnn), linen_cases(rnd, count), outcome)


def _compare(libs: tuple[Any, Any], cases: Iterator[Case], outcome: Any) -> int:
    """Runs each case under flax then lens (``outcome(lib, build, call)`` gives
    its variables, outputs and state after the call) and reports the
    differences; returns how many cases differ."""
    bad = 0
    for kind, kw, build, call in cases:
        seen = []
        for lib in libs:
            try:
                seen.append((*outcome(lib, build, call), None))
            except Exception as e:  # noqa: BLE001 - the error is the outcome
                seen.append((None, None, None, type(e).__name__))
        bad += _report(kind, kw, seen)
    return bad


def _report(kind: str, kw: dict[str, Any], seen: list[tuple]) -> int:
    """Prints what differs between flax's outcome and lens's; 1 if anything."""
    (f_vars, f_out, f_after, f_err), (l_vars, l_out, l_after, l_err) = seen
    problems = []
    if f_err or l_err:
        if f_err != l_err:
            problems.append(f"flax {f_err or 'ran'}, lens {l_err or 'ran'}")
    elif set(f_vars) != set(l_vars):
        problems.append(f"variables {sorted(set(f_vars) ^ set(l_vars))}")
    else:
        for what, a, b, tol in (
            ("init", f_vars, l_vars, 1e-5),
            ("after the call", f_after, l_after, 1e-4),
        ):
            for k in a:
                if k in b and (d := _same(a[k], b[k], tol)):
                    problems.append(f"{what} {k}: {d}")
        if len(f_out) != len(l_out):
            problems.append("a different number of outputs")
        for a, b in zip(f_out, l_out):
            if d := _same(a, b, 1e-4):
                problems.append(f"output: {d}")
    if problems:
        print(f"DIFFERS {kind} {kw}: " + "; ".join(problems[:4]))
    return int(bool(problems))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", choices=["nnx", "linen"], default="nnx")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=80)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # both libraries' deprecations
    run = run_nnx if args.api == "nnx" else run_linen
    bad = run(random.Random(args.seed), args.count)
    print(f"{bad} of {args.count} {args.api} configurations differ from flax")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
