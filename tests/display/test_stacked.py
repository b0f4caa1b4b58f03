"""Pictures over a stacked axis: a scanned stack or vmapped ensemble, per slice."""

import re

import jax
import jax.numpy as jnp
import numpy as np

import lens
from lens import nn
from lens.display import Explorer, VariablesView, _stacked
from lens.display._explore import leaf_details_html
from lens.display._leaf import iter_leaves
from tests.helpers import visible_text


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.relu(nn.Dense(8)(c)), None


class Deep(nn.Module):
    layers: int = 12

    @nn.compact
    def __call__(self, x):
        S = nn.scan(
            Block,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=self.layers,
        )
        return S()(x, None)[0]


def _deep(blow_up_layer=None):
    v = Deep().init(jax.random.key(0), jnp.ones((1, 8)))
    if blow_up_layer is not None:
        d = v["params"]["ScanBlock_0"]["Dense_0"]
        d["kernel"] = d["kernel"].at[blow_up_layer].multiply(40.0)
    return v


def test_a_scanned_stack_is_stacked_and_a_plain_layer_is_not():
    leaves = list(iter_leaves(_deep(), with_stats=False))
    assert {x.name for x in leaves if id(x) in _stacked.stacked_leaves(leaves)} == {
        "kernel",
        "bias",
    }
    # Dense(4) on 4 inputs: kernel [4,4] and bias [4] share a leading 4, but the
    # bias has no axis left after it: not a stack of four.
    plain = nn.Dense(4).init(jax.random.key(0), jnp.ones((1, 4)))
    leaves = list(iter_leaves(plain, with_stats=False))
    assert _stacked.stacked_leaves(leaves) == set()


def test_boxed_leading_axis_names_a_stack_of_one_leaf():
    # A vmapped member with one kernel and no bias: the shape rule needs two leaves,
    # but the box's leading axis name (metadata_params) says it is a stack.
    boxed = {
        "params": {
            "m": {"kernel": nn.Partitioned(jnp.ones((5, 3, 3)), ("ens", None, None))},
            "plain": {"kernel": nn.Partitioned(jnp.ones((5, 3)), (None, "mlp"))},
        }
    }
    leaves = list(iter_leaves(boxed, with_stats=False))
    assert _stacked.stacked_leaves(leaves) == {id(leaves[0])}
    assert "rms per slice (5)" in VariablesView(boxed).text()


def test_text_names_the_layer_that_blew_up():
    text = VariablesView(_deep(blow_up_layer=7)).text()
    kernel = next(
        line for line in text.splitlines() if line.strip().startswith("kernel")
    )
    bars = re.search(r"rms per slice \(12\): (\S+)", kernel).group(1)
    assert len(bars) == 12 and bars[7] == "█" and set(bars[:7] + bars[8:]) == {"▁"}
    assert kernel.endswith("stands out: 7")
    # An all-zero bias stack draws flat, with nothing standing out.
    bias = next(line for line in text.splitlines() if line.strip().startswith("bias"))
    assert "rms per slice (12): ▁▁▁▁▁▁▁▁▁▁▁▁ all 0" in bias


def test_nan_slice_is_marked():
    per = np.array([1.0, 1.1, np.nan, 0.9])
    assert _stacked.spark_text(per)[2] == "!"
    assert _stacked.outliers(per) == [2]
    assert "stands out: 2" in _stacked.describe(per)


def _charts(html: str) -> list[str]:
    """Each chart's HTML, up to the next chart's (or the end of its row)."""
    return [c.split("</div>")[0] for c in html.split("<span class='spark'>")[1:]]


def _bars(chart: str) -> list[tuple[int, str]]:
    return [
        (int(h), c)
        for h, c in re.findall(
            r"height:(\d+)px;margin-right:1px;background:([^']+)'", chart
        )
    ]


