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

With ``--mistakes`` each configuration is a mistake instead: one argument
given a wrong value (0, -1, 2.5, None, a string, a tuple, ...), an unknown
keyword, ``rngs`` missing or of the wrong kind, or an input of the wrong shape
or type. Both libraries must agree on whether it raises; when they do, lens's
error must be of flax's class (or a subclass, or a lens error of the same name)
and its message must start with flax's first sentence (lens may go on to say
where and how to fix).

    python -m parity.differential --api nnx --mistakes --seed 0 --count 300

Prints each configuration that differs and exits 1 if any did. Needs flax (the
``flax`` extra).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
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


# -- mistakes: one argument or the input made wrong, compared by error --------

# (kind, valid keyword arguments, input shape); positional names are passed
# by keyword so that one of them can be replaced.
NNX_LAYERS: dict[str, tuple[dict[str, Any], tuple[int, ...]]] = {
    "Linear": (dict(in_features=3, out_features=5), (2, 3)),
    "LinearGeneral": (dict(in_features=3, out_features=5), (2, 3)),
    "Einsum": (dict(einsum_str="bi,io->bo", kernel_shape=(3, 5)), (2, 3)),
    "Conv": (dict(in_features=3, out_features=4, kernel_size=(3,)), (1, 6, 3)),
    "ConvTranspose": (
        dict(in_features=3, out_features=4, kernel_size=(3,)),
        (1, 6, 3),
    ),
    "Embed": (dict(num_embeddings=10, features=4), (2, 3)),
    "LayerNorm": (dict(num_features=3), (2, 3)),
    "RMSNorm": (dict(num_features=3), (2, 3)),
    "GroupNorm": (dict(num_features=4, num_groups=2), (2, 5, 4)),
    "BatchNorm": (dict(num_features=3, use_running_average=False), (4, 3)),
    "InstanceNorm": (dict(num_features=3), (2, 5, 3)),
    "Dropout": (dict(rate=0.5), (4, 5)),
    "MultiHeadAttention": (
        dict(num_heads=2, in_features=4, decode=False),
        (2, 3, 4),
    ),
    "LSTMCell": (dict(in_features=3, hidden_features=4), (2, 3)),
    "GRUCell": (dict(in_features=3, hidden_features=4), (2, 3)),
    "SimpleCell": (dict(in_features=3, hidden_features=4), (2, 3)),
    "LoRA": (dict(in_features=3, lora_rank=2, out_features=4), (2, 3)),
    "LoRALinear": (dict(in_features=3, out_features=4, lora_rank=2), (2, 3)),
}

LINEN_LAYERS: dict[str, tuple[dict[str, Any], tuple[int, ...]]] = {
    "Dense": (dict(features=5), (2, 3)),
    "DenseGeneral": (dict(features=5), (2, 3)),
    "Einsum": (dict(shape=(3, 5), einsum_str="bi,io->bo"), (2, 3)),
    "Conv": (dict(features=4, kernel_size=(3,)), (1, 6, 3)),
    "ConvTranspose": (dict(features=4, kernel_size=(3,)), (1, 6, 3)),
    "Embed": (dict(num_embeddings=10, features=4), (2, 3)),
    "LayerNorm": (dict(), (2, 3)),
    "RMSNorm": (dict(), (2, 3)),
    "GroupNorm": (dict(num_groups=2), (2, 5, 4)),
    "BatchNorm": (dict(use_running_average=False), (4, 3)),
    "InstanceNorm": (dict(), (2, 5, 3)),
    "Dropout": (dict(rate=0.5, deterministic=False), (4, 5)),
    "MultiHeadDotProductAttention": (dict(num_heads=2), (2, 3, 4)),
    "LSTMCell": (dict(features=4), (2, 3)),
    "GRUCell": (dict(features=4), (2, 3)),
    "SimpleCell": (dict(features=4), (2, 3)),
}

BAD_VALUES: tuple[Any, ...] = (0, -1, 2.5, None, "a", (), (1, 2), True, 10**6)

# Optional arguments given each bad value too (with ``--optional``).
OPTIONAL: dict[str, tuple[str, ...]] = {
    "Linear": ("use_bias", "dtype", "param_dtype", "kernel_init", "precision"),
    "LinearGeneral": ("axis", "batch_axis", "use_bias"),
    "Einsum": ("bias_shape",),
    "Conv": (
        "strides",
        "padding",
        "kernel_dilation",
        "input_dilation",
        "feature_group_count",
        "use_bias",
    ),
    "ConvTranspose": ("strides", "padding", "kernel_dilation", "transpose_kernel"),
    "Embed": ("dtype", "embedding_init"),
    "LayerNorm": ("epsilon", "reduction_axes", "feature_axes", "use_scale"),
    "RMSNorm": ("epsilon", "reduction_axes"),
    "GroupNorm": ("group_size", "epsilon"),
    "BatchNorm": ("momentum", "epsilon", "axis"),
    "InstanceNorm": ("epsilon", "feature_axes"),
    "Dropout": ("broadcast_dims", "rng_collection"),
    "MultiHeadAttention": ("qkv_features", "out_features", "dropout_rate"),
    "MultiHeadDotProductAttention": (
        "qkv_features",
        "out_features",
        "dropout_rate",
        "deterministic",
    ),
    "LSTMCell": ("gate_fn", "activation_fn"),
    "GRUCell": ("gate_fn", "activation_fn"),
    "SimpleCell": ("activation_fn",),
    "LoRA": ("base_module",),
    "LoRALinear": ("lora_param_type",),
    "Dense": ("use_bias", "dtype", "param_dtype", "kernel_init", "precision"),
    "DenseGeneral": ("axis", "batch_dims", "use_bias"),
}


def _input(kind: str, shape: tuple[int, ...], how: str) -> Any:
    """The layer's input, made wrong as ``how`` says ("" leaves it right)."""
    if how == "one more feature":
        shape = (*shape[:-1], shape[-1] + 1)
    elif how == "one less dimension":
        shape = shape[1:]
    elif how == "one more dimension":
        shape = (1, *shape)
    elif how == "a scalar":
        shape = ()
    if kind == "Embed" and how != "floats":
        return jnp.zeros(shape, jnp.int32)
    if how == "integers":
        return jnp.ones(shape, jnp.int32)
    if how == "booleans":
        return jnp.ones(shape, bool)
    if how == "a list":
        return np.ones(shape).tolist()
    if how == "None":
        return None
    return _x(*shape)


INPUT_MISTAKES = (
    "one more feature",
    "one less dimension",
    "one more dimension",
    "a scalar",
    "integers",
    "booleans",
    "a list",
    "None",
    "floats",
)


def mistake_cases(
    rnd: random.Random, count: int, api: str, optional: bool = False
) -> Iterator[Case]:
    """``(kind, mistake, build, call)``, one mistake each, ``count`` of them
    drawn from every layer crossed with every mistake (all with ``count`` 0):
    an argument given each wrong value, an unknown keyword, ``rngs`` missing or
    of a wrong type, the input of a wrong shape or type."""
    layers = NNX_LAYERS if api == "nnx" else LINEN_LAYERS
    grid = []
    for kind, (kw, shape) in sorted(layers.items()):
        mistakes: list[dict[str, Any]] = [
            {name: bad} for name in sorted(kw) for bad in BAD_VALUES
        ]
        if optional:
            mistakes += [
                {name: bad} for name in OPTIONAL.get(kind, ()) for bad in BAD_VALUES
            ]
        mistakes += [{"input": how} for how in INPUT_MISTAKES]
        mistakes += [{"rngs": r} for r in ("none", "int", "key", "other stream")]
        mistakes.append({"feature": 3})
        grid += [(kind, kw, shape, m) for m in mistakes]
    rnd.shuffle(grid)
    for kind, kw, shape, mistake in grid[: count or None]:
        args = {
            **kw,
            **{k: v for k, v in mistake.items() if k not in ("input", "rngs")},
        }
        yield (
            kind,
            mistake,
            lambda lib, k=kind, a=args, m=mistake: _build(lib, api, k, a, m),
            lambda lib, layer, k=kind, s=shape, m=mistake: _call(api, layer, k, s, m),
        )


def _build(lib: Any, api: str, kind: str, kw: dict, mistake: dict) -> Any:
    if api == "linen":
        return getattr(lib, kind)(**kw)
    rngs: Any = lib.Rngs(0, dropout=1)
    match mistake.get("rngs"):
        case "none":
            rngs = None
        case "int":
            rngs = 0
        case "key":
            rngs = jax.random.key(0)
        case "other stream":
            rngs = lib.Rngs(other=0)
    return getattr(lib, kind)(**kw, rngs=rngs)


