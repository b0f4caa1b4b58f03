"""In a real browser: a live training view updates in place in JupyterLab.

Shares the extension test's JupyterLab server (the ``lab`` fixture of
tests/e2e/conftest.py: a server on a free local port over a temporary folder) and
adds a notebook with two loops: a scanned stack trained with a TrainState (curves,
per-layer heatmaps, 80 steps) and a function whose first call takes 6 s (the
compile indicator). tests/e2e/live_browser.mjs
drives Debian's Chromium with Playwright: while the loops run it samples each cell's
outputs every 50 ms (frames must change, the cell must keep one output), then
measures the final pictures at 600 and 1200 px, light and dark (nothing wider than
its box without a scrollbar) and reads the charts back (tick labels inside the plot
and consistent with the logged range, legend names as logged, an eval series drawn
as points joined by straight lines, a colour scale on each heatmap), and runs the
final HTML through JupyterLab's sanitizer (an untrusted, reopened notebook keeps
every inline style and the curves' image). The script runs beside the extension
and trust tests' scripts (tests/e2e/conftest.py). With LENS_SCREENSHOTS=1,
screenshots go to extension/test/screenshots/live-*.png (the good ones are copied to
docs/images/).
"""

import json
import math
import pathlib
import re

import nbformat

from tests.e2e import browser

LOOP = """
import time, jax, jax.numpy as jnp, optax, lens
from lens import nn
from lens.training import train_state

class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.tanh(nn.Dense(16)(c)), None

class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        scan = nn.scan(Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=8)
        return scan(name="blocks")(x, None)[0]

model = Stack()
x = jax.random.normal(jax.random.key(1), (64, 16))
y = jnp.sin(2 * x)
state = train_state.TrainState.create(
    apply_fn=model.apply, params=model.init(jax.random.key(0), x)["params"], tx=optax.adam(3e-2))

@jax.jit
def train_step(state, x, y):
    def loss_fn(p):
        return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss, grads

with lens.display.live("scan stack", total=80, layer_every=4) as live:
    step_fn = live.watch(train_step, "train_step")
    for step in range(80):
        state, loss, grads = step_fn(state, x, y)
        live.log(step, loss=loss, lr=3e-2 * (1 - step / 80))
        if step % 10 == 9:
            live.log(step, split="eval", loss=1.2 * loss)
        live.layers(step, state.params, grads)
        time.sleep(0.1)
"""

COMPILE = """
calls = []
def slow_step(v):
    if not calls:
        time.sleep(6.0)  # a stand-in for a long first compile
    calls.append(v)
    return v

with lens.display.live("compile", total=3) as live2:
    f = live2.watch(slow_step, "slow_step")
    for i in range(3):
        live2.log(i, loss=f(1.0 / (i + 1)))
"""


def _final_html() -> str:
    """A final picture with every part (curves, eval, a stack's heatmaps, NaN)."""
    import numpy as np

    import lens

    with lens.display.live("sanitizer", total=8, sink="none", layer_every=1) as live:
        for i in range(8):
            live.log(i, loss=float("nan") if i == 5 else 1.0 / (i + 1))
            live.log(i, split="eval", loss=2.0 / (i + 1))
            k = np.ones((4, 3, 3), np.float32) * (i + 1)
            live.layers(i, {"stack": {"kernel": k, "bias": np.ones((4, 3))}})
    return lens.display._live.FrameView(live.frame()).html()


def start_browser(lab, folder: pathlib.Path) -> browser.BrowserRun:
    """Saves live.ipynb in the shared JupyterLab's folder and starts
    tests/e2e/live_browser.mjs on it (``browser_runs`` in tests/e2e/conftest.py)."""
    url, root = lab
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src.strip()) for src in (LOOP, COMPILE)]
    nbformat.write(nb, root / "live.ipynb")
    final = folder / "final.json"
    final.write_text(json.dumps(_final_html()))
    return browser.start(
        pathlib.Path(__file__).with_name("live_browser.mjs"),
        folder,
        LAB_URL=url,
        FINAL_HTML=str(final),
    )


