"""In a real browser: no lens output hides a number, at 600 px and beside the file browser.

Variables tables (and what embeds one: a bound module, an nnx object, the
explorer's static copy) are opened where a reader meets them: in JupyterLab at 600
px with the side panels closed and at 1200 px with the file browser open (a ~770 px
cell), light and dark, and as `jupyter nbconvert --to html` writes them, opened
from disk at 600 and 1200 px with every other request refused (a reader offline:
no widget script loads). tests/e2e/tables_browser.mjs opens every module and reads
each output's layout: no element may be wider than its box and hidden (clipped, or
scrolling without a visible scrollbar, which this Chromium never draws), and the
columns of a table's rows line up from one module and collection to the next.

Two sets of notebooks: one written here from the current code (each kind of
variables table: sharded with axis names, an nnx model, a scanned stack with
per-layer charts, a bound module, long names and a cut-off list, the explorer), and
the notebooks in notebooks/ as stored (their outputs are refreshed with `make
notebooks`). The explorer's stored output must show its table in the converted
HTML: a notebook stored with the widget's state makes nbconvert draw the widget
instead, which needs a script from the network. Uses the shared JupyterLab server
(the ``lab`` fixture of tests/e2e/conftest.py). With LENS_SCREENSHOTS=1:
extension/test/screenshots/tables-*.png.
"""

import json
import pathlib
import shutil

import nbformat
import pytest

from tests.e2e import browser
from tests.e2e.browser import ROOT

STORED = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
FRESH = "tables_fresh"


def _fresh_outputs() -> dict[str, dict]:
    """Each kind of variables table, as the current code draws it (MIME bundles)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import lens
    from lens import nn, nnx
    from lens.display import ModuleView, VariablesView

    class MLPBlock(nn.Module):  # notebook 04: axis names and shardings
        @nn.compact
        def __call__(self, x):
            lp = nn.with_logical_partitioning
            init = nn.initializers.lecun_normal()
            h = nn.Dense(
                32,
                kernel_init=lp(init, ("embed", "mlp")),
                bias_init=lp(nn.initializers.zeros, ("mlp",)),
            )(x)
            return nn.Dense(16, kernel_init=lp(init, ("mlp", "embed")))(nn.gelu(h))

    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))
    x = jnp.ones((8, 16))
    rules = [("batch", "data"), ("embed", None), ("mlp", "model")]
    abstract = jax.eval_shape(MLPBlock().init, jax.random.key(0), x)
    with jax.set_mesh(mesh), nn.logical_axis_rules(rules):
        shardings = nn.get_sharding(abstract, mesh)
        sharded = jax.jit(MLPBlock().init, out_shardings=shardings)(
            jax.random.key(0), x
        )

    class CNN(nnx.Module):  # notebook 06: four collections, ragged numbers before
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
            self.bn1 = nnx.BatchNorm(8, rngs=rngs)
            self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
            self.dropout = nnx.Dropout(0.1, rngs=rngs)
            self.head = nnx.Linear(2 * 2 * 16, 4, rngs=rngs)

    class Block(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.tanh(nn.Dense(8)(c)), None

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

    deep = Deep().init(jax.random.key(0), jnp.ones((2, 8)))

    class Classifier(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.BatchNorm(use_running_average=True, name="norm")(
                nn.Dense(16, name="encoder")(x)
            )
            return nn.Dense(3, name="head")(nn.relu(h))

    model = Classifier()
    variables = model.init(jax.random.key(0), jnp.ones((2, 4)))
    rng = np.random.default_rng(0)
    long_names = {
        "params": {
            "encoder": {
                "a_really_long_parameter_name_that_goes_on_and_on": rng.normal(
                    size=(4,)
                ).astype(np.float32),
                "kernel": rng.normal(size=(256, 1024)).astype(np.float32),
            },
            **{
                f"layer_{i}": {"kernel": np.ones((2, 2), np.float32)}
                for i in range(205)
            },
        }
    }
    return {
        "sharded": VariablesView(sharded)._repr_mimebundle_(),
        "nnx": CNN(nnx.Rngs(0))._repr_mimebundle_(),
        # Python values (the shapes of flax's guides' idiom): their text, no size
        "shapes": jax.tree.map(
            jnp.shape, nnx.state(CNN(nnx.Rngs(0)))
        )._repr_mimebundle_(),
        "stacked": VariablesView(deep)._repr_mimebundle_(),
        "module": ModuleView(model.bind(variables))._repr_mimebundle_(),
        "long": VariablesView(long_names)._repr_mimebundle_(),
        "explorer": lens.explore(model, variables)._repr_mimebundle_(),
    }


def _write_fresh(where: pathlib.Path) -> list[str]:
    """The fresh outputs as a notebook's stored outputs (no widget state: what a
    notebook saved by JupyterLab holds, and what nbconvert gets from it)."""
    outputs = _fresh_outputs()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for kind, bundle in outputs.items():
        cell = nbformat.v4.new_code_cell(f"# {kind}")
        cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
        nb.cells.append(cell)
    nbformat.write(nb, where / f"{FRESH}.ipynb")
    return list(outputs)


@pytest.fixture(scope="module")
def report(lab, tmp_path_factory):
    """The browser's report: ``lab`` per notebook, width and theme, ``html`` per
    converted notebook and width; each a list of its lens outputs' measures."""
    from nbconvert import HTMLExporter

    browser.require_tools()
    url, root = lab
    where = root / "tables"
    where.mkdir()
    for name in STORED:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", where / f"{name}.ipynb")
    kinds = _write_fresh(where)
    folder = tmp_path_factory.mktemp("tables")
    converted = []
    for name in [FRESH, *STORED]:
        body, _ = HTMLExporter().from_filename(str(where / f"{name}.ipynb"))
        (folder / f"{name}.html").write_text(body, encoding="utf-8")
        converted.append(str(folder / f"{name}.html"))
    got = browser.start(
        pathlib.Path(__file__).with_name("tables_browser.mjs"),
        folder,
        LAB_URL=url,
        NOTEBOOKS=json.dumps([f"tables/{n}.ipynb" for n in [FRESH, *STORED]]),
        CONVERTED=json.dumps(converted),
    ).report()
    shots = browser.screenshots()
    if shots:
        (shots / "tables-report.json").write_text(json.dumps(got, indent=1))
    got["kinds"] = kinds
    return got