def _call(api: str, layer: Any, kind: str, shape: tuple, mistake: dict) -> Any:
    x = _input(kind, shape, mistake.get("input", ""))
    cell = kind.endswith("Cell")
    if api == "nnx":
        if cell:
            return layer(layer.initialize_carry(np.shape(x)), x)
        return layer(x)
    keys: Any = {"params": jax.random.key(0), "dropout": jax.random.key(1)}
    match mistake.get("rngs"):  # Linen's rngs are init's, not the layer's
        case "none":
            keys = {}
        case "int":
            keys = 0
        case "key":
            keys = jax.random.key(0)
        case "other stream":
            keys = {"other": jax.random.key(0)}
    if cell:
        carry = layer.initialize_carry(jax.random.key(2), np.shape(x))
        return layer.init_with_output(keys, carry, x)
    return layer.init_with_output(keys, x, mutable=True)


def run_mistakes(
    rnd: random.Random, count: int, api: str, optional: bool = False
) -> int:
    """Makes ``count`` random mistakes under flax and lens; returns how many
    raise differently (a class that is not flax's or a subclass of it, or a
    message that does not start with flax's first sentence)."""
    bad, known = 0, {}
    for kind, mistake, build, call in mistake_cases(rnd, count, api, optional):
        seen = _raised(api, lambda lib, b=build, c=call: c(lib, b(lib)))
        if problem := error_differs(*seen, flax_words_only=True):
            if reason := known_difference(api, kind, mistake):
                known[reason] = known.get(reason, 0) + 1
                continue
            print(f"DIFFERS {kind} {mistake}: {problem}")
            bad += 1
    for reason, n in known.items():
        print(f"known ({n}): {reason}")
    return bad


_ANY = ("nnx", "linen")
_NORMS = ("LayerNorm", "RMSNorm", "InstanceNorm")
KNOWN: tuple[tuple[Any, ...], ...] = (
    # (apis, layers, what the mistake sets (an argument, "input"), its values,
    # why lens differs)
    (
        _ANY,
        ("Dropout", "MultiHeadDotProductAttention"),
        ("rate", "dropout_rate"),
        (-1, 2.5, 10**6),
        "a dropout rate outside [0, 1]: lens raises InvalidHyperparameterError, "
        "flax scales by a negative number (docs/porting.md)",
    ),
    (
        ("linen",),
        ("LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm", "InstanceNorm"),
        ("epsilon", "momentum"),
        (-1, 2.5, 10**6),
        "an epsilon below 0 or a momentum outside [0, 1]: lens raises "
        "InvalidHyperparameterError, flax computes NaNs or a diverging average",
    ),
    (
        ("linen",),
        ("Conv",),
        ("feature_group_count",),
        (2.5, 10**6),
        "a feature_group_count that does not divide the features: flax's bare "
        "assert at the call; lens's error names the features and the count",
    ),
    (
        ("nnx",),
        _NORMS,
        ("num_features",),
        (0,),
        "num_features=0 against 3 features: flax skips a size-0 scale and bias "
        "(`if self.scale`) and normalises unscaled; lens raises the shape mismatch",
    ),
    (
        ("nnx",),
        ("Conv", "ConvTranspose"),
        ("input",),
        ("a list",),
        "a nested list as input: lens takes it as an array, flax reads its .ndim",
    ),
    (
        ("linen",),
        ("Embed",),
        ("num_embeddings", "features"),
        (-1,),
        "a negative size: flax fails in XLA (MLIRError); lens raises "
        "InvalidHyperparameterError, a ValueError and a TypeError",
    ),
    (
        ("linen",),
        ("MultiHeadDotProductAttention",),
        ("num_heads",),
        (2.5,),
        "a non-integer num_heads: flax's bare assert; lens raises "
        "InvalidHyperparameterError when the layer is built",
    ),
    (
        ("linen",),
        ("GroupNorm",),
        ("input",),
        ("a scalar",),
        "a scalar into GroupNorm: flax divides by its empty channel count, lens "
        "fails reading the channel axis (IndexError)",
    ),
    (
        ("linen",),
        ("MultiHeadDotProductAttention",),
        ("input",),
        ("None",),
        "None as the query: lens asserts the inputs' ranks first (AssertionError); "
        "flax reads None.shape",
    ),
    (
        ("nnx",),
        ("BatchNorm",),
        ("num_features",),
        (True,),
        "num_features=True (1) against 3 features: flax fails broadcasting "
        "(ValueError), lens reshaping (TypeError), each naming the shapes",
    ),
    (
        ("nnx",),
        ("LinearGeneral", "MultiHeadAttention"),
        ("out_features",),
        ((),),
        "out_features=(): lens gives one output per example, flax fails reshaping",
    ),
)


def known_difference(api: str, kind: str, mistake: dict[str, Any]) -> str:
    """Why lens differs from flax on purpose for this mistake ("" if it should
    not)."""
    ((what, value),) = mistake.items()
    for apis, kinds, fields, values, reason in KNOWN:
        if api in apis and kind in kinds and what in fields:
            if any(type(value) is type(v) and value == v for v in values):
                return reason
    return ""


def _raised(api: str, fn: Callable[[Any], Any]) -> list[BaseException | None]:
    """What ``fn(flax's api module)`` and ``fn(lens's)`` raised (None: ran)."""
    if api == "nnx":
        from flax import nnx as theirs

        from lens import nnx as ours
    elif api == "linen":
        import flax.linen as theirs

        import lens.nn as ours
    else:  # "top": namespaces of the top-level modules
        theirs, ours = _top("flax"), _top("lens")
    seen: list[BaseException | None] = []
    for lib in (theirs, ours):
        try:
            jax.block_until_ready(fn(lib))
            seen.append(None)
        except Exception as e:  # noqa: BLE001 - the error is the outcome
            seen.append(e)
    return seen


def first_sentence(message: str) -> str:
    """A message's first sentence, whitespace folded, less a docs link."""
    first = " ".join(message.split(" (https://")[0].split())
    for end in (". ", ".\n"):
        if end in first:
            first = first[: first.index(end) + 1]
    return first


def _raised_by_flax(e: BaseException) -> bool:
    """Whether flax raised ``e`` with a message of its own: its innermost frame
    is flax's and a ``raise`` (not Python's operator or JAX's shape check)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or "/flax/" not in tb.tb_frame.f_code.co_filename:
        return False
    import linecache

    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).lstrip()
    return line.startswith("raise") or (
        line.startswith("assert") and isinstance(e, AssertionError)
    )


def message(e: BaseException) -> str:
    """An error's message (its first argument when that is a string)."""
    return e.args[0] if e.args and isinstance(e.args[0], str) else str(e)


def error_differs(
    theirs: BaseException | None,
    ours: BaseException | None,
    *,
    upto: str | None = None,
    flax_words_only: bool = False,
) -> str:
    """What differs between flax's error and lens's for one mistake ("" when
    alike; None for a side that did not raise).

    lens's error must be of flax's class: an instance of it, or for a class flax
    defines (``flax.errors``), one of the same name. Its message must start with
    flax's first sentence, less the docs link; lens may go on to say where and
    how to fix. ``upto`` compares the sentence only up to and including that
    marker, where flax's goes on to name its own internals ("" compares the
    class only). ``flax_words_only`` compares messages only where flax raised
    in its own words (a ``raise`` in flax's code; not Python's operator
    message or JAX's shape check deep inside).
    """
    if theirs is None or ours is None:
        if theirs is ours:
            return ""
        e = theirs or ours
        who = "flax" if theirs else "lens"
        return f"only {who} raised {type(e).__name__}: {message(e)[:120]}"
    flax_class = type(theirs)
    if flax_class.__module__.split(".")[0] == "flax":
        alike = type(ours).__name__ == flax_class.__name__
    else:
        alike = isinstance(ours, flax_class)
    if not alike:
        return (
            f"flax {flax_class.__name__}: {message(theirs)[:100]} | "
            f"lens {type(ours).__name__}: {message(ours)[:100]}"
        )
    if flax_words_only and not _raised_by_flax(theirs):
        return ""
    expected = first_sentence(message(theirs))
    if upto is not None:
        expected = expected[: expected.index(upto) + len(upto)]
    expected = expected.rstrip(".")
    if not " ".join(message(ours).split()).startswith(expected):
        return f"flax says {expected[:140]!r} | lens {message(ours)[:140]!r}"
    return ""


# -- mistakes with transforms, graphs and modules (fixed cases, not a grid) ----