def test_live_view_updates_in_place_in_jupyterlab(lab, browser_runs):
    _, root = lab
    report = browser_runs["test_live_browser"].report()
    print(
        "browser report:", json.dumps({k: v for k, v in report.items() if k != "final"})
    )

    # Updates appear: many frames, each replacing the last in the one output.
    assert len(report["stepsSeen"]) >= 3, report["stepsSeen"]
    assert report["whileRunning"] and set(report["whileRunning"]) == {1}
    # After the loop: the emptied live output and the final picture, nothing more.
    assert report["maxOutputs"] == {"0": 2, "1": 2}, report["maxOutputs"]
    assert report["compilingSeen"], "no compile indicator while slow_step ran"

    # What the charts say, read back from the page: ticks, legend, points, scales.
    saved = nbformat.read(root / "live.ipynb", 4)
    summary = saved.cells[0].outputs[1].data["text/plain"]
    for key in ("600", "600-dark", "1200", "1200-dark"):
        loop, compile_ = report["final"][key]
        assert loop["overflow"] == [] and compile_["overflow"] == [], (
            key,
            loop["overflow"],
            compile_["overflow"],
        )
        assert len(loop["charts"]) == 2 and len(loop["heatmaps"]) == 2, (key, loop)
        assert "scan stack · 80/80 steps" in loop["text"] and "done" in loop["text"]
        assert "blocks/Dense_0: params RMS" in loop["text"]
        assert re.search(r"compiled slow_step in [67]\.\d s", compile_["text"])
        loss, lr = loop["charts"]
        assert [loss["title"], lr["title"]] == ["loss", "lr"]
        assert loss["legend"] == ["loss", "loss (eval)"] and lr["legend"] == ["lr"]
        for chart in (loss, lr):
            _check_axes(chart, summary, key)
        # eval is logged every 10 steps: a point each, joined by straight lines
        assert loss["points"] == 8 and lr["points"] == 0, key
        assert loss["midpoints"] == [True] * 7, (key, loss["midpoints"])
        for heat in loop["heatmaps"]:
            assert heat["rows"] == [str(i) for i in range(8)], (key, heat)
            assert float(heat["lo"]) < float(heat["hi"]), (key, heat)
            assert heat["bar"] and heat["bar"]["right"] - heat["bar"]["left"] >= 24
            assert heat["ticks"] and all(t.isdigit() for t in heat["ticks"])
    assert report["final"]["600"][0]["width"] < 600
    assert report["final"]["1200"][0]["width"] > 900

    san = report["sanitized"]
    assert san["kept"] == san["elements"] and san["lost"] == [], san
    assert san["images"] == 1  # the curves' image (a data URI) is kept too

    # The saved notebook holds the final picture (what nbval, GitHub and nbconvert see).
    outputs = saved.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data", "display_data"]
    assert outputs[0].data == {"text/plain": ""}
    assert "lens-live-chart" in outputs[1].data["text/html"]
    assert outputs[1].data["text/plain"].startswith("scan stack · 80/80 steps")


def _check_axes(chart: dict, summary: str, key: str) -> None:
    """Tick labels inside the plot, in order, not overlapping, and an axis that
    holds the data: its ends (read from two ticks' places) bracket the logged
    minimum and maximum (from the text form's ``last .. · min .. · max ..``)."""
    plot, ys, xs = chart["plot"], chart["y"], chart["x"]
    assert len(ys) >= 3 and len(xs) >= 3, (key, chart)
    for t in ys:
        assert plot["top"] - 1 <= t["y"] <= plot["bottom"] + 1, (key, t)
    for t in xs:
        assert plot["left"] - 1 <= t["x"] <= plot["right"] + 1, (key, t)
    values = [float(t["text"]) for t in ys]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert [t["y"] for t in ys] == sorted((t["y"] for t in ys), reverse=True)
    steps = [float(t["text"]) for t in xs]
    assert steps == sorted(steps) and all(s.is_integer() for s in steps)
    assert all(a["right"] < b["left"] for a, b in zip(xs, xs[1:])), (key, xs)

    scale = math.log10 if chart["log"] else (lambda v: v)
    (y0, v0), (y1, v1) = (
        (ys[0]["y"], scale(values[0])),
        (ys[-1]["y"], scale(values[-1])),
    )

    def at(y: float) -> float:
        v = v0 + (y - y0) * (v1 - v0) / (y1 - y0)
        return 10**v if chart["log"] else v

    m = re.search(
        rf"^{chart['title']}: last \S+ · min (\S+) · max (\S+)", summary, re.M
    )
    assert m, summary
    low, high = float(m[1]), float(m[2])
    assert at(plot["bottom"]) <= low * 1.005 and at(plot["top"]) >= high * 0.995
    (x0, s0), (x1, s1) = (xs[0]["x"], steps[0]), (xs[-1]["x"], steps[-1])
    left = s0 + (plot["left"] - x0) * (s1 - s0) / (x1 - x0)
    right = s0 + (plot["right"] - x0) * (s1 - s0) / (x1 - x0)
    assert left <= 0.5 and right >= 78.5, (key, left, right)
