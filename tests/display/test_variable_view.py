"""Variables as lens shows them: an nnx Variable on one line (``lens.show``,
``nnx.display``), and a table of variables whose columns line up across modules and
whose rows wrap in a narrow cell instead of hiding their numbers."""

import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens
from lens import nnx
from lens.display import BoxView, VariablesView
from lens.display._leaf import fmt_num
from lens.display._variables import INDENT, WIDEST


def test_a_variable_shows_its_type_shape_count_and_statistics():
    kernel = nnx.Param(jnp.arange(12, dtype=jnp.float32).reshape(3, 4))
    view = lens.show(kernel)
    assert isinstance(view, BoxView)
    assert view.text() == "Param f32[3,4] · 12 values · mean 5.5 std 3.45 [0, 11]"
    assert "Param f32[3,4] · 12 values" in view.html()


def test_a_small_or_python_valued_variable_shows_its_values():
    # what flax's repr shows (value=...), in place of statistics of a few numbers
    assert BoxView(nnx.Param(jnp.array([[0.5, -1.0, 2.0]]))).text() == (
        "Param f32[1,3] = [[0.5, -1, 2]]"
    )
    assert (
        BoxView(nnx.BatchStat(jnp.array(3, jnp.int32))).text() == "BatchStat i32[] = 3"
    )
    assert BoxView(nnx.Variable((2, 3))).text() == "Variable tuple = (2, 3)"
    assert BoxView(nnx.Variable("x" * 100)).text().endswith("xxx\u2026")


def test_a_variable_shows_metadata_set_by_the_user_not_the_defaults():
    v = nnx.BatchStat(np.zeros(3, np.float32), note="running mean")
    text = BoxView(v).text()
    assert text.startswith("BatchStat f32[3] note='running mean' = [0, 0, 0]")
    assert "hijax" not in text and "eager_sharding" not in text


def test_a_diff_names_rng_streams_that_moved_on_apart_from_changes():
    model = nnx.Sequential(
        nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))
    )
    before = nnx.clone(model)
    model(jnp.ones((1, 2)))  # draws from the dropout stream: its counter moves
    model.layers[0].bias.value = model.layers[0].bias.value + 1.0
    d = lens.diff(before, model)
    lines = d.text().splitlines()
    assert lines[0] == "Diff: 1 changed, 2 unchanged, 0 added, 0 removed"
    assert lines[1] == "  ~ Param:/layers/0/bias f32[2] max|d| 1 (was all 0)"
    assert lines[2].startswith("  rng streams moved on (not counted): RngCount:/")
    assert len(lines) == 3


# --- the variables table's HTML: columns that line up and rows that wrap ------------


def _rows(html: str) -> list[str]:
    """Each variable's row of a VariablesView's HTML."""
    return re.findall(r"<div class=var style=\"[^\"]*\">.*?</div>", html)


def _groups(row: str) -> list[str]:
    """The ``grid-template-columns`` of each group of cells of a row, in order."""
    return re.findall(r"<span class='?cols[^>]*grid-template-columns:([^;\"]+)", row)


def _mixed() -> dict:
    """Two collections, modules of different depths, and variables with and
    without statistics (a PRNG key has none)."""
    rng = np.random.default_rng(0)
    return {
        "params": {
            "w": np.ones(3, np.float32),  # directly in the collection
            "encoder": {
                "kernel": rng.normal(size=(64, 4)).astype(np.float32) * 1e-3,
                "bias": np.zeros(4, np.float32),
            },
            "head": {"layers": {"kernel": np.full((4, 2), -12345.6, np.float32)}},
        },
        "rngs": {"dropout": {"key": jax.random.key(0), "count": np.uint32(7)}},
    }


