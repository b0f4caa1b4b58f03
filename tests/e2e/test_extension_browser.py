"""In a real browser: JupyterLab draws pack traces with the lens extension.

Starts JupyterLab (with --allow-root, token off, on a free local port) on a copy of
notebooks/02_lifting.ipynb, a small extra notebook and a notebook holding the golden
payloads of extension/test/fixtures as stored outputs, then drives Debian's Chromium
with Playwright (extension/test/e2e.mjs): each golden trace is drawn at 600 and 1200
px (and in the dark theme), every variable's full path and both shapes must be there
and no label may be wider than its box; then at 400, 600 and 1600 px cells and a
1200 px window with the file browser open, nothing clipped, no word broken that fits
a line, every path on one line, and a chip's details below its row of chips. The
script-free HTML of the same traces is opened alone, as GitHub or nbviewer would show
it (nbconvert's HTML of whole notebooks: test_nbconvert_browser.py). The script runs beside the live and trust
tests' scripts (tests/e2e/conftest.py). Screenshots: extension/test/screenshots/ with
LENS_SCREENSHOTS=1 (tests/e2e/browser.py). Needs the extension built and linked
(`make test` does it) and /usr/bin/chromium (`make test` installs it).
"""

import functools
import json
import pathlib
import shutil

import nbformat

from lens.display import PackTraceView
from tests.e2e import browser
from tests.e2e.browser import ROOT
from tests.e2e.lab_server import serve_lab

EXTRA = [
    "from IPython.display import display\n"
    "display({'application/vnd.lens.pack+json': {'schema': 'not-lens', 'version': 1, 'packs': []},\n"
    "         'text/plain': 'broken'}, raw=True)",
    "import jax, jax.numpy as jnp, lens\nfrom lens import nn\n"
    "class Block(nn.Module):\n"
    "    @nn.compact\n"
    "    def __call__(self, c, _):\n"
    "        return nn.relu(nn.Dense(32)(c)), None\n"
    "class Deep(nn.Module):\n"
    "    @nn.compact\n"
    "    def __call__(self, x):\n"
    "        return nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=64)()(x, None)[0]\n"
    "lens.show_lifting(Deep(), jnp.ones((1, 32)))",
]


FIXTURES = ROOT / "extension" / "test" / "fixtures"
GOLDEN = [
    "vmap_scan.json",
    "vmap_apply.json",
    "scan_carry.json",
    "nested.json",
    "multi_scope.json",
    "two_transforms.json",
    "nnx_ensemble.json",
    "nnx_jit_scan.json",
    "long_arguments.json",
]

CELLS = ("400", "600", "1600", "filebrowser-1200")
"""The cell widths e2e.mjs checks paths and chips at: three cell widths, and a 1200
px window with the file browser open (issue 43's laptop layout)."""


def _fixture(name: str) -> dict:
    if name in DERIVED:
        return DERIVED[name]()
    return json.loads((FIXTURES / name).read_text())


def _long_arguments() -> dict:
    """nnx_ensemble.json with argument chips longer than a narrow cell's line (issue
    43 saw one cut at 600 px: 'every argument split along a')."""
    doc = _fixture("nnx_ensemble.json")
    axes = doc["packs"][0]["axes"]
    axes["in"] = [
        {"arg": "every argument", "axis": "split along axis 0"},
        {
            "arg": "member_parameters_and_batch_statistics",
            "axis": "split along axis 0, one slice per member of the ensemble",
        },
    ]
    axes["text"] = (
        "inputs: "
        + ", ".join(f"{a['arg']} {a['axis']}" for a in axes["in"])
        + " · outputs stacked along axis 0 · axis_name 'ensemble'"
        + " · partition name 'members'"
    )
    return doc


DERIVED = {"long_arguments.json": _long_arguments}
"""Golden payloads made from a fixture here, for what no fixture shows."""


def start_lab(tmp_path_factory):
    """JupyterLab over a temporary folder of test notebooks, with its Jupyter data
    folder in ``folder/.data``: yields (url, folder). The ``lab`` fixture of
    tests/e2e/conftest.py, shared with test_live_browser.py and
    test_trust_browser.py."""
    browser.require_tools()
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / "02_lifting.ipynb", root / "02_lifting.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src) for src in EXTRA]
    nbformat.write(nb, root / "e2e_extra.ipynb")
    golden = nbformat.v4.new_notebook(metadata=nb.metadata)
    for name in GOLDEN:
        cell = nbformat.v4.new_code_cell(f"# {name}")
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data=PackTraceView(_fixture(name))._repr_mimebundle_()
            )
        ]
        golden.cells.append(cell)
    nbformat.write(golden, root / "golden.ipynb")
    # Each kind of lens text/html output, stored: the notebook opens untrusted.
    samples = nbformat.v4.new_notebook(metadata=nb.metadata)
    for name, html in _lens_html_samples().items():
        cell = nbformat.v4.new_code_cell(f"# {name}")
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data={"text/html": html, "text/plain": name}
            )
        ]
        samples.cells.append(cell)
    nbformat.write(samples, root / "samples.ipynb")
    # The server's own Jupyter data folder: its notary (secret and signature
    # database), with which test_trust_browser.py signs a notebook as trusted.
    (root / ".data").mkdir()
    for url in serve_lab(root, JUPYTER_DATA_DIR=str(root / ".data")):
        yield url, root


