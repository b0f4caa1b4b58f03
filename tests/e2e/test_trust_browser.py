"""In a real browser: every lens output looks the same in a trusted and an untrusted notebook.

A notebook with one cell per kind of lens output (the pack pictures of a Linen vmap,
a lens.nnx vmap constructor and nnx.jit(nnx.scan(...)), collections, a bound
module, an nnx State and Variable, a boxed variable, a diff, per-layer charts, the
explorer's details and its widget, nnx.tabulate) is run once by a kernel
(nbclient), then saved twice: one copy signed with the notary of the JupyterLab
server under test (a fresh Jupyter data folder, as `jupyter trust` does), one copy
not (as a fresh clone or a received notebook opens). JupyterLab renders the first
as trusted (text/html as it is) and the second through its sanitizer.
tests/e2e/trust_browser.mjs opens both in Debian's Chromium at 600 and 1200 px,
light and dark, and reads every output's computed layout: it must be the same in
both, at WCAG AA contrast, with no clipped text and no one-or-two-letter lines. The
explorer's widget is the exception by design: JupyterLab runs widgets only in
trusted notebooks, so the untrusted copy shows its variables table instead. The
script runs beside the extension and live tests' scripts (tests/e2e/conftest.py).
With LENS_SCREENSHOTS=1: extension/test/screenshots/trust-*.png.
"""

import json
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.sign import NotebookNotary

from tests.e2e import browser

SETUP = """
import jax, jax.numpy as jnp, numpy as np, lens
from IPython.display import HTML
from lens import nn, nnx

class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.tanh(nn.Dense(8)(c)), None

class Deep(nn.Module):
    @nn.compact
    def __call__(self, x):
        scan = nn.scan(Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=6)
        return scan(name="blocks")(x, None)[0]

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1, name="out")(nn.relu(nn.Dense(4, name="hidden")(x)))

class Ensemble(nn.Module):
    @nn.compact
    def __call__(self, x):
        members = nn.vmap(MLP, variable_axes={"params": 0}, split_rngs={"params": True},
                          in_axes=None, axis_size=3, axis_name="member")
        return members(name="mlp")(x)

x = jnp.ones((2, 8))
variables = Deep().init(jax.random.key(0), x)
blown = jax.tree.map(lambda a: a, variables)
k = blown["params"]["blocks"]["Dense_0"]["kernel"]
blown["params"]["blocks"]["Dense_0"]["kernel"] = k.at[3].multiply(50.0)

@nnx.split_rngs(splits=4)
@nnx.vmap(in_axes=0, out_axes=0)
def make_ensemble(rngs):
    return nnx.Linear(8, 4, rngs=rngs)

class Layer(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.LayerNorm(8, rngs=rngs)

    def __call__(self, x):
        return x + self.norm(self.linear(x))

@nnx.split_rngs(splits=6)
@nnx.vmap(in_axes=0, out_axes=0)
def make_stack(rngs):
    return Layer(rngs)

@nnx.jit
@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
def forward(x, layer):
    return layer(x)

stack = make_stack(nnx.Rngs(2))
"""

# (kind, cell source): the cell's first output is that kind's picture.
CELLS = [
    ("pack", "lens.show_lifting(Ensemble(), x)"),
    (
        "nnx_pack",
        "with lens.trace() as trace:\n    ensemble = make_ensemble(nnx.Rngs(0))\ntrace",
    ),
    (
        "nnx_jit_scan",
        "with lens.trace() as trace:\n    forward(x, stack)\ntrace",
    ),
    ("collections", "lens.display.VariablesView(variables)"),
    ("module", "nn.Dense(3).bind(nn.Dense(3).init(jax.random.key(1), x))"),
    ("state", "nnx.state(ensemble)"),
    ("variable", "lens.show(nnx.Linear(8, 4, rngs=nnx.Rngs(0)).kernel)"),
    ("box", "nn.Partitioned(np.ones((4, 8), np.float32), (None, 'data'))"),
    ("diff", "lens.diff(variables, blown)"),
    ("stacked", "lens.display.VariablesView(blown)"),
    (
        "explorer",
        "from lens.display._explore import leaf_details_html\n"
        "ex = lens.display.Explorer(Deep(), blown)\n"
        "HTML(leaf_details_html(ex.leaf('params:/blocks/Dense_0/kernel')))",
    ),
    ("explorer_widget", "lens.explore(Deep(), blown)"),
    (
        "tabulate",
        "print(nnx.tabulate(nnx.Sequential(nnx.Linear(8, 4, rngs=nnx.Rngs(0)), nnx.relu), x))",
    ),
    # the instruments (issues 41 and 42)
    (
        "recompiles",
        "f = jax.jit(lambda v: v * 2)\nwith lens.recompiles() as log:\n"
        "    f(jnp.ones(3))\n    f(jnp.ones(4))\nlog",
    ),
    ("compile_time", "lens.compile_time(jax.jit(lambda v: jnp.sin(v) * 2), x)"),
    ("memory", "lens.memory(jax.jit(lambda v: (v @ v.T).sum()), x)"),
    (
        "sharding",
        "lens.sharding({'w': jax.device_put(np.ones((8, 8), np.float32), "
        "jax.sharding.NamedSharding(jax.make_mesh((8,), ('d',)), "
        "jax.sharding.PartitionSpec('d')))})",
    ),
]
KINDS = [k for k, _ in CELLS]
WIDGETS = ("explorer_widget",)
"""Kinds JupyterLab draws as a widget when trusted (restored from the saved widget
state) and as their text/html when not: they cannot look the same."""