def nnx_api_mistakes() -> dict[str, Callable[[Any], Any]]:
    """Mistakes with nnx's transforms, graph functions and objects, by name;
    each takes the nnx module (flax's or lens's)."""
    import optax

    x = jnp.ones((5, 3))

    def lin(nnx: Any) -> Any:
        return nnx.Linear(3, 4, rngs=nnx.Rngs(0))

    def scan(nnx: Any, f: Any, out_axes: Any = None) -> Any:
        carry = (nnx.Carry, 0)
        return nnx.scan(f, in_axes=carry, out_axes=carry if out_axes is None else 0)

    def call(m: Any, x: Any) -> Any:
        return m(x)

    return {
        "vmap in_axes too long": lambda nnx: nnx.vmap(call, in_axes=(None, 0, 0))(
            lin(nnx), x
        ),
        "vmap in_axes past rank": lambda nnx: nnx.vmap(call, in_axes=(None, 2))(
            lin(nnx), x
        ),
        "vmap in_axes string": lambda nnx: nnx.vmap(call, in_axes=(None, "a"))(
            lin(nnx), x
        ),
        "vmap out_axes None of a mapped value": lambda nnx: nnx.vmap(
            lambda x: x, out_axes=None
        )(x),
        "vmap a module not stacked": lambda nnx: nnx.vmap(call, in_axes=(0, 0))(
            lin(nnx), x
        ),
        "vmap nothing mapped": lambda nnx: nnx.vmap(lambda x: x, in_axes=None)(x),
        "vmap axis_size disagrees": lambda nnx: nnx.vmap(lambda x: x, axis_size=3)(x),
        "scan without carry returning two": lambda nnx: nnx.scan(lambda x: (x, x))(x),
        "scan carry changes shape": lambda nnx: scan(
            nnx, lambda c, x: (jnp.ones(2), x)
        )(jnp.ones(()), x),
        "scan carry changes dtype": lambda nnx: scan(
            nnx, lambda c, x: (c.astype(jnp.int32), x)
        )(jnp.ones(()), x),
        "scan over a scalar": lambda nnx: scan(nnx, lambda c, x: (c, x))(
            jnp.ones(()), jnp.ones(())
        ),
        "scan out_axes without the carry": lambda nnx: scan(
            nnx, lambda c, x: (c, x), out_axes=0
        )(jnp.ones(()), x),
        "scan returning one value for two": lambda nnx: scan(nnx, lambda c, x: c)(
            jnp.ones(()), x
        ),
        "jit unhashable static": lambda nnx: nnx.jit(lambda x, s: x, static_argnums=1)(
            x, [1]
        ),
        "jit returning an object": lambda nnx: nnx.jit(lambda x: object())(x),
        "jit of a string": lambda nnx: nnx.jit(lambda x: x)("a"),
        "jit of Python control flow": lambda nnx: nnx.jit(
            lambda x: x if x.sum() > 0 else -x
        )(x),
        "grad of a vector": lambda nnx: nnx.grad(call)(lin(nnx), x),
        "grad of integers": lambda nnx: nnx.grad(lambda x: x.sum())(
            jnp.ones(3, jnp.int32)
        ),
        "grad argnums past": lambda nnx: nnx.grad(lambda x: x.sum(), argnums=2)(x),
        "grad has_aux without a pair": lambda nnx: nnx.grad(
            lambda x: x.sum(), has_aux=True
        )(x),
        "value_and_grad of a vector": lambda nnx: nnx.value_and_grad(lambda x: x)(x),
        "grad DiffState of a number": lambda nnx: nnx.grad(
            lambda m, x: m(x).sum(), argnums=nnx.DiffState(0, 3)
        )(lin(nnx), x),
        "cond on a vector": lambda nnx: nnx.cond(x[0] > 0, lambda x: x, lambda x: x, x),
        "cond branches of two dtypes": lambda nnx: nnx.cond(
            True, lambda x: x, lambda x: x.astype(jnp.int32), x
        ),
        "switch on a float": lambda nnx: nnx.switch(1.5, [lambda x: x, lambda x: x], x),
        "fori_loop changing the carry": lambda nnx: nnx.fori_loop(
            0, 3, lambda i, c: c.astype(jnp.int32), x
        ),
        "while_loop on a vector": lambda nnx: nnx.while_loop(
            lambda c: c, lambda c: c, x
        ),
        "remat static past": lambda nnx: nnx.remat(lambda x: x, static_argnums=3)(x),
        "eval_shape of a bad sum": lambda nnx: nnx.eval_shape(
            lambda: jnp.ones(3) + jnp.ones(4)
        ),
        "split_rngs of no Rngs": lambda nnx: nnx.split_rngs(splits=2)(lambda x: x)(x),
        "merge another model's state": lambda nnx: nnx.merge(
            nnx.graphdef(lin(nnx)), nnx.state(nnx.Linear(2, 4, rngs=nnx.Rngs(0)))
        ),
        "update with a dict of a number": lambda nnx: nnx.update(
            lin(nnx), {"kernel": 1}
        ),
        "state with a number filter": lambda nnx: nnx.state(lin(nnx), 3),
        "split with filters that leave some": lambda nnx: nnx.split(
            nnx.BatchNorm(3, rngs=nnx.Rngs(0)), nnx.Param
        ),
        "split with ... first": lambda nnx: nnx.split(lin(nnx), ..., nnx.Param),
        "Optimizer update with another tree": lambda nnx: nnx.Optimizer(
            lin(nnx), optax.sgd(0.1), wrt=nnx.Param
        ).update(lin(nnx), {"kernel": x}),
        "Variable of a list plus one": lambda nnx: nnx.Param([1, 2]) + 1,
        "Rngs of a negative seed": lambda nnx: nnx.Rngs(-1).params(),
        "Rngs of a float seed": lambda nnx: nnx.Rngs(1.5).params(),
        "Rngs of a string": lambda nnx: nnx.Rngs("a"),
        "Sequential of a number": lambda nnx: nnx.Sequential(3)(x),
        "List past the end": lambda nnx: nnx.List([1])[-5],
        "Dict missing key": lambda nnx: nnx.Dict(a=1)["b"],
        "clone of a number": lambda nnx: nnx.clone(3),
        "pop of nothing sown": lambda nnx: nnx.pop(lin(nnx), nnx.Intermediate),
        "iter_graph of a number": lambda nnx: list(nnx.iter_graph(3)),
        "graphdef of a number": lambda nnx: nnx.graphdef(3),
        "state of a number": lambda nnx: nnx.state(3),
        **_nnx_object_mistakes(x),
        **_nnx_more_mistakes(x),
    }


def _bad_custom_vjp(nnx: Any) -> Any:
    """An nnx.custom_vjp whose backward pass returns the whole cotangent pair
    (doubled) as the one argument's tangent."""

    @nnx.custom_vjp
    def f(x: Any) -> Any:
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), x), lambda res, g: (g * 2,))
    return jax.grad(lambda x: f(x).sum())(jnp.ones(2))


