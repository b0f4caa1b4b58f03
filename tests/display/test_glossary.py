"""Technical terms in display captions carry their plain words as hover text (a
``title`` that JupyterLab's sanitizer keeps), once per output; docs/displays.md's
glossary says the same words. The terms are one file, lens/display/glossary.json,
which the JupyterLab extension ships a copy of (extension/src/glossary.json); the
extension's unit test checks that it cuts the captions in
extension/test/fixtures/glossed.json as lens does, and this checks that the
fixture is what lens cuts today."""

from __future__ import annotations

import html
import importlib.util
import json
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np

import lens
from lens import nn, nnx
from lens.core import apply, lift
from lens.core import nn as core_nn
from lens.display import DiffView, ModuleView, PackTraceView, VariablesView
from lens.display._glossary import TERMS, Gloss, gloss, meaning
from lens.display._live import FrameView
from tests.helpers import visible_text

REPO = pathlib.Path(__file__).parents[2]
DOCS = REPO / "docs" / "displays.md"


def hovers(page: str) -> dict[str, str]:
    """``{term as shown: its hover text}`` of every glossed term in ``page``."""
    found = re.findall(
        r"<span title='([^']*)' style='border-bottom:1px dotted[^']*'>([^<]*)</span>",
        page,
    )
    return {html.unescape(text): html.unescape(title) for title, text in found}


def _trace(fn):
    with lens.trace() as t:
        fn()
    return PackTraceView(t).html()


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        return nn.tanh(nn.Dense(3)(c) + x), c


def test_a_linen_scan_explains_carried_split_stacked_and_its_keys():
    class Stack(nn.Module):
        @nn.compact
        def __call__(self, c, xs):
            scan = nn.scan(
                Block, variable_axes={"params": 0}, split_rngs={"params": True}
            )
            return scan(name="steps")(c, xs)

    c, xs = jnp.ones((2, 3)), jnp.ones((4, 2, 3))
    got = hovers(_trace(lambda: Stack().init(jax.random.key(0), c, xs)))
    assert got["carried step to step"] == meaning("carried step to step")
    assert got["split along axis 0"] == meaning("split along axis n")
    assert got["carry from the last step"] == meaning("carry from the last step")
    assert got["stacked along axis 0"] == meaning("stacked along axis n")
    assert got["split into 4 keys"] == meaning("split into n keys")
    assert got["scan axis 0, length 4"] == meaning("vmap axis / scan axis")
    assert got["outer value → inner value"] == meaning("outer value → inner value")


def test_a_vmap_explains_broadcast_and_its_axis_name():
    class Members(nn.Module):
        @nn.compact
        def __call__(self, x):
            vmap = nn.vmap(
                nn.Dense,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes=None,
                axis_size=3,
                axis_name="member",
            )
            return vmap(2)(x)

    page = _trace(lambda: Members().init(jax.random.key(0), jnp.ones((1, 4))))
    got = hovers(page)
    assert got["not split (broadcast)"] == meaning("not split (broadcast)")
    assert got["axis_name"] == meaning("axis_name")
    assert "axis_name 'member'" in visible_text(page)


def test_a_jit_explains_what_flows_through_and_what_is_written_back():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

    block = Block(nnx.Rngs(0))

    @nnx.jit
    def f(block, x):
        return block.linear(x)

    got = hovers(_trace(lambda: f(block, jnp.ones((1, 4)))))
    # "jit of /block: Param passed in whole" (then "state passed through · 2
    # variables flow through"): explained where it is first said
    assert got["passed in whole"] == meaning("flow through")
    assert got["writes the variables back"] == meaning("writes the variables back")


def test_a_core_lift_explains_lifted():
    """notebook 02's lift_transpose: the params group is lifted (its shape changes
    inside), so its lanes are drawn under ``params: lifted``."""

    def transpose(fn):
        def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
            target, rest = variable_groups
            target = jax.tree.map(lambda x: x.T if x.ndim == 2 else x, target)
            scope = scope_fn((target, rest), rng_groups)
            return fn(scope, *args), repack_fn(scope)

        return lift.pack(wrapper, ("params", True), (True,), (True,), name="t")

    v = {"params": {"kernel": jnp.ones((4, 2)), "bias": jnp.zeros(4)}}
    got = hovers(_trace(lambda: apply(transpose(core_nn.dense))(v, jnp.ones(2), 4)))
    assert got["lifted"] == meaning("lifted")
    assert got["passed in whole"] == meaning("flow through")


def test_variables_explain_rms_slices_and_sharding_on_the_chip():
    stacked = np.ones((4, 3, 3), np.float32) * np.arange(1, 5)[:, None, None]
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    spec = jax.sharding.PartitionSpec()
    whole = jax.device_put(jnp.zeros((8,)), jax.sharding.NamedSharding(mesh, spec))
    v = {"params": {"stack": {"kernel": stacked, "bias": np.zeros((4, 3))}, "b": whole}}
    page = VariablesView(v).html()
    got = hovers(page)
    assert got["rms"] == meaning("RMS") and got["slices"] == meaning("slices (axis 0)")
    chip = re.search(r"<span class=sh title='([^']*)'", page)
    assert chip is not None
    title = html.unescape(chip.group(1))
    assert meaning("sharded") in title and meaning("replicated") in title
    # each term once per output: the second stacked leaf's label is plain
    assert page.count(f"title='{html.escape(meaning('RMS'), quote=True)}'") == 1
    assert visible_text(page).count("rms of slices 0..3 (axis 0)") == 2


