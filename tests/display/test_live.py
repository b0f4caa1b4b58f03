"""lens.display.live: what a loop reports, how it is drawn, and what it costs the loop."""

import io
import re
import subprocess
import sys
import threading
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lens
from lens import nn
from lens.display import DisplayWarning
from lens.display._live import Frame, FrameView, Sink, _sinks
from lens.display._live._html import body
from lens.display._live._ticks import value_axis


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.tanh(nn.Dense(4)(c)), None


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        scan = nn.scan(
            Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=5
        )
        return scan(name="blocks")(x, None)[0]


class Recording(Sink):
    """Keeps every frame it is given."""

    def __init__(self):
        self.frames, self.final = [], None

    def update(self, frame):
        self.frames.append(frame)

    def close(self, frame):
        self.final = frame


class Scalar:
    """A scalar that records which thread converts it (a stand-in device array)."""

    shape, dtype = (), np.dtype("float32")

    def __init__(self, v, seen):
        self.v, self.seen = v, seen

    def __array__(self, dtype=None, copy=None):
        self.seen.append(threading.current_thread().name)
        return np.asarray(self.v, dtype or np.float32)


def _wait(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_log_keeps_values_and_converts_them_on_the_drawer_thread():
    seen = []
    live = lens.display.live("fit", sink="none", per_second=20)
    for i in range(5):
        live.log(i, loss=Scalar(1.0 / (i + 1), seen))
    assert seen == []  # log itself converts nothing (no device sync in the loop)
    assert _wait(lambda: len(seen) == 5)
    assert all(name.startswith("lens-live") for name in seen)
    frame = live.close()
    steps, values = frame.series["loss"]["train"]
    np.testing.assert_allclose(steps, np.arange(5))
    np.testing.assert_allclose(values, 1.0 / np.arange(1, 6), rtol=1e-6)
    assert frame.done == 5 and frame.status == "done"


def test_device_scalars_and_steps_and_splits():
    with lens.display.live("fit", total=4, sink="none") as live:
        for i in range(4):
            live.log(jnp.asarray(i), loss=jnp.float32(4 - i), lr=0.1)
            live.log(jnp.asarray(i), split="eval", loss=jnp.float32(5 - i))
    frame = live.frame()
    assert frame.done == 4  # eval logs are not progress
    np.testing.assert_allclose(frame.series["loss"]["eval"][1], [5, 4, 3, 2])
    np.testing.assert_allclose(frame.series["lr"]["train"][1], [0.1] * 4)
    assert list(frame.series) == ["loss", "lr"]


def test_more_metrics_at_one_step_count_once():
    with lens.display.live(sink="none") as live:
        for i in range(3):
            live.log(i, loss=1.0)
            live.log(i, accuracy=0.5)
    assert live.frame().done == 3


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"loss": jnp.ones(3)}, ValueError, r"shape \(3,\), not a scalar.*loss.mean"),
        ({"loss": "low"}, TypeError, "not a number"),
        ({"loss": None}, TypeError, "not a number"),
        ({"loss": [1.0]}, TypeError, "list, not a number"),
        ({"key": jax.random.key(0)}, TypeError, "not a real number"),
    ],
)
def test_bad_values_are_refused_with_what_and_how(kwargs, error, match):
    with lens.display.live(sink="none") as live:
        with pytest.raises(error, match=match):
            live.log(0, **kwargs)
        live.log(0, loss=1.0)  # the view still works
    assert live.frame().done == 1


def test_bad_steps_options_and_sinks():
    live = lens.display.live(sink="none")
    with pytest.raises(TypeError, match="step=1.5 is not an integer"):
        live.log(1.5, loss=1.0)
    with pytest.raises(TypeError, match="split"):
        live.log(1, split="", loss=1.0)
    with pytest.raises(TypeError, match="expected a function"):
        live.watch(3)
    live.close()
    with pytest.raises(ValueError, match="total=0 must be a positive int"):
        lens.display.live(total=0)
    with pytest.raises(ValueError, match="per_second"):
        lens.display.live(per_second=0)
    with pytest.raises(ValueError, match="layer_every"):
        lens.display.live(layer_every=0)
    with pytest.raises(ValueError, match="sink='web' is not one of"):
        lens.display.live(sink="web")


def test_logging_inside_jit_says_to_log_outside():
    live = lens.display.live(sink="none")

    @jax.jit
    def step(x):
        live.log(0, loss=x)
        return x

    with pytest.raises(TypeError, match="tracer.*log it outside"):
        step(1.0)
    live.close()