def test_every_row_shares_the_column_template_of_its_view():
    view = VariablesView(_mixed())
    rows = _rows(view.html())
    assert len(rows) == len(view.leaves) == 6
    # name and type, size, statistics: one template per group across all modules
    # and collections, so every column starts at the same x in every row
    # (a small array's values take the statistics' place, as wide as they are)
    measured = [r for r in rows if ">mean " in r]
    by_group = [{_groups(r)[i] for r in rows} for i in range(2)]
    by_group.append({_groups(r)[2] for r in measured})
    assert all(len(templates) == 1 for templates in by_group), by_group
    head, size, stats = (t.pop() for t in by_group)
    for x, r in zip(view.leaves, rows, strict=True):
        if x.values is not None:
            assert f"<span>{x.values}</span>" in r and ">mean " not in r
    names = [x.name for x in view.leaves]
    types = [x.type_str for x in view.leaves]  # the widest: key<fry>[]
    assert head == f"minmax(0,{max(map(len, names))}ch) {max(map(len, types))}ch"
    assert size == f"{len('256 (1.0 KB)')}ch"
    means = [f"mean {fmt_num(x.stats[0])}" for x in view.leaves if x.stats]
    assert stats.startswith(f"minmax(0,{max(map(len, means)) + 1}ch) ")  # + gap
    # the values' column is exactly as wide as the statistics' three (their gaps
    # are in the tracks), so both move to a second line at the same cell width
    tracks = [int(w) for w in re.findall(r"minmax\(0,(\d+)ch\)", stats)]
    (values,) = {
        _groups(r)[2] for r in rows if ">mean " not in r and len(_groups(r)) > 2
    }
    assert values == f"minmax(0,{sum(tracks)}ch)"
    assert all("column-gap:0;" in r for r in measured)
    # the key has no statistics: its row has no statistics group, nothing empty
    key = next(r for r in rows if ">key<" in r)
    assert len(_groups(key)) == 2 and "mean" not in key


def test_a_row_wraps_under_its_type_column_in_a_narrow_cell():
    html = VariablesView(_mixed()).html()
    for row in _rows(html):
        # a wrapping flex line, indented by the name column; its first group hangs
        # back into the indent, so a second line starts under the type column
        pad = re.search(
            r"display:flex;flex-wrap:wrap[^\"]*padding-left:([\d.]+)em", row
        )
        hang = re.search(r"margin-left:-([\d.]+)em", row)
        assert pad and hang and pad.group(1) == hang.group(1), row
        # the widest name, 'kernel': 6 ch of 0.6 em, and the gap
        assert float(pad.group(1)) == pytest.approx(6 * 0.6 + 0.8)
    # JupyterLab's sanitizer keeps ch only in grid tracks: nowhere else
    assert not re.search(
        r"[\d.]ch\b", re.sub(r"grid-template-columns:[^;\"]+", "", html)
    )
    assert "<style" not in html and "<script" not in html and "<table" not in html


def test_long_names_wrap_in_their_cell_instead_of_widening_every_row():
    long = "a_parameter_name_much_longer_than_any_column_should_be"
    html = VariablesView({"params": {long: np.ones(2), "b": np.ones(2)}}).html()
    (head,) = {_groups(r)[0] for r in _rows(html)}
    assert head.startswith(f"minmax(0,{WIDEST}ch) ")
    assert f">{long}<" in html  # whole, in a column that wraps it
    # where the second line starts stays near the left edge
    assert f"padding-left:{round(INDENT * 0.6 + 0.8, 2):g}em" in html


def test_sharding_sits_on_its_own_wrapping_line_under_its_row():
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    spec = jax.sharding.PartitionSpec(None, "model")
    x = jax.device_put(jnp.zeros((16, 32)), jax.sharding.NamedSharding(mesh, spec))
    view = VariablesView({"params": {"dense": {"kernel": x, "bias": jnp.zeros(32)}}})
    (row,) = [r for r in _rows(view.html()) if ">kernel<" in r]
    numbers, under = row.split("<span class=under", 1)
    assert "mean 0" in numbers and "P(" not in numbers  # not a column of the row
    assert under.startswith(' style="flex-basis:100%;min-width:0">')
    sharding = re.search(r"<span class=sh[^>]*>(.*?)</span>", under).group(1)
    # it wraps between its parts only: each part's spaces do not break
    parts = sharding.replace("\u00a0· ", "\n").replace(": ", "\n").split("\n")
    assert len(parts) == 5 and all(" " not in p for p in parts), parts
    assert parts[1:] == ["[:,0:8]\u00a0d0,4", "[:,8:16]\u00a0d1,5", *parts[3:]]
    # the unsharded bias has no such line
    (bias,) = [r for r in _rows(view.html()) if ">bias<" in r]
    assert "class=under" not in bias