def _notebook() -> nbformat.NotebookNode:
    """The notebook, run by a kernel: what a user saves after running it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(SETUP.strip())] + [
        nbformat.v4.new_code_cell(f"# {kind}\n{src}") for kind, src in CELLS
    ]
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    for kind, cell in zip(KINDS, nb.cells[1:]):
        assert cell.outputs and not any(
            o.output_type == "error" for o in cell.outputs
        ), (kind, cell.outputs)
    return nb


def start_browser(lab, folder: pathlib.Path) -> browser.BrowserRun:
    """Runs the notebook, saves the two copies in the shared JupyterLab's folder and
    starts tests/e2e/trust_browser.mjs on them (``browser_runs`` in
    tests/e2e/conftest.py)."""
    url, root = lab
    data = root / ".data"  # the server's notary: its secret and signature db
    nb = _notebook()
    notary = NotebookNotary(data_dir=str(data))
    # A signature is stored per content: the copies differ in one metadata field
    # (nothing JupyterLab draws), so only the signed one is trusted.
    for copy in ("untrusted", "trusted"):
        nb.metadata["lens_copy"] = copy
        if copy == "trusted":
            notary.sign(nb)
        nbformat.write(nb, root / f"{copy}.ipynb")
    assert notary.check_signature(nbformat.read(root / "trusted.ipynb", 4))
    assert not notary.check_signature(nbformat.read(root / "untrusted.ipynb", 4))
    return browser.start(
        pathlib.Path(__file__).with_name("trust_browser.mjs"),
        folder,
        LAB_URL=url,
        KINDS=json.dumps(KINDS),
        WIDGETS=json.dumps(WIDGETS),
    )


TABLES = ("collections", "module", "state", "stacked", "tabulate")
"""Kinds whose wide tables may scroll sideways at 600 px (the rest wrap)."""


@pytest.fixture(scope="module")
def report(browser_runs):
    """The browser's report: per width, theme and copy, each kind's measures."""
    report = browser_runs["test_trust_browser"].report()
    shots = browser.screenshots()
    if shots:
        (shots / "trust-report.json").write_text(json.dumps(report, indent=1))
    return report


VARIANTS = [(w, t) for t in ("light", "dark") for w in (600, 1200)]


def test_each_output_looks_the_same_trusted_and_untrusted(report):
    shots = browser.screenshots()
    for width, theme in VARIANTS:
        trusted = report[f"{width}-{theme}-trusted"]
        untrusted = report[f"{width}-{theme}-untrusted"]
        # JupyterLab took the signed copy as trusted, the other one not
        assert trusted["trusted"] and all(trusted["trusted"])
        assert untrusted["trusted"] and not any(untrusted["trusted"])
        assert not trusted["docScroll"] and not untrusted["docScroll"]
        for kind in WIDGETS:
            t, u = trusted[kind], untrusted[kind]
            assert t["widget"] and not u["widget"], (kind, width, theme)
            assert "run the cell in a live kernel to browse" in u["text"], u["text"]
            assert u["broken"] == {"clipped": [], "narrow": []}, u["broken"]
        for kind in (k for k in KINDS if k not in WIDGETS):
            t, u = trusted[kind], untrusted[kind]
            where = (kind, width, theme)
            assert len(t["layout"]) >= 2, (where, t["text"])  # lens's own HTML
            moved = [
                f"{i}: {a} != {b}"
                for i, (a, b) in enumerate(zip(t["layout"], u["layout"]))
                if a != b
            ]
            assert len(t["layout"]) == len(u["layout"]) and not moved, (
                where,
                moved[:5],
            )
            # the pack pictures are drawn by the extension in both copies (its
            # renderer is safe), everything else is the text/html lens wrote
            drawn = kind in ("pack", "nnx_pack", "nnx_jit_scan")
            assert t["extension"] == drawn and u["extension"] == drawn, where
            for got in (t, u):
                assert got["broken"] == {"clipped": [], "narrow": []}, (
                    where,
                    got["broken"],
                )
                if kind not in TABLES:
                    assert not got["scrolls"], (where, got["text"])
            if shots:
                assert (shots / f"trust-{kind}-{width}-{theme}-untrusted.png").exists()


def test_each_output_reads_at_aa_contrast_trusted_and_untrusted(report):
    for width, theme in VARIANTS:
        for copy in ("trusted", "untrusted"):
            for kind in KINDS:
                if kind in WIDGETS and copy == "trusted":
                    continue  # ipywidgets' own look
                got = report[f"{width}-{theme}-{copy}"][kind]["contrast"]
                where = (kind, width, theme, copy)
                assert got["checked"] > 0 and got["low"] == [], (where, got)
