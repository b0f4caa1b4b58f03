"""lens.explore: the details follow the selection; the picture survives a sanitizer."""

import re

import jax
import jax.numpy as jnp

import lens
from lens import nn
from lens.display import Explorer
from lens.display._explore import leaf_details_html


def _explorer():
    model = nn.Dense(3)
    variables = model.init(jax.random.key(0), jnp.ones((1, 4)))
    return model, variables


def test_details_clear_when_a_filter_drops_the_selected_leaf():
    model, variables = _explorer()
    w = lens.explore(model, variables)
    search = w.children[1].children[1]
    leaves, details = w.children[2].children
    # the list starts with its first leaf selected: its details are shown
    assert leaves.value == "params:/kernel" and "params:/kernel" in details.value
    search.value = "bias"  # the kernel is filtered out of the list
    assert list(leaves.options) == ["params:/bias"]
    assert leaves.value != "params:/kernel" and "kernel" not in details.value
    leaves.value = "params:/bias"
    assert "params:/bias" in details.value


def test_details_are_inline_styled_html_with_a_histogram_of_bars():
    model, variables = _explorer()
    html = leaf_details_html(Explorer(model, variables).leaf("params:/kernel"))
    assert "<svg" not in html and "<style" not in html and "<script" not in html
    assert html.startswith('<div class="lens" style="font-family:')
    bars = re.findall(r"title='(\d+) values in \[", html)
    assert len(bars) == 20 and sum(map(int, bars)) == 12  # every kernel value counted


def test_the_widget_carries_a_table_and_a_sentence_for_where_no_widget_runs():
    model, variables = _explorer()
    bundle = lens.explore(model, variables)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == (
        "lens.explore: Dense · 2 arrays (run the cell in a live kernel to browse them)"
    )
    html = bundle["text/html"]
    assert (
        html.startswith('<div class="lens"') and "kernel" in html and "f32[4,3]" in html
    )
    assert "<svg" not in html and "<script" not in html