def _nnx_object_mistakes(x: Any) -> dict[str, Callable[[Any], Any]]:
    """Mistakes with nnx's objects: Variables, Modules, States, Rngs, metrics."""
    import optax

    def lin(nnx: Any) -> Any:
        return nnx.Linear(3, 4, rngs=nnx.Rngs(0))

    def module(nnx: Any, init: Any) -> Any:
        return type("M", (nnx.Module,), {"__init__": init})

    def param(nnx: Any, *shape: int) -> Any:
        return nnx.Param(jnp.ones(shape))

    return {
        "set an attribute of a captured module in jax.jit": lambda nnx: (
            lambda m: jax.jit(lambda x: setattr(m, "w", x) or x)(x)
        )(lin(nnx)),
        "set a captured Variable in jax.jit": lambda nnx: (
            lambda p: jax.jit(lambda x: p.set_value(x) or x)(x)
        )(nnx.Param(x)),
        # an object the function captured from outside, among the outputs:
        # a copy where flax.nnx keeps it, an error where it refuses it
        "return a captured module from nnx.eval_shape": lambda nnx: (
            lambda m: nnx.eval_shape(lambda: m)
        )(lin(nnx)),
        "return a captured module from nnx.cond": lambda nnx: (
            lambda m: nnx.cond(True, lambda: m, lambda: m)
        )(lin(nnx)),
        "return a captured module from nnx.remat": lambda nnx: (
            lambda m: nnx.remat(lambda: m)()
        )(lin(nnx)),
        "return a captured module from nnx.jit": lambda nnx: (
            lambda m: nnx.jit(lambda: m)()
        )(lin(nnx)),
        "return a captured module from nnx.vmap": lambda nnx: (
            lambda m: nnx.vmap(lambda x: m, out_axes=None)(jnp.ones((2, 3)))
        )(lin(nnx)),
        "return a captured module from nnx.cond in tree mode": lambda nnx: (
            lambda m: nnx.cond(True, lambda: m, lambda: m, graph=False)
        )(lin(nnx)),
        "return the argument in nnx.grad's aux": lambda nnx: (
            lambda m: nnx.grad(lambda m: ((m(x) ** 2).sum(), m), has_aux=True)(m)
        )(lin(nnx)),
        "return a captured module from nnx.eval_shape in tree mode": lambda nnx: (
            lambda m: nnx.eval_shape(lambda: m, graph=False)
        )(lin(nnx)),
        "Param of a string plus one": lambda nnx: nnx.Param("a") + 1,
        "augmented assignment on a Variable": lambda nnx: param(nnx, 3).__iadd__(1),
        "custom_vjp backward of another structure": lambda nnx: _bad_custom_vjp(nnx),
        "augmented matmul on a Variable": lambda nnx: param(nnx, 2, 2).__imatmul__(
            jnp.eye(2)
        ),
        "Variable index of a scalar": lambda nnx: param(nnx)[0],
        "Variable set past the end": lambda nnx: param(nnx, 3).__setitem__(5, 1.0),
        "iterate a scalar Variable": lambda nnx: list(param(nnx)),
        "len of a scalar Variable": lambda nnx: len(param(nnx)),
        "bool of a Variable of three": lambda nnx: bool(param(nnx, 3)),
        "call a Variable": lambda nnx: param(nnx, 3)(),
        "Variable attribute missing": lambda nnx: param(nnx, 3).nope,
        "Module attribute missing": lambda nnx: lin(nnx).nope,
        "call a Module without __call__": lambda nnx: module(nnx, lambda self: None)()(
            x
        ),
        "split a list holding a number": lambda nnx: nnx.split([lin(nnx), 3]),
        "merge a state alone": lambda nnx: nnx.merge(nnx.state(lin(nnx))),
        "merge a dict of a number": lambda nnx: nnx.merge(
            nnx.graphdef(lin(nnx)), {"a": 1}
        ),
        "update a number": lambda nnx: nnx.update(3, nnx.state(lin(nnx))),
        "State attribute missing": lambda nnx: nnx.state(lin(nnx)).nope,
        "State key missing": lambda nnx: nnx.state(lin(nnx))["nope"],
        "State filter a number": lambda nnx: nnx.state(lin(nnx)).filter(3),
        "State split that leaves some": lambda nnx: nnx.state(
            nnx.BatchNorm(3, rngs=nnx.Rngs(0))
        ).split(nnx.Param),
        "State.merge of nothing": lambda nnx: nnx.State.merge(),
        "graphdef apply a number": lambda nnx: nnx.graphdef(lin(nnx)).apply(3)(x),
        "call of a number": lambda nnx: nnx.call(3),
        "Rngs call without default": lambda nnx: nnx.Rngs(params=0)(),
        "Rngs fork split a string": lambda nnx: nnx.Rngs(0).fork(split="a"),
        "RngStream of a string key": lambda nnx: nnx.RngStream(key="a", tag="x"),
        "Dropout training without rngs": lambda nnx: nnx.Dropout(0.5)(
            x, deterministic=False
        ),
        "BatchNorm without rngs": lambda nnx: nnx.BatchNorm(3),
        "Linear without rngs": lambda nnx: nnx.Linear(3, 4),
        "Linear rngs positional": lambda nnx: nnx.Linear(3, 4, nnx.Rngs(0)),
        "view of an unknown keyword": lambda nnx: nnx.view(lin(nnx), nope=True),
        "set_attributes (not in flax 0.12)": lambda nnx: nnx.set_attributes(
            lin(nnx), nope=True
        ),
        "with_partitioning of too few names": lambda nnx: nnx.with_partitioning(
            nnx.initializers.ones, ("a",)
        )(jax.random.key(0), (2, 3)),
        "eval_shape of a number": lambda nnx: nnx.eval_shape(3),
        "jit of a number": lambda nnx: nnx.jit(3),
        "vmap of a number": lambda nnx: nnx.vmap(3)(x),
        "Optimizer of a number": lambda nnx: nnx.Optimizer(
            3, optax.sgd(0.1), wrt=nnx.Param
        ),
        "Optimizer of a number for tx": lambda nnx: nnx.Optimizer(
            lin(nnx), 3, wrt=nnx.Param
        ),
        "Average update without values": lambda nnx: nnx.metrics.Average().update(),
        "MultiMetric update of another name": lambda nnx: nnx.MultiMetric(
            a=nnx.metrics.Average()
        ).update(b=1),
        "Sequential of None": lambda nnx: nnx.Sequential(None)(x),
        "bridge ToNNX of a number": lambda nnx: nnx.bridge.ToNNX(3, rngs=nnx.Rngs(0)),
        "pure of a module": lambda nnx: nnx.pure(lin(nnx)),
    }