def start_browser(lab, folder: pathlib.Path) -> browser.BrowserRun:
    """Starts extension/test/e2e.mjs on the shared JupyterLab (``browser_runs`` in
    tests/e2e/conftest.py calls it)."""
    url, _ = lab
    fallback = folder / "fallback.html"
    fallback.write_text(
        "<!doctype html><meta charset=utf-8><body style='margin:8px'>"
        + "".join(PackTraceView(_fixture(n)).html() for n in GOLDEN)
    )
    samples = folder / "lens_html.json"
    samples.write_text(json.dumps(_lens_html_samples()))
    return browser.start(
        ROOT / "extension" / "test" / "e2e.mjs",
        folder,
        cwd=ROOT / "extension",
        LAB_URL=url,
        GOLDEN=json.dumps(GOLDEN),
        FALLBACK_HTML=str(fallback),
        LENS_HTML=str(samples),
        SAMPLES=json.dumps(list(_lens_html_samples())),
    )


def test_extension_draws_pack_traces_in_jupyterlab(browser_runs):
    report = browser_runs["test_extension_browser"].report()
    shots = browser.screenshots()
    print(
        "browser report:",
        json.dumps({k: v for k, v in report.items() if k != "golden"}),
    )

    # notebooks/02_lifting.ipynb, re-run live.
    assert report["renderers"] >= 3
    assert report["summary"].startswith("vmap over 3 slices of /mlp: params on axis 0")
    assert report["groupTitles"][0].startswith("params: axis 0 · ")
    # hidden/kernel, hidden/bias, out/kernel and out/bias
    assert report["paramsLanes"] == 4
    assert any(d.startswith("/mlp/") for d in report["details"]), report["details"]
    panel = report["panel"]
    assert panel["isPanel"], "the details panel is not right under the clicked lane"
    assert 0 <= panel["gap"] <= 8, panel
    assert panel["height"] < 200 and panel["rows"] >= 4, panel
    assert panel["narrowLines"] == [], panel

    # Untrusted notebooks: JupyterLab's sanitizer keeps every inline style of every
    # lens output (no <style>, no SVG, no CSS variables, nothing it drops).
    for name, got in report["sanitized"].items():
        assert got["kept"] == got["elements"] and got["lost"] == [], (name, got)
        # ... and lays out exactly as the trusted output does
        assert got["measured"] == got["elements"] and got["moved"] == [], (name, got)
    assert set(report["sanitized"]) == set(_lens_html_samples())
    assert report["htmlFallbackShown"] == 0  # the extension wins over text/html
    assert "unknown schema" in report["errorText"]
    assert report["scanLanes"] == 2  # a 64-step scan: kernel and bias, once each
    assert report["scanRenderMs"] < 500, report["scanRenderMs"]

    # Golden payloads: every lane in full (a pass-through box's as chips), nothing
    # wider than its box, every text at WCAG AA contrast.
    for name in GOLDEN:
        doc = _fixture(name)
        want, chips = [], []
        stack = list(doc["packs"])
        while stack:
            rec = stack.pop(0)
            stack[:0] = rec["children"]
            if rec.get("passes"):
                chips += rec["passes"]["keys"]
                continue
            for lane in rec["lanes"]:
                outer = lane["outer"] or lane["out"]
                want.append((lane["path"], _shape(outer), _shape(lane["inner"])))
        for variant in ("600", "1200", "600-dark", "1200-dark"):
            got = report["golden"][f"{name}@{variant}"]
            drawn = sorted((x["path"], x["outer"], x["inner"]) for x in got["lanes"])
            assert drawn == sorted(want), (
                name,
                variant,
            )
            assert sorted(got["chips"]) == sorted(chips), (name, variant)
            assert all(x["visible"] for x in got["lanes"]), (name, variant)
            assert got["overflow"] == [], (name, variant, got["overflow"])
            contrast = got["contrast"]
            assert contrast["checked"] > 10 and contrast["low"] == [], (
                name,
                variant,
                contrast["low"],
            )
        assert report["golden"][f"{name}@600"]["width"] < 600
        assert report["golden"][f"{name}@1200"]["width"] > 900
        if shots:
            assert (shots / f"{name[:-5]}-600.png").stat().st_size > 5_000

    # Issue 43, at the cell widths readers have (400, 600, 1600 px; and a 1200 px
    # window with the file browser open, about 768 px): nothing clipped without a
    # scrollbar or drawn outside the renderer, no word broken across lines that
    # would fit on one, every path on one line (an ellipsis in the middle) with
    # its name, the last segment, whole.
    for name in GOLDEN:
        for cell in CELLS:
            got = report["cells"][f"{name}@{cell}"]
            where = (name, cell)
            assert got["names"] > 0, where
            for fault in (
                "clipped",
                "spills",
                "brokenWords",
                "multiLinePaths",
                "cutNames",
            ):
                assert got[fault] == [], (where, fault, got[fault])
            if cell.isdigit():
                assert abs(got["width"] - int(cell)) <= 24, (where, got["width"])
            else:
                assert 650 <= got["width"] <= 900, (where, got["width"])
    # A chip's details open below the whole row of chips and across it; the chips
    # keep their height (the panel used to open inside the row).
    chips = {k for k in report["chipClicks"]}
    assert chips == {
        f"{name}@{cell}"
        for name in ("nested.json", "nnx_jit_scan.json")
        for cell in CELLS
    }, chips
    for key, got in report["chipClicks"].items():
        assert got["isPanel"] and not got["inRow"], (key, got)
        row_left, _, row_right, row_bottom = got["row"]
        left, top, right, _ = got["panel"]
        assert row_bottom - 1 <= top <= row_bottom + 8, (key, got)
        assert row_left - 1 <= left and right <= row_right + 1, (key, got)
        across = min(row_right - row_left - got["rowPadding"] - 4, got["maxWidth"])
        assert right - left >= across - 2, (key, got)
        assert got["after"] == got["before"], (key, got)
        assert got["closed"] == 0, (key, got)

    # Every lens text/html output in an untrusted notebook, light and dark, 600 and
    # 1200 px: AA contrast, wide tables scroll inside their output (the page never
    # does), the diff's per-layer chart drawn once.
    samples = report["samples"]
    for theme in ("light", "dark"):
        for width in (600, 1200):
            page = samples[f"page@{width}-{theme}"]
            assert not page["docScroll"] and not any(page["trusted"]), page
            for name in _lens_html_samples():
                got = samples[f"{name}@{width}-{theme}"]
                where = (name, width, theme)
                assert got["contrast"]["checked"] > 0, where
                assert got["contrast"]["low"] == [], (where, got["contrast"])
                assert got["overflowX"] == "auto" and not got["wider"], (where, got)
                if shots:
                    assert (
                        shots / f"{name}-{width}-{theme}.png"
                    ).stat().st_size > 2_000
            assert samples[f"diff@{width}-{theme}"]["sparks"] == 1
    # a variables table wraps its rows to fit a 600 px cell: nothing to scroll
    # (tests/e2e/test_tables_browser.py checks that no number is hidden)
    assert not samples["variables@600-light"]["scrolls"]

    # The script-free HTML: no scripts, no horizontal scroll, every path present.
    for width in ("600", "1200"):
        fb = report["fallback"][width]
        assert fb["scripts"] == 0 and not fb["overflow"], (
            f"HTML fallback scrolls at {width}px"
        )
        for name in GOLDEN:
            for rec in _fixture(name)["packs"]:
                assert rec["summary"] in fb["text"]