def test_chart_has_one_bar_per_slice_outlier_red_labelled_and_no_svg():
    # Untrusted notebooks drop SVG: the chart is plain HTML with inline styles.
    v = _deep(blow_up_layer=3)
    html = VariablesView(v).html()
    assert "<svg" not in html and "<script" not in html and "<style" not in html
    charts = _charts(html)
    assert len(charts) == 2  # kernel and bias
    kernel = next(c for c in charts if "stands out: 3" in c)
    bars = _bars(kernel)
    assert len(bars) == 12
    assert [i for i, (_, c) in enumerate(bars) if c != "#808080"] == [3]
    # labelled: which slices, the range, the outlier's index, as visible text
    assert re.search(
        r"rms of slices 0..11 \(axis 0\): [^<]+; stands out: 3", visible_text(kernel)
    )


def test_chart_sits_on_a_line_of_its_own_under_the_leaf_numbers():
    # a last column would be cut at 600 px: the chart takes a whole line of its row
    html = VariablesView(_deep(blow_up_layer=3)).html()
    row = re.search(
        r"<div class=var [^>]*><span class=cols [^>]*><span>kernel<.*?</div>", html
    )
    assert row is not None
    numbers, chart = row.group(0).split("<span class='spark'", 1)
    assert "mean " in numbers and "kernel" not in chart
    assert re.search(
        r"<span class='under m' style=\"flex-basis:100%[^\"]*\">$", numbers
    )


def test_chart_bars_start_at_zero_and_print_the_range():
    # Layers with RMS 1.0 .. 1.2 differ by 20%: their bars do, not 10x (issue 43:
    # bars scaled from min to max made 0.246..0.262 look like a large spread).
    chart = _stacked.spark_html(np.array([1.0, 1.1, 1.2, 1.05]))
    heights = [h for h, _ in _bars(chart)]
    assert heights[2] == _stacked.BAR_PX
    assert [round(h / _stacked.BAR_PX, 1) for h in heights] == [0.8, 0.9, 1.0, 0.9]
    assert "1..1.2" in visible_text(chart) and "bars from 0" in chart
    # a layer far above the others still stands out, and zeros draw no bar
    spike = _bars(_stacked.spark_html(np.array([0.0, 0.2, 0.2, 4.0])))
    assert [h for h, _ in spike] == [0, 1, 1, _stacked.BAR_PX]


def test_long_stacks_are_binned_keeping_a_bad_slice():
    per = np.ones(500)
    per[321] = np.inf
    text = _stacked.spark_text(per)
    assert len(text) == _stacked.MAX_BARS and text.count("!") == 1


def test_diff_shows_which_layer_changed():
    before = _deep()
    after = jax.tree.map(lambda a: a, before)
    k = after["params"]["ScanBlock_0"]["Dense_0"]["kernel"]
    after["params"]["ScanBlock_0"]["Dense_0"]["kernel"] = k.at[5].add(1.0)
    d = lens.diff(before, after)
    line = next(x for x in d.text().splitlines() if "kernel" in x)
    bars = re.search(r"change per slice \(12\): (\S+)", line).group(1)
    assert bars == "▁▁▁▁▁█▁▁▁▁▁▁"
    html = d.html()
    # drawn once (the bars, labelled), not also as block characters
    assert len(_charts(html)) == 1 and "▁" not in html
    assert "only slice 5 changed (1 of 12)" in visible_text(html)
    assert line.endswith("; only slice 5 changed (1 of 12)")


def test_a_stack_zero_but_for_some_slices_names_them_and_how_many():
    per = np.zeros(8)
    per[[1, 6]] = 0.5
    assert _stacked.describe(per).endswith("; nonzero only in slices 1, 6 (2 of 8)")
    assert _stacked.label(per, "change").endswith("; only slices 1, 6 changed (2 of 8)")


def test_explorer_details_draw_the_stack():
    ex = Explorer(Deep(), _deep(blow_up_layer=2))
    leaf = ex.leaf("params:/ScanBlock_0/Dense_0/kernel")
    html = leaf_details_html(leaf)
    assert len(_charts(html)) == 1 and "stands out: 2" in visible_text(html)