def _nnx_more_mistakes(x: Any) -> dict[str, Callable[[Any], Any]]:
    """Mistakes with nnx's less used transforms (custom_vjp, loops, StateAxes,
    split_rngs), the Optimizer, attention/LoRA/Embed layers, metrics and graph
    helpers."""
    import optax

    def lin(nnx: Any) -> Any:
        return nnx.Linear(3, 4, rngs=nnx.Rngs(0))

    def cvjp(nnx: Any, fwd: Any, bwd: Any) -> Any:
        f = nnx.custom_vjp(lambda x: x * 2)
        f.defvjp(fwd, bwd)
        return nnx.grad(lambda x: f(x).sum())(x)

    def opt(nnx: Any) -> Any:
        return nnx.Optimizer(lin(nnx), optax.sgd(0.1), wrt=nnx.Param)

    def mha(nnx: Any, decode: bool) -> Any:
        return nnx.MultiHeadAttention(2, 4, decode=decode, rngs=nnx.Rngs(0))

    def add_in_loop(nnx: Any) -> Any:
        def body(i: Any, m: Any) -> Any:
            m.extra = nnx.Param(jnp.ones(2))
            return m

        return nnx.fori_loop(0, 2, body, lin(nnx))

    def grads_of_another_shape(nnx: Any) -> Any:
        m = lin(nnx)
        other = nnx.state(nnx.Linear(3, 5, rngs=nnx.Rngs(0)), nnx.Param)
        return nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param).update(m, other)

    carry = lambda nnx: (nnx.Carry, 0)  # noqa: E731
    return {
        "custom_vjp fwd not a pair": lambda nnx: cvjp(
            nnx, lambda x: x, lambda r, g: (g,)
        ),
        "custom_vjp bwd too many": lambda nnx: cvjp(
            nnx, lambda x: (x * 2, None), lambda r, g: (g, g)
        ),
        "custom_vjp bwd not a tuple": lambda nnx: cvjp(
            nnx, lambda x: (x * 2, None), lambda r, g: g
        ),
        "custom_vjp without defvjp": lambda nnx: nnx.custom_vjp(lambda x: x)(x),
        "Optimizer without wrt": lambda nnx: nnx.Optimizer(lin(nnx), optax.sgd(0.1)),
        "Optimizer update grads only": lambda nnx: opt(nnx).update(
            nnx.state(lin(nnx), nnx.Param)
        ),
        "Optimizer tx a number": lambda nnx: nnx.Optimizer(lin(nnx), 3, wrt=nnx.Param),
        "Optimizer update grads of another shape": grads_of_another_shape,
        "jit donate_argnums past": lambda nnx: nnx.jit(lambda x: x, donate_argnums=3)(
            x
        ),
        "jit in_shardings too long": lambda nnx: nnx.jit(
            lambda x: x, in_shardings=(None, None)
        )(x),
        "jit static_argnames missing": lambda nnx: nnx.jit(
            lambda x: x, static_argnames="y"
        )(x),
        "vmap StateAxes of a number": lambda nnx: nnx.vmap(
            lambda m, x: m(x), in_axes=(nnx.StateAxes({3: 0}), 0)
        )(lin(nnx), x),
        "StateAxes not a mapping": lambda nnx: nnx.StateAxes(3),
        "scan length disagrees": lambda nnx: nnx.scan(
            lambda c, x: (c, x), in_axes=carry(nnx), length=7
        )(jnp.ones(()), x),
        "scan in_axes too long": lambda nnx: nnx.scan(
            lambda c, x: (c, x), in_axes=(nnx.Carry, 0, 0)
        )(jnp.ones(()), x),
        "scan two Carry": lambda nnx: nnx.scan(
            lambda c, x: (c, x), in_axes=(nnx.Carry, nnx.Carry)
        )(jnp.ones(()), x),
        "scan carry changes structure": lambda nnx: nnx.scan(
            lambda c, x: ((c, c), x), in_axes=carry(nnx), out_axes=carry(nnx)
        )(jnp.ones(()), x),
        "while_loop changing structure": lambda nnx: nnx.while_loop(
            lambda c: False, lambda c: (c, c), x
        ),
        "fori_loop changing structure": lambda nnx: nnx.fori_loop(
            0, 2, lambda i, c: (c, c), x
        ),
        "fori_loop adding a Variable": add_in_loop,
        "cond branches of two structures": lambda nnx: nnx.cond(
            True, lambda x: x, lambda x: (x, x), x
        ),
        "remat policy a number": lambda nnx: nnx.remat(lambda x: x.sum(), policy=3)(x),
        "eval_shape returning an object": lambda nnx: nnx.eval_shape(lambda: object()),
        "Rngs fork split negative": lambda nnx: nnx.Rngs(0).fork(split=-1),
        "Rngs missing stream no default": lambda nnx: nnx.Rngs(params=0).dropout(),
        "Rngs index a number": lambda nnx: nnx.Rngs(params=0)[3],
        "split_rngs splits zero": lambda nnx: nnx.split_rngs(splits=0)(lambda r: r)(
            nnx.Rngs(0)
        ),
        "MHA init_cache without decode": lambda nnx: mha(nnx, False).init_cache(
            (2, 3, 4)
        ),
        "MHA decode without cache": lambda nnx: mha(nnx, True)(jnp.ones((2, 3, 4))),
        "MHA of another width": lambda nnx: mha(nnx, False)(jnp.ones((2, 3, 5))),
        "LoRA of a wrong input": lambda nnx: nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))(
            jnp.ones((2, 5))
        ),
        "LoRALinear of a wrong input": lambda nnx: nnx.LoRALinear(
            3, 4, lora_rank=2, rngs=nnx.Rngs(0)
        )(jnp.ones((2, 5))),
        "Embed attend of another width": lambda nnx: nnx.Embed(
            5, 3, rngs=nnx.Rngs(0)
        ).attend(jnp.ones((2, 4))),
        "Embed of floats": lambda nnx: nnx.Embed(5, 3, rngs=nnx.Rngs(0))(jnp.ones(2)),
        "Accuracy of a wrong rank": lambda nnx: nnx.metrics.Accuracy().update(
            logits=jnp.ones(3), labels=jnp.ones(3, jnp.int32)
        ),
        "Accuracy of float labels": lambda nnx: nnx.metrics.Accuracy().update(
            logits=jnp.ones((3, 2)), labels=jnp.ones(3)
        ),
        "Welford update without values": lambda nnx: nnx.metrics.Welford().update(),
        "Average of a missing argname": lambda nnx: nnx.metrics.Average("loss").update(
            values=jnp.ones(2)
        ),
        "MultiMetric compute before update": lambda nnx: nnx.MultiMetric(
            a=nnx.metrics.Average()
        ).compute(),
        "sow reduce not callable": lambda nnx: [
            (m := lin(nnx)).sow(nnx.Intermediate, "y", 1, reduce_fn=3),
            m.sow(nnx.Intermediate, "y", 2, reduce_fn=3),
        ],
        "sow type not a Variable": lambda nnx: lin(nnx).sow(int, "y", 1),
        "call of a graphdef alone": lambda nnx: nnx.call(nnx.graphdef(lin(nnx))),
        "cached_partial of a number": lambda nnx: nnx.cached_partial(3, lin(nnx)),
        "cached_partial of a number called": lambda nnx: nnx.cached_partial(
            3, lin(nnx)
        )(x),
        "get_named_sharding without mesh": lambda nnx: nnx.get_named_sharding(
            nnx.state(lin(nnx)), None
        ),
        "with_partitioning without a mesh": lambda nnx: nnx.Linear(
            3,
            4,
            kernel_init=nnx.with_partitioning(nnx.initializers.ones, ("a", "b")),
            rngs=nnx.Rngs(0),
        ),
        "Variable replace of two values": lambda nnx: nnx.Param(jnp.ones(2)).replace(
            3, 4
        ),
        "Sequential call with two args": lambda nnx: nnx.Sequential(lin(nnx))(x, x),
        "Dict of a number key": lambda nnx: nnx.Dict({1: 2}),
        "List setitem past": lambda nnx: nnx.List([1]).__setitem__(3, 2),
        "fori_loop of float bounds": lambda nnx: nnx.fori_loop(
            0.0, 3.0, lambda i, c: c, x
        ),
        "switch index out of range": lambda nnx: nnx.switch(5, [lambda x: x], x),
        "pmap of a module not stacked": lambda nnx: nnx.pmap(
            lambda m, x: m(x), in_axes=(0, 0)
        )(lin(nnx), x),
        "shard_map without mesh": lambda nnx: nnx.shard_map(
            lambda x: x, mesh=None, in_specs=None, out_specs=None
        )(x),
        "grad of a missing attribute": lambda nnx: nnx.grad(lambda m: m.nope)(lin(nnx)),
        "bridge to_linen without arguments": lambda nnx: nnx.bridge.to_linen(
            nnx.Linear
        ).init(jax.random.key(0), x),
    }