def _train_state_loop(live, steps=6, layer_every=None):
    from lens.training import train_state

    model = Stack()
    x = jax.random.normal(jax.random.key(1), (8, 4))
    state = train_state.TrainState.create(
        apply_fn=model.apply,
        params=model.init(jax.random.key(0), x)["params"],
        tx=optax.sgd(0.1),
    )

    @jax.jit
    def train_step(state, x):
        def loss_fn(p):
            return jnp.mean((state.apply_fn({"params": p}, x) - 0.5) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss, grads

    step_fn = live.watch(train_step, "train_step")
    grads = None
    for i in range(steps):
        state, loss, grads = step_fn(state, x)
        live.log(state.step, loss=loss)
        live.layers(i, state.params, grads)
    return state, grads


def test_layers_of_a_scanned_stack_are_measured_per_layer():
    with lens.display.live("stack", sink="none", layer_every=2) as live:
        state, grads = _train_state_loop(live, steps=5)
    frame = live.frame()
    assert [s.step for s in frame.samples] == [0, 2, 4]
    (group,) = frame.groups
    assert group.name == "blocks/Dense_0" and group.layers == 5
    latest = frame.samples[-1]  # step 4: the final state
    dense = state.params["blocks"]["Dense_0"]
    assert grads is not None and latest.grads is not None
    for got, tree in (
        (latest.params, dense),
        (latest.grads, grads["blocks"]["Dense_0"]),
    ):
        k = np.asarray(tree["kernel"]).reshape(5, -1)
        b = np.asarray(tree["bias"]).reshape(5, -1)
        want = np.sqrt(((k**2).sum(1) + (b**2).sum(1)) / (16 + 4))
        np.testing.assert_allclose(got[group.name], want, rtol=1e-5)
    assert frame.compiles and frame.compiles[0][0] == "train_step"
    assert frame.done == 5 and frame.step == 5.0  # TrainState.step, fetched


def test_layer_rms_matches_numpy():
    params = {
        "blocks": {
            "kernel": np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4),
            "bias": np.ones((2, 4), np.float32),
        },
        "head": {"kernel": np.full((4, 2), 3.0, np.float32)},
    }
    with lens.display.live(sink="none", layer_every=1) as live:
        live.layers(0, params)
    frame = live.frame()
    by = {g.name: g for g in frame.groups}
    assert by["blocks"].layers == 2 and by["head"].layers == 0
    k = params["blocks"]["kernel"].reshape(2, -1)
    want = np.sqrt(((k**2).sum(1) + 4) / 16)
    np.testing.assert_allclose(frame.samples[0].params["blocks"], want, rtol=1e-5)
    np.testing.assert_allclose(frame.samples[0].params["head"], 3.0, rtol=1e-6)
    assert frame.samples[0].grads is None


def test_watch_shows_a_compile_in_flight_then_records_it():
    release = threading.Event()

    def slow(x):
        release.wait(5)
        return x + 1

    live = lens.display.live(sink="none")
    fn = live.watch(slow, "slow_step")
    out = []
    t = threading.Thread(target=lambda: out.append(fn(1)))
    t.start()
    assert _wait(lambda: bool(live.frame().busy))
    name, kind, secs = live.frame().busy[0]
    assert (name, kind) == ("slow_step", "compiling") and secs >= 0
    release.set()
    t.join()
    assert out == [2] and live.frame().busy == []
    assert [c[0] for c in live.frame().compiles] == ["slow_step"]
    assert fn.__name__ == "slow"  # the wrapped function's attributes
    frame = live.close()
    assert "compiled slow_step in" in FrameView(frame).text()


def test_watch_an_nnx_jit_optimizer_loop():
    from lens import nnx

    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)
        return loss, grads

    x = jnp.ones((4, 3))
    with lens.display.live("nnx", sink="none", layer_every=1) as live:
        step_fn = live.watch(train_step)
        for i in range(3):
            loss, grads = step_fn(model, optimizer, x)
            live.log(i, loss=loss)
            live.layers(i, nnx.state(model, nnx.Param), grads)
    frame = live.frame()
    assert [c[0] for c in frame.compiles] == ["train_step"]
    assert frame.groups[0].name == "/" and "kernel f32[3,2]" in frame.groups[0].shapes
    values = frame.series["loss"]["train"][1]
    assert values[-1] < values[0]