def _shape(spec) -> str:
    """The shape text the extension draws (layout.ts shapeText)."""
    if spec is None:
        return "-"
    dtype = spec["dtype"]
    for long, short in (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i")):
        if dtype.startswith(long):
            dtype = short + dtype[len(long) :]
            break
    s = f"{dtype}[{','.join(map(str, spec['shape']))}]"
    if spec.get("names"):
        s += (
            " ("
            + ",".join("None" if n is None else f"'{n}'" for n in spec["names"])
            + ")"
        )
    return s


@functools.cache
def _lens_html_samples() -> dict[str, str]:
    """One text/html output of each lens view kind (what a saved notebook holds)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import lens
    from lens import nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.tanh(nn.Dense(4)(c)), None

    class Deep(nn.Module):
        @nn.compact
        def __call__(self, x):
            scan = nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=6,
            )
            return scan(name="blocks")(x, None)[0]

    x = jnp.ones((2, 4))
    variables = Deep().init(jax.random.key(0), x)
    blown = jax.tree.map(lambda a: a, variables)
    k = blown["params"]["blocks"]["Dense_0"]["kernel"]
    blown["params"]["blocks"]["Dense_0"]["kernel"] = k.at[3].multiply(50.0)
    bound = nn.Dense(3).bind(nn.Dense(3).init(jax.random.key(1), x))
    box = nn.Partitioned(np.ones((4, 8), np.float32), (None, "data"))
    return {
        "variables": lens.display.VariablesView(variables).html(),
        # small arrays show their values, Python values their text
        "values": lens.display.VariablesView(
            {
                "params": {"w": np.ones((4, 4), np.float32), "b": np.arange(3.0)},
                "stats": {"step": np.int32(3), "shapes": ((2, 3), (3,))},
            }
        ).html(),
        "diff": lens.diff(variables, blown).html(),
        "module": lens.display.ModuleView(bound).html(),
        "box": lens.display.BoxView(box).html(),
        "pack": PackTraceView(_fixture("scan_carry.json")).html(),
        "nnx_pack": PackTraceView(_fixture("nnx_jit_scan.json")).html(),
    }