def linen_api_mistakes() -> dict[str, Callable[[Any], Any]]:
    """Mistakes with Linen's init/apply, lifted transforms and modules, by name;
    each takes the Linen module (flax's or lens's)."""
    key, x = jax.random.key(0), jnp.ones((5, 3))

    def mlp(nn: Any) -> Any:
        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(4)(x)

        return MLP()

    def vmapped(nn: Any, **kw: Any) -> Any:
        class Stack(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.vmap(nn.Dense, **kw)(4)(x)

        return Stack()

    def scanned(nn: Any, **kw: Any) -> Any:
        class Cell(nn.Module):
            @nn.compact
            def __call__(self, c, x):
                return c, nn.Dense(3)(x)

        class Loop(nn.Module):
            @nn.compact
            def __call__(self, c, x):
                return nn.scan(Cell, **kw)()(c, x)

        return Loop()

    def batch_norm(nn: Any) -> Any:
        class Norm(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.BatchNorm(use_running_average=False)(x)

        return Norm()

    def init_apply(m: Any, **kw: Any) -> Any:
        return m.apply(m.init(key, x), x, **kw)

    params = {"params": 0}
    split = {"params": True}
    broadcast = dict(variable_broadcast="params", split_rngs={"params": False})
    return {
        "apply without params": lambda nn: mlp(nn).apply({}, x),
        "apply a kernel of another shape": lambda nn: mlp(nn).apply(
            {"params": {"Dense_0": {"kernel": jnp.ones((2, 4)), "bias": jnp.ones(4)}}},
            x,
        ),
        "apply a number": lambda nn: mlp(nn).apply(3, x),
        "apply a list": lambda nn: mlp(nn).apply([1], x),
        "init with a number": lambda nn: mlp(nn).init(0, x),
        "init with a string": lambda nn: mlp(nn).init("a", x),
        "init with a dict of a number": lambda nn: mlp(nn).init(params, x),
        "BatchNorm apply not mutable": lambda nn: init_apply(batch_norm(nn)),
        "apply mutable a number": lambda nn: init_apply(mlp(nn), mutable=3),
        "apply a missing method": lambda nn: init_apply(mlp(nn), method="nope"),
        "apply method a number": lambda nn: init_apply(mlp(nn), method=3),
        "call unbound": lambda nn: mlp(nn)(x),
        "vmap without variable_axes": lambda nn: vmapped(
            nn, in_axes=0, split_rngs=split
        ).init(key, x),
        "vmap in_axes too long": lambda nn: vmapped(
            nn, in_axes=(0, 0), variable_axes={"params": 0}, split_rngs=split
        ).init(key, x),
        "vmap axis past rank": lambda nn: vmapped(
            nn, in_axes=3, variable_axes={"params": 0}, split_rngs=split
        ).init(key, x),
        "vmap variable_axes a string": lambda nn: vmapped(
            nn, in_axes=0, variable_axes="params", split_rngs=split
        ).init(key, x),
        "scan length disagrees": lambda nn: scanned(nn, length=3, **broadcast).init(
            key, jnp.ones(3), x
        ),
        "scan over a scalar": lambda nn: scanned(nn, **broadcast).init(
            key, jnp.ones(3), jnp.ones(())
        ),
        "scan without broadcast params": lambda nn: scanned(nn).init(
            key, jnp.ones(3), x
        ),
        "Dense of a string": lambda nn: nn.Dense("a").init(key, x),
        "Dense of too many arguments": lambda nn: nn.Dense(*range(12)),
        "set a field": lambda nn: setattr(nn.Dense(3), "features", 4),
        "unknown keyword": lambda nn: nn.Dense(3, feature=2),
        "init a bound module": lambda nn: mlp(nn).bind({}).init(key, x),
        "Dense kernel of another shape": lambda nn: nn.Dense(4).apply(
            {"params": {"kernel": jnp.ones((3, 5)), "bias": jnp.ones(4)}}, x
        ),
        "tabulate depth a string": lambda nn: mlp(nn).tabulate(key, x, depth="a"),
        "Dropout without its rng": lambda nn: nn.Dropout(0.5, deterministic=False).init(
            {"params": key}, x
        ),
        "remat static past": lambda nn: nn.remat(nn.Dense, static_argnums=(5,))(4).init(
            key, x
        ),
        "cond on a vector": lambda nn: nn.cond(
            x[0] > 0, lambda m, x: x, lambda m, x: x, nn.Dense(3), x
        ),
        "Sequential empty": lambda nn: nn.Sequential([]).init(key, x),
        "Sequential of a number": lambda nn: nn.Sequential([3]).init(key, x),
        "Embed of floats": lambda nn: nn.Embed(10, 4).init(key, jnp.ones(3)),
        "Conv of a vector": lambda nn: nn.Conv(4, (3,)).init(key, jnp.ones(3)),
        "Conv kernel longer than the input": lambda nn: nn.Conv(4, (3, 3, 3)).init(
            key, jnp.ones((1, 6, 3))
        ),
        "Conv strides too long": lambda nn: nn.Conv(4, (3,), strides=(1, 1)).init(
            key, jnp.ones((1, 6, 3))
        ),
        "Conv padding a bad string": lambda nn: nn.Conv(4, (3,), padding="FOO").init(
            key, jnp.ones((1, 6, 3))
        ),
        "Conv padding too long": lambda nn: nn.Conv(
            4, (3,), padding=((1, 1), (1, 1))
        ).init(key, jnp.ones((1, 6, 3))),
        "attention mask of another shape": lambda nn: nn.MultiHeadDotProductAttention(
            2
        ).init(key, jnp.ones((2, 3, 4)), mask=jnp.ones((5, 5))),
        "LSTMCell carry of another width": lambda nn: nn.LSTMCell(4).init(
            key, (jnp.ones((2, 3)), jnp.ones((2, 3))), jnp.ones((2, 3))
        ),
        "RNN of a matrix": lambda nn: nn.RNN(nn.GRUCell(4)).init(key, jnp.ones((2, 3))),
        "avg_pool window too long": lambda nn: nn.avg_pool(jnp.ones((1, 6, 3)), (2, 2)),
        "max_pool padding a bad string": lambda nn: nn.max_pool(
            jnp.ones((1, 6, 3)), (2,), padding="FOO"
        ),
        "one_hot of a float count": lambda nn: nn.one_hot(jnp.ones(3), 2.5),
        "merge_param given twice": lambda nn: nn.merge_param("x", 1, 2),
        "merge_param given neither": lambda nn: nn.merge_param("x", None, None),
        "logical rules naming an axis twice": lambda nn: nn.logical_to_mesh_axes(
            ("a", "b"), rules=(("a", "x"), ("a", "y"))
        ),
        **_linen_module_mistakes(key, x),
        **_linen_more_mistakes(key, x),
    }


def _linen_module_mistakes(key: Any, x: Any) -> dict[str, Callable[[Any], Any]]:
    """Mistakes inside Linen modules: names, setup, variables, rngs, binding."""

    def module(nn: Any, body: Any, setup: Any = None, fields: Any = None) -> Any:
        """A Module class from a ``__call__`` body (compact unless there is a
        ``setup``) and dataclass ``fields`` ({name: (type, default)})."""
        ns: dict[str, Any] = {"__annotations__": {}}
        for name, (kind, default) in (fields or {}).items():
            ns["__annotations__"][name] = kind
            ns[name] = default
        if setup is not None:
            ns["setup"] = setup
        ns["__call__"] = nn.compact(body) if setup is None else body
        return type("M", (nn.Module,), ns)

    def run(nn: Any, body: Any, setup: Any = None, **kw: Any) -> Any:
        m = module(nn, body, setup, kw.pop("fields", None))(**kw)
        return m.apply(m.init(key, x), x)

    def ones(nn: Any, self: Any, name: str = "w") -> Any:
        return self.param(name, nn.initializers.ones, (3,))

    def applied(m: Any, variables: Any = None) -> Any:
        return m.apply(m.init(key, x) if variables is None else variables, x)

    return {
        "param twice": lambda nn: run(
            nn, lambda self, x: (ones(nn, self), ones(nn, self))[0]
        ),
        "param named as a submodule": lambda nn: run(
            nn, lambda self, x: (ones(nn, self, "Dense_0"), nn.Dense(2)(x))[1]
        ),
        "two submodules of one name": lambda nn: run(
            nn, lambda self, x: nn.Dense(2, name="a")(nn.Dense(3, name="a")(x))
        ),
        "variable named as a param": lambda nn: run(
            nn,
            lambda self, x: (
                ones(nn, self),
                self.variable("stats", "w", jnp.zeros, (3,)),
            )[0],
        ),
        "param init not callable": lambda nn: run(
            nn, lambda self, x: self.param("w", 3, (3,))
        ),
        "param of another shape at apply": lambda nn: applied(
            module(nn, lambda self, x: ones(nn, self))(), {"params": {"w": jnp.ones(4)}}
        ),
        "variable written when immutable": lambda nn: applied(
            module(
                nn,
                lambda self, x: setattr(
                    self.variable("stats", "n", jnp.zeros, ()), "value", 1.0
                ),
            )()
        ),
        "make_rng of a missing stream": lambda nn: run(
            nn, lambda self, x: self.make_rng("noise")
        ),
        "setup assigns a name twice": lambda nn: run(
            nn,
            lambda self, x: self.d(x),
            setup=lambda self: (
                setattr(self, "d", nn.Dense(2)),
                setattr(self, "d", nn.Dense(3)),
            ),
        ),
        "submodule in a setup module's call": lambda nn: run(
            nn, lambda self, x: nn.Dense(2)(x), setup=lambda self: None
        ),
        "field set in setup": lambda nn: run(
            nn,
            lambda self, x: x,
            setup=lambda self: setattr(self, "features", 4),
            fields={"features": (int, 3)},
        ),
        "attribute set in a compact call": lambda nn: run(
            nn, lambda self, x: setattr(self, "y", 1) or x
        ),
        "param in a setup module's call": lambda nn: run(
            nn, lambda self, x: ones(nn, self), setup=lambda self: None
        ),
        "top-level module named": lambda nn: nn.Dense(3, name="a").init(key, x),
        "parent a number": lambda nn: nn.Dense(3, parent=3),
        "field named name": lambda nn: type(
            "M", (nn.Module,), {"__annotations__": {"name": int}, "name": 3}
        ),
        "submodule outside compact": lambda nn: (
            lambda M: M().init(key, x, method=M.f)
        )(type("M", (nn.Module,), {"f": lambda self, x: nn.Dense(2)(x)})),
        "setup attribute of an unbound module": lambda nn: (
            type(
                "M",
                (nn.Module,),
                {"setup": lambda self: setattr(self, "d", nn.Dense(2))},
            )().d
        ),
        "sow into a number": lambda nn: run(
            nn, lambda self, x: self.sow(3, "y", x) or x
        ),
        "put_variable when immutable": lambda nn: applied(
            module(nn, lambda self, x: self.put_variable("params", "w", x))()
        ),
        "get_variable missing": lambda nn: run(
            nn, lambda self, x: self.get_variable("params", "nope") + 1
        ),
        "apply without the param": lambda nn: applied(
            module(nn, lambda self, x: ones(nn, self))(), {"params": {}}
        ),
        "apply rngs of a number": lambda nn: nn.Dropout(0.5, deterministic=False).apply(
            {}, x, rngs={"dropout": 3}
        ),
        "init_with_output a missing method": lambda nn: nn.Dense(3).init_with_output(
            key, x, method="nothing"
        ),
        "is_mutable_collection unbound": lambda nn: nn.Dense(3).is_mutable_collection(
            "params"
        ),
        "clone with an unknown field": lambda nn: nn.Dense(3).clone(nope=1),
        "unbind unbound": lambda nn: nn.Dense(3).unbind(),
        "variables of an unbound module": lambda nn: nn.Dense(3).variables,
        "path of an unbound module": lambda nn: nn.Dense(3).path,
        "lazy_init from a data-dependent param": lambda nn: module(
            nn, lambda self, x: self.param("w", lambda k: x)
        )().lazy_init(key, jax.ShapeDtypeStruct((2, 3), jnp.float32)),
        "intercept_methods of a number": lambda nn: nn.intercept_methods(3).__enter__(),
        "tabulate a missing method": lambda nn: nn.Dense(3).tabulate(
            key, x, method="nope"
        ),
        "checkpoint of a missing method": lambda nn: nn.checkpoint(
            nn.Dense, methods=["nope"]
        )(3).init(key, x),
        "jit of a missing method": lambda nn: nn.jit(nn.Dense, methods=["nope"])(
            3
        ).init(key, x),
        "Partitioned with too few names": lambda nn: nn.Partitioned(
            jnp.ones((2, 3)), ("a",)
        ).unbox(),
        "Partitioned axis removed under another name": lambda nn: nn.Partitioned(
            jnp.ones((2, 3)), ("a", "b")
        ).remove_axis(1, {nn.PARTITION_NAME: "a"}),
        "with_logical_constraint of too many names": lambda nn: (
            nn.with_logical_constraint(jnp.ones(3), ("a", "b"))
        ),
    }


def _linen_more_mistakes(key: Any, x: Any) -> dict[str, Callable[[Any], Any]]:
    """Mistakes with Linen's less used lifted transforms (loops, cond, jvp,
    custom_vjp, map_variables), recurrent and attention layers, and scope
    methods called with the wrong kind of argument."""

    def init(nn: Any, body: Any) -> Any:
        class Mod(nn.Module):
            @nn.compact
            def __call__(self, x):
                return body(self, nn, x)

        return Mod().init(key, x)

    def cvjp(nn: Any) -> Any:
        def body(s: Any, nn: Any, x: Any) -> Any:
            f = nn.custom_vjp(
                lambda m, x: x * 2,
                forward_fn=lambda m, x: (x * 2, None),
                backward_fn=lambda m, r, g: ({}, g, g),
            )
            return jax.grad(lambda x: f(s, x).sum())(x)

        return init(nn, body)

    def mha_decode_without_cache(nn: Any) -> Any:
        q = jnp.ones((2, 3, 4))
        params = nn.MultiHeadDotProductAttention(2).init(key, q)["params"]
        return nn.MultiHeadDotProductAttention(2, decode=True).apply(
            {"params": params}, q
        )

    return {
        "map_variables trans_in a number": lambda nn: init(
            nn,
            lambda s, nn, x: nn.map_variables(
                nn.Dense, "params", trans_in_fn=3, init=True
            )(3)(x),
        ),
        "while_loop changing the carry": lambda nn: init(
            nn,
            lambda s, nn, x: nn.while_loop(
                lambda m, c: False, lambda m, c: (c, c), s, x
            ),
        ),
        "switch index a float": lambda nn: init(
            nn,
            lambda s, nn, x: nn.switch(1.5, [lambda m, x: x, lambda m, x: x], s, x),
        ),
        "cond branches of two structures": lambda nn: init(
            nn,
            lambda s, nn, x: nn.cond(True, lambda m, x: x, lambda m, x: (x, x), s, x),
        ),
        "jvp without variable tangents": lambda nn: init(
            nn,
            lambda s, nn, x: nn.jvp(
                lambda m, x: nn.Dense(3)(x), s, (x,), (jnp.ones(2),)
            ),
        ),
        "custom_vjp bwd too many": cvjp,
        "share_scope of unbound": lambda nn: nn.share_scope(nn.Dense(3), nn.Dense(3)),
        "Sequential layers returning a tuple": lambda nn: nn.Sequential(
            [lambda x: (x, x), lambda x: x.sum()]
        ).init(key, x),
        "BatchNorm use_running_average unset": lambda nn: nn.BatchNorm().init(key, x),
        "Dropout deterministic unset": lambda nn: nn.Dropout(0.5).init(key, x),
        "Embed attend of another width": lambda nn: nn.Embed(5, 3).init(
            key, jnp.ones((2, 4)), method="attend"
        ),
        "MHA decode without cache": mha_decode_without_cache,
        "GRUCell carry of another width": lambda nn: nn.GRUCell(4).init(
            key, jnp.ones((2, 5)), x
        ),
        "Bidirectional of a number": lambda nn: nn.Bidirectional(3, 3).init(
            key, jnp.ones((2, 3, 3))
        ),
        "scan unroll zero without length": lambda nn: init(
            nn,
            lambda s, nn, x: nn.scan(
                nn.Dense,
                variable_broadcast="params",
                split_rngs={"params": False},
                unroll=0,
            )(3)(x),
        ),
        "vmap in_axes a string": lambda nn: init(
            nn,
            lambda s, nn, x: nn.vmap(
                nn.Dense,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes="a",
            )(3)(x),
        ),
        "jit of an unhashable field": lambda nn: nn.jit(nn.Dense)(features=[3]).init(
            key, x
        ),
        "tabulate console_kwargs a number": lambda nn: nn.tabulate(
            nn.Dense(3), key, console_kwargs=3
        )(x),
        "apply with rngs of a list": lambda nn: nn.Dropout(
            0.5, deterministic=False
        ).apply({}, x, rngs=[key]),
        "init rngs a dict of a number": lambda nn: nn.Dense(3).init({"params": 3}, x),
        "variable init a number": lambda nn: init(
            nn, lambda s, nn, x: s.variable("c", "a", 3)
        ),
        "nowrap of a number": lambda nn: nn.nowrap(3),
        "with_partitioning of a number": lambda nn: nn.with_partitioning(3, ("a",))(
            key, (2,)
        ),
        "Partitioned names not in the mesh": lambda nn: nn.get_sharding(
            nn.Partitioned(jnp.ones(2), ("a", "b")),
            jax.sharding.Mesh(jax.devices()[:1], ("a",)),
        ),
    }


def top_mistakes() -> dict[str, Callable[[Any], Any]]:
    """Mistakes with the top-level modules (serialization, struct,
    traverse_util, training, core, partitioning, the bridge); each takes a
    namespace of one library's modules (:func:`_top`)."""
    import optax

    key, x = jax.random.key(0), jnp.ones((2, 3))

    def state(t: Any) -> Any:
        params = t.nn.Dense(3).init(key, x)["params"]
        return t.ts.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(0.1))

    def point(t: Any) -> Any:
        @t.struct.dataclass
        class Point:
            a: int
            b: int = t.struct.field(pytree_node=False, default=1)

        return Point

    saved: list[str] = []

    def saved_at(t: Any) -> str:
        """A directory holding Flax's default checkpoint of ``{"a": ...}`` at
        step 0, the same for both libraries' runs (their messages name it)."""
        if not saved:
            import flax.training.checkpoints as flax_checkpoints

            saved.append(tempfile.mkdtemp())
            flax_checkpoints.save_checkpoint(saved[0], {"a": jnp.ones(2)}, 0)
        return saved[0]

    bridge = lambda t: t.nnx.bridge  # noqa: E731
    return {
        "TrainState without tx": lambda t: t.ts.TrainState.create(
            apply_fn=None, params={}
        ),
        "apply_gradients of another tree": lambda t: state(t).apply_gradients(
            grads={"x": 1}
        ),
        "apply_gradients without grads": lambda t: state(t).apply_gradients(),
        "TrainState replace an unknown field": lambda t: state(t).replace(nope=1),
        "from_bytes of another structure": lambda t: t.ser.from_bytes(
            {"a": jnp.ones(2)}, t.ser.to_bytes({"b": jnp.ones(2)})
        ),
        "from_state_dict missing a key": lambda t: t.ser.from_state_dict(
            {"a": 1, "b": 2}, {"a": 1}
        ),
        "to_state_dict of an object": lambda t: t.ser.to_state_dict(object()),
        "to_bytes of an object": lambda t: t.ser.to_bytes({"a": object()}),
        "struct replace an unknown field": lambda t: point(t)(a=1).replace(c=2),
        "struct missing a field": lambda t: point(t)(),
        "struct set a field": lambda t: setattr(point(t)(a=1), "a", 2),
        "struct of too many arguments": lambda t: point(t)(1, 2, 3),
        "unflatten_dict of a number key": lambda t: t.tu.unflatten_dict({1: 2}),
        "unflatten_dict sep on tuple keys": lambda t: t.tu.unflatten_dict(
            {("a",): 1}, sep="/"
        ),
        "ModelParamTraversal of a number": lambda t: t.tu.ModelParamTraversal(3),
        "save_checkpoint keep 0": lambda t: t.ck.save_checkpoint(
            tempfile.mkdtemp(), {"a": 1}, 0, keep=0
        ),
        "latest_checkpoint of a missing dir": lambda t: t.ck.latest_checkpoint(
            "/nonexistent/x"
        ),
        "ToNNX of a number": lambda t: (
            bridge(t).ToNNX(3, rngs=t.nnx.Rngs(0)).lazy_init(x)
        ),
        "ToLinen of a number": lambda t: bridge(t).ToLinen(3).init(key, x),
        "ToLinen without arguments": lambda t: (
            bridge(t).ToLinen(t.nnx.Linear).init(key, x)
        ),
        "to_linen of an unknown keyword": lambda t: (
            bridge(t).to_linen(t.nnx.Linear, 3, 4, nope=1).init(key, x)
        ),
        "ToNNX called with an unknown keyword": lambda t: bridge(t).ToNNX(
            t.nn.Dense(3), rngs=t.nnx.Rngs(0)
        )(x, nope=1),
        "logical rules a number": lambda t: t.nn.logical_to_mesh_axes(("a",), rules=3),
        "get_partition_spec of a number": lambda t: t.nn.get_partition_spec(3),
        "LogicallyPartitioned of too many names": lambda t: t.nn.LogicallyPartitioned(
            x, ("a", "b", "c")
        ).unbox(),
        "with_logical_partitioning of a number": lambda t: (
            t.nn.with_logical_partitioning(3, ("a",))(key, (2,))
        ),
        "nnx get_partition_spec of a number": lambda t: t.nnx.get_partition_spec(3),
        "FrozenDict set an item": lambda t: t.core.FrozenDict({"a": 1}).__setitem__(
            "a", 2
        ),
        "FrozenDict pop a missing key": lambda t: t.core.FrozenDict({"a": 1}).pop("b"),
        "freeze a number": lambda t: t.core.freeze(3),
        "unfreeze a number": lambda t: t.core.unfreeze(3),
        "core.copy adding a number": lambda t: t.core.copy({"a": 1}, 3),
        "meta.unbox a number": lambda t: t.core.meta.unbox(3),
        "from_bytes of garbage": lambda t: t.ser.from_bytes({"a": 1}, b"garbage"),
        "msgpack_restore of garbage": lambda t: t.ser.msgpack_restore(b"\xc1"),
        "TrainState apply_gradients of other shapes": lambda t: state(
            t
        ).apply_gradients(grads={"kernel": jnp.ones((3, 4)), "bias": jnp.ones(3)}),
        "TrainState of a number for params": lambda t: t.ts.TrainState.create(
            apply_fn=None, params=3, tx=optax.adam(0.1)
        ),
        "TrainState tx a number": lambda t: t.ts.TrainState.create(
            apply_fn=None, params={}, tx=3
        ),
        "restore_checkpoint into another structure": lambda t: t.ck.restore_checkpoint(
            saved_at(t), {"b": jnp.ones(2)}
        ),
        "restore_checkpoint of a missing step": lambda t: t.ck.restore_checkpoint(
            saved_at(t), None, step=5
        ),
        "save_checkpoint twice at one step": lambda t: [
            t.ck.save_checkpoint(d := tempfile.mkdtemp(), {"a": 1}, 0),
            t.ck.save_checkpoint(d, {"a": 1}, 0),
        ],
        "from_state_dict of an extra key": lambda t: t.ser.from_state_dict(
            {"a": 1}, {"a": 1, "b": 2}
        ),
        "from_state_dict of a struct missing a field": lambda t: t.ser.from_state_dict(
            state(t), {}
        ),
        "register_serialization_state twice": lambda t: (
            t.ser.register_serialization_state(dict, lambda x: x, lambda x, s: s)
        ),
        "struct.dataclass of a number": lambda t: t.struct.dataclass(3),
        "unflatten_dict of a key and its prefix": lambda t: t.tu.unflatten_dict(
            {("a",): 1, ("a", "b"): 2}
        ),
        "flatten_dict sep with number keys": lambda t: t.tu.flatten_dict(
            {1: {2: 3}}, sep="/"
        ),
        "FrozenDict of a list": lambda t: t.core.FrozenDict([1, 2]),
        "FrozenDict copy of a number": lambda t: t.core.FrozenDict({"a": 1}).copy(3),
        "core.pop of a missing key": lambda t: t.core.pop({"a": 1}, "b"),
        "core.init of a number": lambda t: t.core.init(3)(key),
        "core.apply of a number": lambda t: t.core.apply(lambda s, x: x)(3, x),
        "Scope param twice": lambda t: t.core.init(
            lambda s: (s.param("a", lambda k: 1), s.param("a", lambda k: 1))
        )(key),
        "flatten_dict of a list": lambda t: t.tu.flatten_dict([1, 2]),
        "path_aware_map of a list": lambda t: t.tu.path_aware_map(lambda p, x: x, [1]),
    }


def _top(library: str) -> Any:
    """``library``'s (flax or lens) top-level modules, by short name."""
    import importlib
    import types

    def get(name: str) -> Any:
        return importlib.import_module(f"{library}.{name}")

    return types.SimpleNamespace(
        ser=get("serialization"),
        struct=get("struct"),
        tu=get("traverse_util"),
        ts=get("training.train_state"),
        ck=get("training.checkpoints"),
        core=get("core"),
        nn=get("linen" if library == "flax" else "nn"),
        nnx=get("nnx"),
    )


KNOWN_API = {
    "from_bytes of garbage": "lens raises SerializationError (a ValueError, "
    "naming what msgpack said); flax lets msgpack's ExtraData through",
    "msgpack_restore of garbage": "as 'from_bytes of garbage' (msgpack's FormatError)",
    "flatten_dict of a list": "flax asserts (AssertionError); lens raises "
    "TypeError naming the type",
    "path_aware_map of a list": "as 'flatten_dict of a list'",
    "State filter a number": "as 'state with a number filter'",
    "State split that leaves some": "as 'split with filters that leave some'",
    "Rngs fork split a string": "a string split: flax reads it as a mapping "
    "(AttributeError), lens as a count (TypeError)",
    "set_attributes (not in flax 0.12)": "both raise AttributeError; flax's lazy "
    "module says 'Module flax.nnx has no attribute', lens's Python's words",
    "return a captured module from nnx.cond in tree mode": "flax.nnx's cond runs "
    "through its switch and names nnx.switch; lens names the transform called "
    "(the class and the sentence are flax's)",
    "Optimizer of a number": "an Optimizer of an object with no Variables has an "
    "empty state on lens; flax fails inside its graph walk (IndexError)",
    "split with filters that leave some": "lens names the remaining paths; flax "
    "prints the whole remainder's FlatState (the class and the sentence's start "
    "are flax's)",
    "state of a number": "nnx.state(3) returns 3 (a leaf is its own state); flax "
    "fails inside unflatten_mapping (IndexError)",
    "scan returning one value for two": "flax's bare assert; lens's ValueError "
    "says how many values out_axes expects",
    "state with a number filter": "flax's message fails to format ('!r' on a "
    "number, a ValueError); lens raises InvalidStateFilterError, a TypeError as "
    "flax means and a ValueError as it raises",
    "grad DiffState of a number": "the same filter error as 'state with a number "
    "filter'",
    "vmap StateAxes of a number": "the same filter error as 'state with a number "
    "filter'",
    "cached_partial of a number called": "flax's call fails in its own "
    "bookkeeping (a ValueError: 'GRAPH_CONTEXT.tmp_static_cache should be None'); "
    "lens calls the number, Python's TypeError",
    "apply a list": "lens raises ApplyScopeInvalidVariablesTypeError, flax's class "
    "for variables that are no dict, where flax fails reading list.items",
    "Dense of too many arguments": "Python's message names lens's __init__ "
    "(Dense.__init__()); flax's dataclass __init__ has no class in its name",
}


def run_api_mistakes(api: str) -> int:
    """Makes each API mistake under flax and lens; returns how many raise
    differently (the known differences are listed, not counted)."""
    cases = {
        "nnx": nnx_api_mistakes,
        "linen": linen_api_mistakes,
        "top": top_mistakes,
    }[api]()
    bad = 0
    for name, fn in cases.items():
        if problem := error_differs(*_raised(api, fn), flax_words_only=True):
            if name in KNOWN_API:
                print(f"known: {name}: {KNOWN_API[name]}")
                continue
            print(f"DIFFERS {name}: {problem}")
            bad += 1
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", choices=["nnx", "linen"], default="nnx")
    parser.add_argument(
        "--mistakes",
        action="store_true",
        help="make a random mistake in each configuration and compare the errors",
    )
    parser.add_argument(
        "--optional",
        action="store_true",
        help="with --mistakes: also give each optional argument each wrong value",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=80)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # both libraries' deprecations
    rnd = random.Random(args.seed)
    if args.mistakes:
        bad = run_mistakes(rnd, args.count, args.api, args.optional)
        bad += run_api_mistakes(args.api)
        if args.api == "linen":  # the top-level modules, with Linen's users
            bad += run_api_mistakes("top")
    else:
        bad = (run_nnx if args.api == "nnx" else run_linen)(rnd, args.count)
    made = args.count or "all"
    print(f"{bad} of {made} {args.api} configurations differ from flax")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