def test_a_loop_on_a_background_thread():
    live = lens.display.live("bg", sink="none", per_second=20)

    def loop():
        with live:
            assert lens.display.Live.current() is live
            for i in range(50):
                live.log(i, loss=float(i))

    t = threading.Thread(target=loop)
    t.start()
    t.join()
    assert lens.display.Live.current() is None  # the thread's context, not ours
    frame = live.frame()
    assert frame.status == "done" and frame.done == 50
    np.testing.assert_allclose(frame.series["loss"]["train"][1], np.arange(50))


def test_current_is_per_context():
    assert lens.display.Live.current() is None
    with lens.display.live(sink="none") as outer:
        with lens.display.live(sink="none") as inner:
            assert lens.display.Live.current() is inner
        assert lens.display.Live.current() is outer
    assert lens.display.Live.current() is None


def test_interrupt_and_failure_are_the_final_status():
    live = lens.display.live(sink="none")
    with pytest.raises(KeyboardInterrupt):
        with live:
            live.log(0, loss=1.0)
            raise KeyboardInterrupt
    assert live.frame().status == "interrupted"
    live = lens.display.live(sink="none")
    with pytest.raises(ZeroDivisionError):
        with live:
            live.log(0, loss=1.0 / 0)
    assert live.frame().status == "failed: ZeroDivisionError"
    assert live.close() is live.close()  # idempotent


def test_the_drawer_draws_in_place_and_closes_once():
    sink = Recording()
    with lens.display.live("fit", sink=sink, per_second=20) as live:
        for i in range(20):
            live.log(i, loss=float(i))
            time.sleep(0.01)
    assert 1 <= len(sink.frames) < 20  # throttled: not one per step
    assert sink.final is not None and sink.final.done == 20


class Broken(Sink):
    def update(self, frame):
        raise RuntimeError("no canvas")

    def close(self, frame):
        raise RuntimeError("no canvas")