def test_module_paths_break_between_their_parts():
    html = VariablesView({"params": {"encoder": {"layer_0": {"w": np.ones(2)}}}}).html()
    assert '<summary style="cursor:pointer">/encoder<wbr>/layer_0 <span' in html


def test_stored_tables_compare_equal_whatever_the_last_digits_of_their_statistics():
    # nbval compares a notebook's stored HTML on another CPU after its sanitizer
    # (tests/nbval_sanitize.cfg): the statistics' digits and the widths of their
    # columns (which follow the longest number) must not reach the comparison
    cfg = (pathlib.Path(__file__).parents[1] / "nbval_sanitize.cfg").read_text()
    rules = re.findall(r"regex: (.*)\nreplace: (.*)", cfg)

    def stored(value: float) -> str:
        html = VariablesView(
            {"params": {"dense": {"w": np.full((3, 4), value, np.float32)}}}
        ).html()
        for pattern, repl in rules:
            html = re.sub(pattern, repl, html)
        return html

    a, b = stored(0.00995), stored(0.0100001)  # 'mean 0.00995', 'mean 0.01'
    assert a == b and "mean ~" in a and ">w<" in a and "f32[3,4]" in a
    assert stored(-1.5) == a  # another sign, still the same shape of table


def test_stored_small_float_values_compare_equal_and_exact_ones_stay_compared():
    # a small array shows its values in place of statistics: floats are the CPU's
    # rounding (sanitized away, text and HTML), ints and Python values are exact
    cfg = (pathlib.Path(__file__).parents[1] / "nbval_sanitize.cfg").read_text()
    rules = re.findall(r"regex: (.*)\nreplace: (.*)", cfg)

    def stored(value: float, step: int = 3) -> tuple[str, str]:
        view = VariablesView(
            {
                "params": {"w": np.full((2, 3), value, np.float32)},
                "stats": {"step": np.int32(step), "shape": (2, step)},
            }
        )
        text, html = view.text(), view.html()
        for pattern, repl in rules:
            text, html = re.sub(pattern, repl, text), re.sub(pattern, repl, html)
        return text, html

    a, b = stored(0.00995), stored(0.0100001)
    assert a == b and "0.00995" in VariablesView({"w": np.full(2, 0.00995)}).text()
    text, html = a
    assert "w  f32[2,3]  6 (24 B)  ~" in text and "step   i32[]  1 (4 B)  3" in text
    assert "shape  tuple  (2, 3)" in text
    assert "<span>3</span>" in html and "<span>(2, 3)</span>" in html
    assert stored(0.5, step=4) != a  # an int that changed is still seen


def _opened(html: str) -> dict[str, bool]:
    """``{module path: open}`` of every module's ``<details>`` in a variables view."""
    return {
        re.sub(r"<[^>]+>", "", path): bool(flag)
        for flag, path in re.findall(
            r"<details( open)? style=[^>]*><summary[^>]*>(/[^ ]*)", html
        )
    }


def test_a_small_view_opens_every_module_a_large_one_only_the_stacked():
    from lens.display._variables import OPEN_ALL

    small = {"params": {f"m{i}": {"w": np.ones(2)} for i in range(3)}}
    assert _opened(VariablesView(small).html()) == {
        "/m0": True,
        "/m1": True,
        "/m2": True,
    }
    big = {"params": {f"m{i}": {"w": np.ones(2)} for i in range(OPEN_ALL + 1)}}
    big["params"]["stack"] = {"w": np.ones((3, 2)), "b": np.ones((3, 2))}
    opened = _opened(VariablesView(big).html())
    assert opened.pop("/stack") is True and not any(opened.values())


def test_an_nnx_model_names_each_submodules_class_a_state_names_none():
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.conv = nnx.Conv(1, 2, kernel_size=(3, 3), rngs=rngs)
            self.head = nnx.Linear(2, 2, rngs=rngs)
            self.drop = nnx.Dropout(0.1, rngs=rngs)

    net = Net(nnx.Rngs(0))
    view = lens.display.view_of(net)
    text = view.text()
    assert "  /conv Conv · " in text and "  /head Linear · " in text
    assert "  /drop/rngs RngStream · " in text
    assert "/conv <span class=ty" in view.html()
    state = lens.display.view_of(nnx.state(net)).text()
    assert "  /conv · " in state and "Conv" not in state