def test_a_diff_explains_its_columns_but_not_a_path_named_like_a_term():
    before = {"params": {"rel": {"w": np.ones(3)}, "b": np.zeros(2)}}
    after = {"params": {"rel": {"w": np.full(3, 1.5)}, "b": np.ones(2)}}
    page = DiffView(before, after).html()
    got = hovers(page)
    assert got["max|d|"] == meaning("max|d|")
    assert got["rel"] == meaning("rel")
    assert got["was all 0"] == meaning("was all 0")
    # the path /rel/w is shown as given, not glossed
    assert "params:/rel/w" in page


def test_a_live_picture_explains_its_scales_and_rms():
    with lens.display.live("fit", sink="none", layer_every=1) as live:
        for i in range(30):
            live.log(i, loss=10.0 ** (-i / 5))
            k = np.ones((4, 3, 3), np.float32) * (i + 1)
            live.layers(i, {"stack": {"kernel": k, "bias": np.ones((4, 3))}})
    got = hovers(FrameView(live.frame()).html())
    assert got["log scale"] == meaning("log scale")
    assert got["RMS"] == meaning("RMS")


def test_a_bound_module_explains_mutable():
    x = jnp.ones((1, 4))
    bound = nn.Dense(3).bind(nn.Dense(3).init(jax.random.key(0), x))
    assert hovers(ModuleView(bound).html())["mutable"] == meaning("mutable")


def test_each_term_is_explained_once_per_output_and_text_stays_escaped():
    g = Gloss()
    first = g("split along axis 0 <b>")
    assert "title=" in first and "&lt;b&gt;" in first
    assert g("split along axis 1") == "split along axis 1"  # said once already
    assert "title=" in gloss("split along axis 1")  # a new output says it again


def test_every_term_is_found_by_its_own_pattern_in_a_caption():
    examples = {
        "outer value → inner value": "outer value → inner value",
        "carried step to step": "x carried step to step",
        "carry from the last step": "outputs: carry from the last step",
        "split along axis n": "x split along axis 2",
        "not split (broadcast)": "x not split (broadcast)",
        "not split (keyword argument)": "train not split (keyword argument)",
        "nothing to split": "_ nothing to split (no arrays)",
        "stacked along axis n": "outputs stacked along axis 0",
        "axis_name": "axis_name 'batch'",
        "partition name": "partition name 'layers'",
        "vmap axis / scan axis": "vmap axis 0, size 3",
        "lifted": "params: lifted",
        "writes the variables back": "writes the variables back to /mlp",
        "flow through": "4 variables flow through",
        "split into n keys": "rng params: split into 3 keys",
        "shared (the same key inside)": "shared (the same key inside)",
        "RMS": "RMS at step 4",
        "slices (axis 0)": "rms of slices 0..5 (axis 0): 1..2",
        "stands out": "stands out: 3",
        "max|d|": "max|d| 0.1",
        "rel": "rel 0.3",
        "was all 0": "(was all 0)",
        "rng streams moved on": "rng streams moved on (not counted): x",
        "sharded": "sharded P('model',)",
        "replicated": "whole d0-7",
        "mesh": "on 2x4 mesh",
        "log scale": "loss log scale",
        "relative to its own median": "each row relative to its own median",
        "mutable": "mutable: none",
    }
    assert set(examples) == {t.name for t in TERMS}
    for term in TERMS:
        assert f"title='{html.escape(term.means, quote=True)}'" in gloss(
            examples[term.name]
        ), term.name


def test_the_docs_glossary_says_what_the_hover_text_says():
    text = DOCS.read_text()
    section = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip().replace("\\|", "|").strip("`") for c in re.split(r"(?<!\\)\|", line)]
        for line in section.splitlines()
        if line.startswith("| ")
    ]
    docs = {row[1]: row[2] for row in rows[2:]}  # after the head and its rule
    assert docs == {t.name: t.means for t in TERMS}


def _maker():
    path = REPO / "extension" / "test" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extension_ships_the_same_glossary():
    shipped = (REPO / "lens" / "display" / "glossary.json").read_text("utf-8")
    copy = (REPO / "extension" / "src" / "glossary.json").read_text("utf-8")
    assert json.loads(copy) == json.loads(shipped), (
        "cp lens/display/glossary.json extension/src/glossary.json"
    )
    terms = json.loads(shipped)["terms"]
    assert [(t["name"], t["pattern"], t["means"]) for t in terms] == list(TERMS)


def test_glossed_fixture_is_what_lens_cuts():
    maker = _maker()
    stored = json.loads(
        (REPO / "extension" / "test" / "fixtures" / "glossed.json").read_text("utf-8")
    )
    assert stored == maker.glossed(maker.stored()), (
        "glossed.json is stale: run .venv/bin/python extension/test/make_fixtures.py"
    )
    # every term is found in some caption the extension is checked on
    found = {name for c in stored for _, name in c["pieces"] if name}
    assert found == {t.name for t in TERMS}


def test_patterns_use_syntax_that_python_and_javascript_read_alike():
    """The extension builds one RegExp (flag u) from the same patterns, spelling
    out \\b and \\d as Python reads them; anything else must mean the same in both
    (its vitest compiles every pattern and checks glossed.json)."""
    python_only = re.compile(
        r"\(\?P|\(\?#|\(\?>|\(\?[aiLmsux-]+[:)]|\\[AZzGNU]|[*+?}]\+|\(\?\("
    )
    for term in TERMS:
        assert not python_only.search(term.pattern), term.name
        assert re.compile(term.pattern).groups == 0, f"{term.name}: use (?:...)"
