"""Writes the golden pack-trace payloads the extension's tests read.

Run with ``.venv/bin/python extension/test/make_fixtures.py`` after changing the trace
format; ``tests/display/test_pack_fixtures.py`` checks that lens still writes them
(shapes, paths and notes are exact: no float values are stored).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import lens
from lens import nn
from lens.core import init, lift

HERE = pathlib.Path(__file__).parent / "fixtures"


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        kinit = nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp"))
        h = nn.Dense(4, kernel_init=kinit)(c)
        return nn.BatchNorm(use_running_average=False)(h), None


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        S = nn.scan(
            Block,
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True},
            length=3,
            metadata_params={nn.PARTITION_NAME: "layers"},
        )
        return S()(x, None)[0]


class Ensemble(nn.Module):
    @nn.compact
    def __call__(self, x):
        V = nn.vmap(
            Stack,
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True},
            metadata_params={nn.PARTITION_NAME: "ens"},
        )
        return V(name="<img src=x onerror=alert(1)>")(x)


class Step(nn.Module):
    """A scan body with all three kinds of state: scanned, broadcast and carry."""

    @nn.compact
    def __call__(self, c, x):
        h = nn.Dense(4)(c) + x
        nn.BatchNorm(use_running_average=False)(h)
        steps = self.variable("counter", "steps", lambda: jnp.zeros((), jnp.int32))
        steps.value += 1
        return h, h


class Loop(nn.Module):
    @nn.compact
    def __call__(self, c, xs):
        S = nn.scan(
            Step,
            variable_axes={"params": 0},
            variable_broadcast="batch_stats",
            variable_carry="counter",
            split_rngs={"params": True},
            length=3,
        )
        return S(name="steps_with_a_long_descriptive_name_to_check_wrapping")(c, xs)


class Member(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(4, name="hidden_projection_with_a_very_long_name")(x)
        return nn.Dropout(0.5, deterministic=False)(x)


class Nested(nn.Module):
    """jit(scan(vmap(...))): three levels."""

    @nn.compact
    def __call__(self, c, xs):
        class Body(nn.Module):
            @nn.compact
            def __call__(self, c, x):
                V = nn.vmap(
                    Member,
                    variable_axes={"params": 0},
                    split_rngs={"params": True, "dropout": False},
                    in_axes=0,
                )
                return V()(c) + x, None

        S = nn.scan(
            Body,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            length=2,
        )
        J = nn.jit(lambda mdl, c, xs: S()(c, xs)[0])
        return J(self, c, xs)


def multi_scope(scope: Any, x: jax.Array) -> jax.Array:
    """One vmap over three scopes: /a, /a/inner (merged into /a) and /b."""

    def body(scopes: Any, x: jax.Array) -> jax.Array:
        a, a_inner, b = scopes
        w = a.param("w", nn.initializers.ones, (2,))
        v = a_inner.param("v", nn.initializers.ones, (2,))
        u = b.param("u", nn.initializers.ones, (2,))
        return x * w + v * u

    a = scope.push("a")
    vf = lift.vmap(body, variable_axes={"params": 0}, split_rngs={"params": True})
    return vf((a, a.push("inner"), scope.push("b")), x)


def nnx_payloads() -> dict[str, Any]:
    """lens.nnx: a vmapped constructor (an ensemble built stacked, with an axis
    name and a partition name) and a jitted scan over a layer stack."""
    from lens import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.hidden = nnx.Linear(6, 3, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            return self.hidden(x)

    @nnx.split_rngs(splits=5)
    @nnx.vmap(
        in_axes=0,
        out_axes=0,
        axis_name="ensemble",
        transform_metadata={nnx.PARTITION_NAME: "members"},
    )
    def make_ensemble(rngs: Any) -> MLP:
        return MLP(rngs)

    class Layer(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            return x + self.linear(x)

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=0, out_axes=0)
    def make_stack(rngs: Any) -> Layer:
        return Layer(rngs)

    @nnx.jit
    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x: jax.Array, block: Layer) -> jax.Array:
        return block(x)

    stack = make_stack(nnx.Rngs(2))
    return {
        "nnx_ensemble.json": _trace(lambda: make_ensemble(nnx.Rngs(1))),
        "nnx_jit_scan.json": _trace(lambda: forward(jnp.ones((2, 4)), stack)),
    }


def _trace(fn: Callable[[], Any]) -> dict[str, Any]:
    with lens.trace() as t:
        fn()
    return t.to_json()


def payloads() -> dict[str, dict[str, Any]]:
    """Every golden payload by file name (built without random values in them)."""
    x = jnp.ones((2, 5, 4))
    key = jax.random.key(0)
    ens = Ensemble()
    ens_vars = jax.eval_shape(lambda: ens.init(key, x))
    ens_vars = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), ens_vars)
    loop, c, xs = Loop(), jnp.ones((2, 4)), jnp.ones((3, 2, 4))
    nested, nc, nxs = Nested(), jnp.ones((3, 4)), jnp.ones((2, 3, 4))
    keys = {"params": key, "dropout": jax.random.key(1)}
    return {
        "vmap_scan.json": _trace(lambda: jax.eval_shape(lambda: ens.init(key, x))),
        "vmap_apply.json": _trace(
            lambda: ens.apply(ens_vars, x, mutable=["batch_stats"])
        ),
        "scan_carry.json": _trace(
            lambda: jax.eval_shape(lambda: loop.init(key, c, xs))
        ),
        "nested.json": _trace(
            lambda: jax.eval_shape(lambda: nested.init(keys, nc, nxs))
        ),
        "multi_scope.json": _trace(lambda: init(multi_scope)(key, jnp.ones((3, 2)))),
        "two_transforms.json": _trace(
            lambda: (
                jax.eval_shape(lambda: ens.init(key, x)),
                jax.eval_shape(lambda: Stack().init(key, x[0])),
            )
        ),
        **nnx_payloads(),
    }


# Collection names whose colours the extension must draw as lens.display does:
# fixed ones, ASCII, non-ASCII, Object.prototype members, the empty name, and names
# longer than one SHA-1 block (55 bytes) in bytes.
COLOR_NAMES = [
    "params",
    "batch_stats",
    "cache",
    "intermediates",
    "my_stats",
    "state",
    "losses",
    "perturbations",
    "constructor",
    "__proto__",
    "",
    "été",
    "日本語のコレクション",
    "x" * 55,
    "x" * 56,
    "a_collection_name_well_past_sixty_four_bytes_" * 3,
]


def colors() -> dict[str, str]:
    """``{collection: colour}`` as lens.display draws them (colors.json)."""
    from lens.display._pack import color

    return {name: color(name) for name in COLOR_NAMES}


# Captions whose terms the extension must find as lens.display does (besides every
# caption of the golden payloads): one per glossary term, terms at the edges of
# words (Python's \b and \d are Unicode-aware, JavaScript's are not), the lookbehind
# and lookahead forms of a carry, a term said twice, non-ASCII and astral text.
GLOSS_EXAMPLES = [
    "outer value → inner value",
    "x carried step to step",
    "outputs: carry from the last step, ys stacked along axis 0",
    "counter: carry",
    "carry: in → out, threaded through the steps",
    "outputs carried",
    "x split along axis 2",
    "y split by ('data', None)",
    "x not split (broadcast)",
    "y not stacked (broadcast)",
    "broadcast again",
    "train not split (keyword argument)",
    "_ nothing to split (no arrays)",
    "outputs stacked along axis 10",
    "outputs stacked by (0, None)",
    "axis_name 'batch' · partition name 'layers'",
    "vmap axis 0, size 3 ('ens')",
    "scan axis 1, length 4",
    "params: lifted",
    "writes the variables back to /mlp",
    "written back",
    "commits back",
    "4 variables flow through",
    "1 variable flows through",
    "state passed through",
    "Param passed in whole",
    "rng params: split into 3 keys",
    "shared (the same key inside)",
    "rms of slices 0..5 (axis 0): 1..2",
    "change per slice",
    "rms per slice",
    "RMS at step 4",
    "stands out: 3",
    "max|d| 0.1 rel 0.3 (was all 0)",
    "rng streams moved on (not counted): x",
    "sharded P('model',)",
    "sharding",
    "replicated",
    "whole d0-7",
    "on 2x4 mesh",
    "loss log scale",
    "log colour",
    "each row relative to its own median",
    "mutable: none",
    "émutable: none; mutableé; _rel rel_ relé",
    "été broadcast 日本語 lifted",
    "𝒳broadcast 𝒳 lifted",
    "split along axis ٣",
    "carried_over carriedness carry",
    "rel is rel",
    "a split along axis 0 and b split along axis 1, broadcast",
]


def captions(docs: dict[str, Any]) -> list[str]:
    """Every caption text of ``docs`` (golden payloads by name) that a picture
    explains terms in, as the extension words it, then GLOSS_EXAMPLES; each once."""
    from lens.display import _pack

    out: list[str] = []
    stack = [r for _, doc in sorted(docs.items()) for r in reversed(doc["packs"])]
    while stack:
        rec = stack.pop()
        out.append(rec["summary"])
        axes = rec.get("axes") or {}
        out.append(axes.get("text", ""))
        for part in axes.get("in", []) + (axes.get("out_parts") or []):
            out += [part["axis"], f"{part['arg']} {part['axis']}"]
        if axes.get("out"):
            out.append(f"outputs {axes['out']}")
        out += [f"{n['path']}: {n['text']}" for n in rec.get("scope_notes", [])]
        out.append(_pack._commits_to(rec) or "")
        if rec.get("passes"):
            out += [rec["passes"]["text"], rec["passes"]["flow"]]
        out += [_pack._group_title(rec, i) for i in range(len(rec["groups"]))]
        out += [x for lane in rec["lanes"] for x in (lane["note"], lane["fate_text"])]
        out += [r["text"] for r in rec["rng_lanes"]]
        stack.extend(reversed(rec["children"]))
    return [t for t in dict.fromkeys(out + GLOSS_EXAMPLES) if t]


def glossed(docs: dict[str, Any]) -> list[dict[str, Any]]:
    """Each caption cut as lens.display cuts it (glossed.json): its pieces, each
    with the name of the term it explains or null, for a fresh output."""
    from lens.display._glossary import Gloss

    return [
        {
            "text": text,
            "pieces": [
                [piece, term.name if term else None]
                for piece, term in Gloss().pieces(text)
            ],
        }
        for text in captions(docs)
    ]


def stored() -> dict[str, Any]:
    """The golden payloads as stored (what glossed.json is cut from)."""
    names = sorted(p.name for p in HERE.glob("*.json"))
    return {
        n: json.loads((HERE / n).read_text("utf-8"))
        for n in names
        if n not in ("colors.json", "glossed.json")
    }


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, doc in payloads().items():
        (HERE / name).write_text(json.dumps(doc, indent=1) + "\n")
    text = json.dumps(colors(), indent=1, ensure_ascii=False)
    (HERE / "colors.json").write_text(text + "\n", encoding="utf-8")
    text = json.dumps(glossed(stored()), indent=1, ensure_ascii=False)
    (HERE / "glossed.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