def test_a_drawing_error_warns_and_falls_back_to_text(capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lens.display.live("fit", sink=Broken(), per_second=20) as live:
            live.log(0, loss=1.0)
            assert _wait(lambda: isinstance(live._sink, _sinks.TextSink))
            live.log(1, loss=0.5)
    assert [w.category for w in caught] == [DisplayWarning]
    assert "no canvas" in str(caught[0].message)
    assert "fit · 2 steps in" in capsys.readouterr().out  # the final text


def test_text_sink_writes_progress_then_the_whole_picture():
    out = io.StringIO()
    sink = _sinks.TextSink(out, every=0.0)
    with lens.display.live("fit", total=3, sink=sink, per_second=20) as live:
        for i in range(3):
            live.log(i, loss=1.0 / (i + 1))
        _wait(lambda: "loss" in out.getvalue())
    text = out.getvalue()
    assert re.search(r"fit · \d/3 steps in", text)
    last = text.strip().splitlines()
    assert last[-1].startswith("loss: last 0.333 · min 0.333 · max 1")


def test_rich_sink_in_a_terminal():
    out = io.StringIO()
    with lens.display.live("fit", total=2, sink=_sinks.RichSink(out)) as live:
        live.log(0, loss=1.0)
        live.log(1, loss=0.5)
    assert "fit · 2/2 steps" in out.getvalue()


def test_notebook_sink_updates_one_output_then_shows_the_final_frame(monkeypatch):
    import IPython.display

    calls = []

    class Handle:
        def update(self, obj, raw=False):
            calls.append(("update", obj))

    def display(obj, raw=False, display_id=None):
        calls.append(("display", obj))
        return Handle() if display_id else None

    monkeypatch.setattr(IPython.display, "display", display)
    with lens.display.live("fit", sink="notebook", per_second=20) as live:
        live.log(0, loss=1.0)
        assert _wait(lambda: len(calls) > 1)
    kinds = [c[0] for c in calls]
    assert calls[0] == ("display", {"text/plain": ""})
    assert set(kinds[1:-2]) == {"update"}  # in place: no new output while running
    assert calls[-2] == ("update", {"text/plain": ""})
    final = calls[-1][1]
    assert kinds[-1] == "display" and isinstance(final, FrameView)
    assert final.frame.done == 1
    live_html = calls[1][1]["text/html"]
    assert "<script" not in live_html and "<svg" not in live_html


def _frame(**kw):
    steps = np.arange(300, dtype=float)
    f = Frame(title="fit", status="done", calls=300, total=300, elapsed=3.0, rate=100.0)
    f.series = {
        "loss": {
            "train": (steps, np.exp(-steps / 50)),
            "eval": (steps[::50], np.exp(-steps[::50] / 40)),
        }
    }
    for k, v in kw.items():
        setattr(f, k, v)
    return f


class Node:
    """An element of parsed HTML: tag, attributes, children (text as str)."""

    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.children = tag, dict(attrs), []


def _parse(html):
    from html.parser import HTMLParser

    root = Node("root", {})
    stack = [root]
    void = {"img", "br", "hr", "input", "meta", "link"}

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            node = Node(tag, attrs)
            stack[-1].children.append(node)
            if tag not in void:
                stack.append(node)

        def handle_endtag(self, tag):
            if tag not in void:
                assert stack.pop().tag == tag

        def handle_data(self, data):
            stack[-1].children.append(data)

    Parser(convert_charrefs=True).feed(html)
    assert stack == [root]
    return root


def _walk(node):
    for c in node.children:
        if isinstance(c, Node):
            yield c
            yield from _walk(c)


def _find(node, cls):
    return [n for n in _walk(node) if cls in n.attrs.get("class", "").split()]


def _text(node):
    return "".join(c if isinstance(c, str) else _text(c) for c in node.children)


def _html_of(node):
    attrs = "".join(f" {k}='{v}'" for k, v in node.attrs.items())
    inner = "".join(c if isinstance(c, str) else _html_of(c) for c in node.children)
    return f"<{node.tag}{attrs}>{inner}</{node.tag}>"


def _style(node):
    pairs = (kv.split(":", 1) for kv in node.attrs.get("style", "").split(";") if kv)
    return {k.strip(): v.strip() for k, v in pairs}


class _Ticks:
    """An axis read back from its tick labels and their places (percent)."""

    def __init__(self, labels, places, log):
        self.labels, self.places, self.log = labels, places, log

    def value(self, percent):
        """The value at ``percent`` along the axis, from the first and last tick."""
        (p0, p1), (v0, v1) = (
            self.places[:: len(self.places) - 1],
            [float(self.labels[0]), float(self.labels[-1])],
        )
        f = np.log10 if self.log else (lambda v: v)
        out = f(v0) + (percent - p0) * (f(v1) - f(v0)) / (p1 - p0)
        return 10.0**out if self.log else out


def _axis(chart, cls, side, log):
    (axis,) = _find(chart, cls)
    ticks = _find(axis, "lens-live-tick")
    labels = [_text(t) for t in ticks]
    places = [float(_style(t)[side][:-1]) for t in ticks]
    return _Ticks(labels, places, log)


def _svg(img):
    from urllib.parse import unquote

    return unquote(img.attrs["src"].split(",", 1)[1])


def _polylines(img):
    """Every polyline of a chart's image as an ``[n, 2]`` array (0..1000, y down)."""
    found = re.findall(r"points='([^']*)'", _svg(img))
    return [
        np.array([[int(v) for v in p.split(",")] for p in pts.split()]) for pts in found
    ]


def test_html_is_script_free_and_deterministic():
    html = FrameView(_frame()).html()
    assert html == FrameView(_frame()).html()
    assert "<script" not in html and "<svg" not in html and "<style" not in html
    assert "var(--" not in html and " on" not in html.replace(" one", "")
    assert "log scale" in html  # loss over two decades
    (chart,) = _find(_parse(html), "lens-live-chart")
    (img,) = _find(chart, "lens-live-lines")  # the lines: one image, drawn whole
    assert img.attrs["src"].startswith("data:image/svg+xml,")
    train, eval_ = _polylines(img)
    assert len(train) == 300 and len(eval_) == 6  # every point (few enough)


def test_tick_labels_match_the_data_range():
    f = _frame()
    steps = np.arange(300.0)
    acc = 0.5 + 0.4 * (1 - np.exp(-steps / 80))
    f.series["accuracy"] = {"train": (steps, acc)}
    loss, accuracy = _find(_parse(body(f)), "lens-live-chart")
    for chart, values, log in (
        (loss, f.series["loss"]["train"][1], True),
        (accuracy, acc, False),
    ):
        y = _axis(chart, "lens-live-yaxis", "bottom", log)
        assert y.labels == sorted(y.labels, key=float)  # from the bottom up
        assert len(set(y.labels)) == len(y.labels) >= 3
        # the axis the ticks describe holds the data, with a margin (not 10x)
        assert y.value(0) < values.min() and y.value(100) > values.max()
        span = np.log10 if log else (lambda v: v)
        assert span(y.value(100)) - span(y.value(0)) < 1.3 * (
            span(values.max()) - span(values.min())
        )
        x = _axis(chart, "lens-live-xaxis", "left", False)
        assert all(t == str(int(t)) for t in x.labels)  # whole steps
        assert x.value(0) <= 0 and 299 <= x.value(100) < 340
    assert "log scale" in _text(loss) and "log scale" not in _text(accuracy)


def test_a_tiny_move_is_not_a_cliff():
    """0.01 to 0.00993: labelled ticks that differ, and a small step on the plot."""
    f = _frame(
        series={
            "loss": {"train": (np.arange(50.0), np.r_[[0.01] * 25, [0.00993] * 25])}
        }
    )
    (chart,) = _find(_parse(body(f)), "lens-live-chart")
    y = _axis(chart, "lens-live-yaxis", "bottom", False)
    assert len(set(y.labels)) == len(y.labels) >= 2
    assert y.value(0) < 0.00993 < 0.01 < y.value(100)
    drop = (0.01 - 0.00993) / (y.value(100) - y.value(0))
    assert drop < 0.2  # a fifth of the height at most, not all of it


def test_legend_names_are_the_names_as_logged():
    with lens.display.live(sink="none") as live:
        for i in range(30):
            live.log(i, loss=1.0 / (i + 1), lr=0.1 * 0.9**i)
            if i % 10 == 9:
                live.log(i, split="eval", loss=1.5 / (i + 1))
                live.log(i, split="holdout", loss=2.0 / (i + 1), accuracy=0.5)
    charts = _find(_parse(body(live.frame())), "lens-live-chart")
    names = [[_text(n) for n in _find(c, "lens-live-name")] for c in charts]
    assert names == [
        ["loss", "loss (eval)", "loss (holdout)"],
        ["lr"],  # not 'train'
        ["accuracy (holdout)"],
    ]
    text = FrameView(live.frame()).text()
    assert "lr: last" in text and "loss (eval): last" in text


def test_sparse_series_are_points_joined_by_straight_lines():
    f = _frame()
    (chart,) = _find(_parse(body(f)), "lens-live-chart")
    steps, values = f.series["loss"]["eval"]
    points = _find(chart, "lens-live-point")
    assert len(points) == len(steps) == 6  # a point at each value logged
    for p, s, v in zip(points, steps, values):
        assert p.attrs["title"] == f"loss (eval) at step {s:.0f}: {v:.6g}"
    (img,) = _find(chart, "lens-live-lines")
    train, eval_ = _polylines(img)
    xs, ys = eval_[:, 0], eval_[:, 1]
    assert (np.diff(xs) > 0).all()  # point to point: no step across then down
    for p, x, y in zip(points, xs, ys):  # the line goes through the points
        style = _style(p)
        assert abs(float(style["left"][:-1]) - x / 10) < 0.11
        assert abs(float(style["bottom"][:-1]) - (100 - y / 10)) < 0.11
    assert len(train) == 300  # the dense series: a line through every point, no dots


def test_a_long_series_keeps_its_extremes():
    steps = np.arange(4000.0)
    values = np.sin(steps / 30) + (steps == 2500) * 5.0  # one spike
    f = _frame(series={"x": {"train": (steps, values)}})
    (chart,) = _find(_parse(body(f)), "lens-live-chart")
    (line,) = _polylines(_find(chart, "lens-live-lines")[0])
    assert len(line) <= 4 * 240  # thinned to the plot's columns
    assert (np.diff(line[:, 0]) >= 0).all()
    y = _axis(chart, "lens-live-yaxis", "bottom", False)
    assert line[:, 1].min() == round(
        (1 - (5.0 + np.sin(2500 / 30) - y.value(0)) / (y.value(100) - y.value(0)))
        * 1000
    )


def test_smoothing_keeps_the_raw_trace_faint():
    rng = np.random.default_rng(0)
    steps = np.arange(200.0)
    noisy = 1.0 + 0.3 * rng.standard_normal(200)
    f = _frame(series={"loss": {"train": (steps, noisy)}}, smooth=0.9)
    (chart,) = _find(_parse(body(f)), "lens-live-chart")
    assert "smoothed, raw faint" in _text(chart)
    img = _find(chart, "lens-live-lines")[0]
    raw, smoothed = _polylines(img)
    svg = _svg(img)
    assert "stroke-opacity='0.28'" in svg and "stroke-opacity='1.0'" in svg
    assert smoothed[:, 1].std() < raw[:, 1].std() / 2
    with pytest.raises(ValueError, match="smooth=1.5 must be a number in"):
        lens.display.live(smooth=1.5)


def test_heatmaps_have_labelled_rows_and_a_colour_scale():
    bias = np.ones((6, 4), np.float32)
    with lens.display.live(sink="none", layer_every=1) as live:
        for i in range(5):
            k = np.full((6, 4, 4), 0.5 + 0.1 * i, np.float32)
            live.layers(i * 10, {"blocks": {"kernel": k, "bias": bias}})
    frame = live.frame()
    (heat,) = _find(_parse(body(frame)), "lens-live-heat")
    rows = [_text(r) for r in _find(heat, "lens-live-row")]
    assert rows == ["0", "1", "2", "3", "4", "5"]  # layer index, top to bottom
    assert "rows: layer, columns: step; log colour" in _text(heat)
    lo, hi = (
        float(_text(_find(heat, c)[0]))
        for c in ("lens-live-scale-lo", "lens-live-scale-hi")
    )
    rms = np.stack([s.params["blocks"] for s in frame.samples])
    assert lo <= rms.min() * 1.01 and hi >= rms.max() * 0.99  # the colours' range
    assert hi / lo >= 1.49  # at least x1.5: a small change stays faint
    ticks = [_text(t) for t in _find(heat, "lens-live-tick")]
    assert ticks and set(ticks) <= {"0", "10", "20", "30", "40"}


def test_modules_of_different_size_get_a_scale_per_row():
    """Modules whose RMS differ 100x while each changes 10%: one colour range would
    draw each row as a flat band, so each row is scaled to its own median."""
    with lens.display.live(sink="none", layer_every=1) as live:
        for i in range(6):
            live.layers(
                i,
                {
                    "embed": {
                        "kernel": np.full((4, 4), 10.0 * (1 + 0.02 * i), np.float32)
                    },
                    "head": {
                        "kernel": np.full((4, 2), 0.1 * (1 - 0.02 * i), np.float32)
                    },
                },
            )
    html = body(live.frame())
    (heat,) = _find(_parse(html), "lens-live-heat")
    assert [_text(r) for r in _find(heat, "lens-live-row")] == ["embed", "head"]
    assert "each row relative to its own median (the rows differ over 100x" in _text(
        heat
    )
    lo, hi = (
        _text(_find(heat, c)[0]) for c in ("lens-live-scale-lo", "lens-live-scale-hi")
    )
    assert lo.startswith("x0.") and hi.startswith("x1.")
    cells = re.findall(r"<i style='background:(#[0-9a-f]{6})'></i>", html)
    embed, head = cells[:6], cells[6:]
    assert len(set(embed)) > 2 and len(set(head)) > 2  # each row shows its change


def test_layer_bars_start_at_zero():
    """0.246..0.262 is a small spread: bars from zero are nearly equal."""
    v = np.linspace(0.246, 0.262, 5, dtype=np.float32)
    k, b = (
        np.ones((5, 4, 4), np.float32) * v[:, None, None],
        np.ones((5, 4)) * v[:, None],
    )
    with lens.display.live(sink="none", layer_every=1) as live:
        live.layers(0, {"blocks": {"kernel": k, "bias": b.astype(np.float32)}})
    html = body(live.frame())
    (bars,) = _find(_parse(html), "lens-live-bars")
    heights = [
        int(h) for h in re.findall(r"height:(\d+)px;margin-right:1px", _html_of(bars))
    ]
    assert len(heights) == 5 and min(heights) >= 0.9 * max(heights)
    assert "params of slices 0..4 (axis 0): 0.246..0.262" in _text(bars)  # the range


def test_nan_is_red_and_named():
    f = _frame()
    v = np.ones(300)
    v[150] = np.nan
    f.series = {"loss": {"train": (np.arange(300.0), v)}}
    html = body(f)
    (chart,) = _find(_parse(html), "lens-live-chart")
    (red,) = [n for n in _walk(chart) if "#d32f2f" in n.attrs.get("style", "")]
    assert red.attrs["title"] == "loss at step 150: nan"
    before, after = _polylines(_find(chart, "lens-live-lines")[0])  # broken at NaN
    assert len(before) == 150 and len(after) == 149
    assert "loss: last 1 · min 1 · max 1" in FrameView(f).text()


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e6, 1e6),
    st.floats(-12, 6),
    st.integers(2, 50),
)
def test_value_axes_hold_the_data_and_label_ticks_distinctly(low, log_span, n):
    values = low + 10.0**log_span * np.linspace(0, 1, n) ** 2
    axis = value_axis(values)
    at = axis.where(values)
    assert (at >= 0).all() and (at <= 1).all()
    assert 2 <= len(axis.ticks) <= 7
    assert len(set(axis.labels)) == len(axis.labels)  # neighbours differ
    step = np.diff(axis.ticks).min() if not axis.log else None
    for t, text in zip(axis.ticks, axis.labels):
        assert 0 <= axis.where(np.array(t)) <= 1
        if step is not None:  # the label names its tick
            assert abs(float(text) - t) <= 1e-3 * step + 1e-12 * abs(t)


