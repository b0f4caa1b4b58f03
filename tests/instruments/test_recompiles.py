"""lens.recompiles: each seeded retrace cause is named, with its module path."""

from __future__ import annotations

import logging
import threading

import jax
import jax.numpy as jnp
import pytest

import lens
from lens._instruments import recompiles as R
from lens.display._recompiles import RecompilesView
from tests.instruments.retrace_cases import CASES


@pytest.fixture(autouse=True)
def fresh_history():
    jax.clear_caches()  # a case's functions may have been traced by an earlier one
    R.history_clear()
    yield
    R.history_clear()


def test_the_suite_seeds_enough_causes_under_every_jit():
    assert len(CASES) >= 15
    assert {c.jit for c in CASES} == {"jax.jit", "nn.jit", "nnx.jit"}
    assert len({c.cause for c in CASES}) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_seeded_cause_is_explained(case):
    with lens.recompiles() as log:
        case.run()
    retraces = log.retraces
    assert retraces, f"{case.name}: no retrace recorded"
    last = retraces[-1]
    assert last.jit == case.jit
    assert last.cause == case.cause, last.text()
    if case.path is not None:
        assert last.changes[0].cause == case.cause, last.text()
        assert case.path in [c.path for c in last.changes if c.cause == case.cause]
        assert case.path in last.text()
    else:
        assert last.new_function
    assert last.fix
    # every earlier trace in the loop was explained too, and none was a false alarm
    assert all(r.cause != "unknown" for r in retraces), log.text()


def test_a_new_submodule_is_the_only_change_when_attributes_share_a_value():
    # every Linear's dtype is the one None object: a walk that visits a shared
    # value once (flax's iter_graph) would report the later ones "gone"
    from lens import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return self.linear(x)

    predict = nnx.jit(lambda m, x: m(x))
    block = Block(nnx.Rngs(0))
    with lens.recompiles() as log:
        predict(block, jnp.ones((1, 4)))
        block.head = nnx.Linear(1, 1, rngs=nnx.Rngs(1))  # sorts before "linear"
        predict(block, jnp.ones((1, 4)))
    [retrace] = log.retraces
    assert [(c.path, c.cause) for c in retrace.changes] == [("m/head", "new")]


def test_loops_are_flagged_with_the_fix():
    with lens.recompiles() as log:
        for _ in range(4):
            jax.jit(lambda v: v + 1)(jnp.ones(2))
    rs = log.retraces
    assert [r.loop for r in rs] == [False, True, True]
    assert "outside the loop" in rs[-1].fix
    assert "in a loop" in RecompilesView(log).text()


def test_init_then_apply_is_not_a_loop():
    from tests.instruments.retrace_cases import JitMLP

    model = JitMLP()
    with lens.recompiles() as log:
        for _ in range(3):
            v = model.init(jax.random.key(0), jnp.ones((2, 4)))
            model.apply(v, jnp.ones((2, 4)))
    assert [r.cause for r in log.retraces] == ["init vs apply"]
    assert not log.retraces[0].loop


def test_off_by_default_and_a_block_ends_it():
    f = jax.jit(lambda x: x * 2)
    assert not R.enabled()
    with lens.recompiles() as log:
        assert R.enabled()
        f(jnp.ones(2))
    assert not R.enabled()
    f(jnp.ones(3))  # not recorded: off
    assert len(log.traces) == 1 and log.traces[0].first


def test_the_process_switch_and_its_log(caplog):
    f = jax.jit(lambda x: x * 3)
    log = lens.recompiles()
    try:
        with caplog.at_level(logging.WARNING, logger="lens.recompiles"):
            f(jnp.ones(2))
            f(jnp.ones(4))
    finally:
        lens.recompiles(False)
    assert [r.cause for r in log.retraces] == ["shape"]
    assert "traced again" in caplog.text  # outside a notebook, logged
    assert not R.enabled()


def test_a_block_is_per_thread():
    seen = {}

    def other():
        seen["other"] = R.enabled()

    with lens.recompiles():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        seen["here"] = R.enabled()
    assert seen == {"here": True, "other": False}


