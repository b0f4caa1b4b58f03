"""The facts the pack picture adds for lens.nnx and mapped transforms: argument
names, in/out axes and axis names, state built inside a vmapped constructor, and
compact pass-through boxes (jit, remat); each in the text and HTML forms too."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

import lens
from lens import nn, nnx
from lens.display import PackTraceView
from lens.nnx._transforms.pack_trace import arg_names
from tests.helpers import visible_text


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear(6, 3, rngs=rngs)

    def __call__(self, x):
        return self.hidden(x)


@nnx.split_rngs(splits=5)
@nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "members"})
def make_ensemble(rngs):
    return MLP(rngs)


def _record(fn):
    with lens.trace() as t:
        fn()
    return t, t.to_json()["packs"]


def test_a_vmapped_constructor_draws_the_params_it_creates_stacked():
    t, (rec,) = _record(lambda: make_ensemble(nnx.Rngs(1)))
    created = [x for x in rec["lanes"] if x["fate"] == "created"]
    assert sorted(x["path"] for x in created) == [
        "/out/hidden/bias",
        "/out/hidden/kernel",
    ]
    kernel = next(x for x in created if x["path"].endswith("kernel"))
    assert (kernel["outer"] or kernel["out"])["shape"] == [5, 6, 3]
    assert kernel["inner"]["shape"] == [6, 3]
    assert (kernel["axis"], kernel["size"], kernel["committed"]) == (0, 5, "/out")
    # the rngs argument is named by its parameter, not args[0]
    assert {s["path"] for s in rec["scopes"]} == {"/rngs", "/out"}
    assert rec["axes"]["in"] == [{"arg": "rngs", "axis": "split along axis 0"}]
    assert rec["axes"]["partition"] == "members"
    text = PackTraceView(t).text()
    assert "Param hidden/kernel  f32[*5*,6,3] → f32[6,3]" in text
    assert "partition name 'members'" in text
    assert "/out/hidden/kernel" in PackTraceView(t).html()


def test_in_axes_are_shown_per_argument_by_name():
    ens = make_ensemble(nnx.Rngs(1))

    @nnx.vmap(in_axes=(0, None), axis_name="member")
    def predict(member, x):
        return member(x)

    t, (rec,) = _record(lambda: predict(ens, jnp.ones((2, 6))))
    assert rec["axes"]["in"] == [
        {"arg": "member", "axis": "split along axis 0"},
        {"arg": "x", "axis": "not split (broadcast)"},
    ]
    assert (rec["axes"]["out"], rec["axes"]["name"]) == (
        "stacked along axis 0",
        "member",
    )
    assert rec["summary"].startswith("vmap over 5 slices of /member:")
    line = (
        "  inputs: member split along axis 0, x not split (broadcast)"
        " · outputs stacked along axis 0 · axis_name 'member'"
    )
    assert line in PackTraceView(t).text().splitlines()
    assert "axis_name 'member'" in visible_text(PackTraceView(t).html())


def test_a_jit_box_is_one_compact_line_and_its_scan_keeps_its_lanes():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return x + self.linear(x)

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=0, out_axes=0)
    def make_stack(rngs):
        return Block(rngs)

    @nnx.jit
    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x, block):
        return block(x)

    stack = make_stack(nnx.Rngs(2))
    t, (jit,) = _record(lambda: forward(jnp.ones((2, 4)), stack))
    (scan,) = jit["children"]
    assert jit["passes"]["keys"] == [x["key"] for x in jit["lanes"]]
    assert "traced once" in jit["passes"]["text"]
    assert jit["passes"]["flow"] == "2 variables flow through"
    assert scan["passes"] is None
    assert scan["axes"]["in"] == [
        {"arg": "x", "axis": "carried step to step"},
        {"arg": "block", "axis": "split along axis 0"},
    ]
    text = PackTraceView(t).text().splitlines()
    assert (
        "  traced once and compiled; state passed through · 2 variables flow through"
        in text
    )
    assert "    Param linear/bias, Param linear/kernel" in text
    assert not any(line.startswith("  [Param: all]") for line in text)
    html = PackTraceView(t).html()
    jit_part = html[: html.index("scan over 3")]
    assert "<table" not in jit_part and "linear/kernel" in jit_part
    assert "<table" in html[html.index("scan over 3") :]


def test_a_linen_vmap_records_its_axis_name_and_lanes_come_in_a_stable_order():
    class Member(nn.Module):
        @nn.compact
        def __call__(self, x):
            b = self.param("b", nn.initializers.zeros, (3,))
            a = self.param("a", nn.initializers.zeros, (3,))
            return x * a + b

    class Ens(nn.Module):
        @nn.compact
        def __call__(self, x):
            V = nn.vmap(
                Member,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                axis_name="batch",
                in_axes=0,
            )
            return V()(x)

    def init():
        return jax.eval_shape(lambda: Ens().init(jax.random.key(0), jnp.ones((2, 3))))

    _, (rec,) = _record(init)
    assert rec["axes"]["name"] == "batch"
    assert [x["path"] for x in rec["lanes"]] == ["/VmapMember_0/a", "/VmapMember_0/b"]
    _, (again,) = _record(init)
    assert [x["key"] for x in again["lanes"]] == [x["key"] for x in rec["lanes"]]


def test_argument_names_come_from_the_signature():
    def f(model, x, *rest, key=None):
        return model

    assert arg_names(f) == ["model", "x"]
    assert arg_names(None) == [] and arg_names(print) == []


def test_the_static_html_says_a_note_shared_by_a_group_once_in_its_head():
    import json
    import pathlib

    fixtures = pathlib.Path(__file__).parents[2] / "extension" / "test" / "fixtures"
    doc = json.loads((fixtures / "nnx_jit_scan.json").read_text())
    html = visible_text(PackTraceView(doc).html())
    # the scan's two Params share "scan axis 0, length 3": said once, in the head
    assert html.count("each scan axis 0, length 3") == 1
    assert "scan axis 0, length 3;" not in html
    text = PackTraceView(doc).text()
    assert text.count("scan axis 0, length 3;") == 2  # each text line stays whole


def test_scopes_are_said_in_plain_words_alike_in_text_and_html():
    t, (rec,) = _record(lambda: make_ensemble(nnx.Rngs(1)))
    lines = [
        "/rngs: its variables go through the transform",
        "/out: its variables are created inside and written back",
    ]
    assert [f"{n['path']}: {n['text']}" for n in rec["scope_notes"]] == lines
    text, page = PackTraceView(t).text().splitlines(), PackTraceView(t).html()
    for line in lines:
        assert f"  {line}" in text
        assert re.search(
            f">{re.escape(line)}</div>", re.sub(r"</?span[^>]*>", "", page)
        )