def _views(report: dict, name: str) -> dict[str, list[dict]]:
    """Every measured view of notebook ``name``: JupyterLab's and nbconvert's."""
    views = {
        f"lab {k}": v["outputs"]
        for k, v in report["lab"].items()
        if k.startswith(name + "@")
    }
    views.update(
        {
            f"html {k}": v["outputs"]
            for k, v in report["html"].items()
            if k.startswith(name + "@")
        }
    )
    assert len(views) == 6, sorted(views)  # 2 widths x 2 themes, 2 widths
    return views


def test_the_cells_are_600_px_alone_and_768_beside_the_file_browser(report):
    for key, got in report["lab"].items():
        width = int(key.split("@")[1].split("-")[0])
        assert (450 < got["cell"] < 520) if width == 600 else (700 < got["cell"] < 800)


def test_fresh_variables_tables_hide_nothing_and_line_up(report):
    for where, outputs in _views(report, FRESH).items():
        assert len(outputs) == len(report["kinds"]), (where, len(outputs))
        for kind, out in zip(report["kinds"], outputs):
            assert out["clipped"] == [] and out["scrolls"] == [], (where, kind, out)
            assert out["rows"] >= 2, (where, kind, out["head"])
            # each column starts at one x in every row, across modules and collections
            ragged = {k: v for k, v in out["columns"].items() if len(v) > 1}
            assert len(out["columns"]) >= 3 and not ragged, (where, kind, ragged)


def test_the_explorer_shows_its_table_in_nbconvert_offline(report):
    for width in (600, 1200):
        (got,) = report["html"][f"{FRESH}@{width}"]["explorer"]
        assert got["text"].startswith("lens.explore of Classifier: 2 collections")
        assert "run the cell in a live kernel to browse" in got["text"]
        assert got["rows"] == 8, got  # every variable of the model, one row each


def test_stored_notebooks_hide_no_number(report):
    """notebooks/ as stored: refresh them (`make notebooks`) after a display change."""
    clipped = {
        f"{where} output {out['i']} ({out['head'][:40]!r})": out["clipped"]
        for name in STORED
        for where, outputs in _views(report, name).items()
        for out in outputs
        if out["clipped"]
    }
    assert not clipped, clipped


def test_the_stored_explorer_shows_its_table_in_nbconvert_offline(report):
    """notebooks/01_tour.ipynb's lens.explore, converted: the table, not a widget
    that needs a script from the network (store the notebook without the widget's
    state: nbconvert draws the widget whenever its state is saved)."""
    for width in (600, 1200):
        shown = report["html"][f"01_tour@{width}"]["explorer"]
        assert shown and shown[0]["rows"] >= 2, shown