def test_views_text_html_rich_and_no_scripts():
    f = jax.jit(lambda x: x + 1)
    with lens.recompiles() as log:
        f(jnp.ones(2))
        f(jnp.ones(5))
    bundle = log._repr_mimebundle_()
    html = bundle["text/html"]
    assert "<script" not in html and "<style" not in html
    assert "f32[2]" in html and "f32[5]" in html
    assert "title=" in html  # each cause explains itself on hover
    assert "shape" in bundle["text/plain"]
    from rich.console import Console

    console = Console(record=True, width=100)
    console.print(log)
    assert "f32[5]" in console.export_text()


def test_an_empty_log_says_so():
    with lens.recompiles() as log:
        pass
    assert log.text().startswith("Recompiles: none")
    assert "none" in log._repr_mimebundle_()["text/html"]


def test_a_broken_signature_never_breaks_the_trace(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(R, "_user_call", boom)
    monkeypatch.setattr(R._process, "warned", False)
    f = jax.jit(lambda x: x - 1)
    with lens.recompiles():
        with pytest.warns(RuntimeWarning, match="could not read a trace"):
            assert f(jnp.ones(2)).tolist() == [0.0, 0.0]


def test_the_magic_shows_each_cells_retraces():
    from IPython.core.interactiveshell import InteractiveShell

    from lens.display import _recompiles as view

    ip = InteractiveShell.instance()
    view.load_magic(ip)
    shown = []
    try:
        ip.run_line_magic("lens_recompiles", "on")
        watcher = view._watchers[id(ip)]
        watcher_show = watcher.show

        def capture(result=None):
            shown.extend(watcher.pending)
            watcher_show(result)

        ip.events.unregister("post_run_cell", watcher.show)
        watcher.show = capture
        ip.events.register("post_run_cell", capture)
        ip.run_cell(
            "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x)\n"
            "f(jnp.ones(2)); f(jnp.ones(3))"
        )
    finally:
        ip.run_line_magic("lens_recompiles", "off")
        view.unload_magic(ip)
        InteractiveShell.clear_instance()
    assert [t.cause for t in shown if not t.first] == ["shape"]
    assert not R.enabled()
    with pytest.raises(ValueError, match="takes on or off"):
        view.lens_recompiles_magic("maybe")


def test_the_docs_example_prints_what_the_page_shows(capsys):
    """docs/compiling.md's first example, run as pasted, prints its printed block
    (the file and line aside)."""
    import pathlib
    import re

    page = (pathlib.Path(__file__).parents[2] / "docs" / "compiling.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    shown = re.findall(r"prints\n\n```\n(.*?)```", page, re.S)[0]
    exec(compile(code, "<docs>", "exec"), {})
    printed = capsys.readouterr().out
    normalise = lambda s: re.sub(r"\(jax\.jit, [^)]*\)", "(jax.jit, FILE)", s).strip()  # noqa: E731
    assert normalise(printed) == normalise(shown)


def test_the_live_view_shows_a_retrace_row_with_its_fix():
    f = jax.jit(lambda x: x * 2)
    with lens.display.live("fit", sink="none") as live:
        for step, n in enumerate((8, 8, 5)):
            f(jnp.ones(n))
            live.log(step, loss=1.0)
    frame = live.frame()
    [(line, fix)] = frame.retraces
    assert line.startswith("retraced <lambda> at step 1") and "f32[8] → f32[5]" in line
    assert "pad the last" in fix
    from lens.display._live._frame import text
    from lens.display._live._html import body

    assert line in text(frame)
    assert "fix: keep shapes fixed" in body(frame)
    assert not R.enabled()  # on for the block only


def test_the_live_view_can_leave_retraces_alone():
    f = jax.jit(lambda x: x * 3)
    with lens.display.live("fit", sink="none", recompiles=False) as live:
        assert not R.enabled()
        f(jnp.ones(2))
        f(jnp.ones(3))
    assert live.frame().retraces == []