def test_heatmap_marks_an_exploding_layer():
    bias = np.ones((6, 4), np.float32)
    with lens.display.live(sink="none", layer_every=1) as live:
        for i in range(4):
            k = np.ones((6, 4, 4), np.float32)
            k[3] *= 10.0**i
            live.layers(i, {"blocks": {"kernel": k, "bias": bias}})
    frame = live.frame()
    html = body(frame)
    assert "RMS, layer 0..5" in html and "stands out now: layer 3" in html
    assert html.count("<i style='background:") == 6 * 4
    text = FrameView(frame).text()
    assert "blocks params rms per slice (6):" in text and "stands out: 3" in text


def test_import_is_lazy():
    code = (
        "import sys, lens.display\n"
        "assert 'lens.display._live' not in sys.modules\n"
        "lens.display.live\n"
        "assert 'lens.display._live' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_plain_optax_loop():
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    tx = optax.sgd(0.1)
    opt = tx.init(params)
    x = jnp.ones((4, 3))

    @jax.jit
    def step(p, o):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"]) ** 2))(p)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss, g

    with lens.display.live("optax", sink="none", layer_every=1) as live:
        step = live.watch(step)
        for i in range(4):
            params, opt, loss, grads = step(params, opt)
            live.log(i, loss=loss)
            live.layers(i, params, grads)
    frame = live.frame()
    assert frame.done == 4 and len(frame.samples) == 4
    (group,) = frame.groups  # w and b sit at the root: one plain group
    assert group.layers == 0 and group.shapes == "b f32[2], w f32[3,2]"
    w, b = np.asarray(params["w"]), np.asarray(params["b"])
    want = np.sqrt(((w**2).sum() + (b**2).sum()) / 8)
    np.testing.assert_allclose(frame.samples[-1].params[group.name], want, rtol=1e-5)


def test_exit_with_a_view_still_drawing_is_clean():
    code = (
        "import jax.numpy as jnp, lens\n"
        "live = lens.display.live('left open', sink='none', per_second=30)\n"
        "x = jnp.float32(1)\n"
        "for i in range(20000):\n"
        "    live.log(i, loss=x)  # the drawer is still fetching at exit\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "terminate called" not in out.stderr and "FATAL" not in out.stderr


def test_a_closed_view_refuses_more_and_layers_refuse_tracers():
    live = lens.display.live("fit", sink="none", layer_every=1)

    @jax.jit
    def step(p):
        live.layers(0, p)
        return p

    with pytest.raises(TypeError, match="params hold tracers.*after it"):
        step({"w": jnp.ones((2, 2))})
    live.close()
    with pytest.raises(RuntimeError, match="'fit' is closed.*lens.display.live"):
        live.log(0, loss=1.0)
    with pytest.raises(RuntimeError, match="is closed"):
        live.layers(0, {"w": np.ones(2)})
    assert live.frame().done == 0  # nothing was recorded


def test_steps_too_large_for_a_float_to_tell_apart_still_draw():
    # at 2**62 float64 steps are 1024 apart: the axis limits are one float
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no DisplayWarning
        with lens.display.live("big", sink="none") as live:
            for i in range(5):
                live.log(2**62 + i, loss=float(i))
        html = FrameView(live.frame()).html()
    assert "polyline points='500,955 500,727 500,500" in html  # one x, 5 heights


def test_layers_refuse_donated_params_naming_the_leaf():
    donated = jnp.ones((2, 2))
    donated.delete()  # what jax.jit(step, donate_argnums=0) leaves behind
    with lens.display.live("fit", sink="none", layer_every=1) as live:
        with pytest.raises(ValueError, match=r"params\['dense'\]\['w'\] is a deleted"):
            live.layers(0, {"dense": {"w": donated}})
        live.layers(0, {"dense": {"w": jnp.ones((2, 2))}})  # the refusal took no turn
    assert len(live.frame().samples) == 1


@pytest.mark.parametrize(
    "name, title",
    [
        ("03_scan_and_vmap_axes", "scan stack · 48/48 steps"),
        ("06_nnx", "CNN · 24/24 steps"),
    ],
)
def test_saved_notebooks_hold_the_final_picture(name, title):
    """What GitHub, nbval and nbconvert's HTML show: the emptied live output, then
    the final picture (curves, per-layer statistics) as plain script-free HTML."""
    import pathlib

    import nbconvert
    import nbformat

    path = pathlib.Path(__file__).parents[2] / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, 4)
    (cell,) = [c for c in nb.cells if "lens.display.live(" in c.source]
    empty, final = cell.outputs[:2]
    assert empty.data == {"text/plain": ""}
    assert final.data["text/plain"].startswith(f"{title} in ")  # every step counted
    html = final.data["text/html"]
    assert "lens-live-chart" in html and "<script" not in html and "<svg" not in html
    page, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    for part in ("lens-live-chart", "lens-live-heat", "<b>loss</b>", "layers</b>"):
        assert page.count(part) == html.count(part) > 0, part


def test_nbval_blurs_what_float_sums_decide_and_keeps_the_rest():
    """Two runs whose values differ by 1% (far more than another CPU's rounding)
    store pictures that nbval, with tests/nbval_sanitize.cfg, finds equal; a
    picture with another step count or another metric name it does not."""
    import copy
    import pathlib

    from lens.display._live._layers import vector

    cfg = pathlib.Path(__file__).parents[2] / "tests" / "nbval_sanitize.cfg"
    rules = re.findall(r"regex: (.*)\nreplace: (.*)", cfg.read_text())

    def stored(frame):
        html = FrameView(frame).html()
        for pattern, repl in rules:
            html = re.sub(pattern, repl, html)
        return html

    with lens.display.live("fit", sink="none", layer_every=2) as live:
        state, _ = _train_state_loop(live, steps=12)
        for i in range(0, 12, 4):
            live.log(i, split="eval", loss=0.5 / (i + 1))
            live.log(i, accuracy=0.5 + i / 30)
    frame = live.frame()
    rng = np.random.default_rng(0)

    def noisy(f):
        g = copy.deepcopy(f)
        g.series = {
            m: {
                s: (x, y * (1 + 0.01 * rng.standard_normal(y.shape)))
                for s, (x, y) in sp.items()
            }
            for m, sp in f.series.items()
        }
        for smp in g.samples:
            for kind in ("params", "grads"):
                d = getattr(smp, kind)
                d = {
                    k: v * (1 + 0.01 * rng.standard_normal(np.shape(v)))
                    for k, v in d.items()
                }
                setattr(smp, kind, d)
                smp.vectors[kind] = vector(d)
        return g

    want = stored(frame)
    assert all(stored(noisy(frame)) == want for _ in range(10))
    other = copy.deepcopy(frame)
    other.series["acc"] = other.series.pop("accuracy")
    assert stored(other) != want


def test_grads_must_match_params():
    params = {"a": np.ones((2, 2), np.float32), "b": np.ones(2, np.float32)}
    with lens.display.live(sink="none", layer_every=2) as live:
        with pytest.raises(ValueError, match="grads do not have the structure"):
            live.layers(0, params, {"a": params["a"]})
        live.layers(1, params, params)  # the refused call took no turn
        live.layers(2, params, params)
    assert [s.step for s in live.frame().samples] == [1]


def test_auto_sink_is_plain_text_outside_a_notebook_and_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a log: not a terminal
    assert not _sinks.in_notebook()
    assert type(_sinks.pick("auto")) is _sinks.TextSink

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Tty())
    sink = _sinks.pick("auto")
    assert type(sink) is _sinks.RichSink
    sink.close(Frame(title="t"))


def test_a_tick_within_rounding_of_a_limit_stays_on_the_axis():
    """Hypothesis found values whose lowest tick (0.75) sat 1e-13 below the
    axis's lower limit: nice_ticks allows for rounding, so the limit moves to it."""
    values = 0.8 + 10.0**-8.417329030337532e-13 * np.linspace(0, 1, 2) ** 2
    axis = value_axis(values)
    assert all(0 <= axis.where(np.array(t)) <= 1 for t in axis.ticks)
