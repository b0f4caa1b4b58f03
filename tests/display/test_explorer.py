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


def test_where_no_widget_runs_the_explorer_shows_every_variable_and_says_to_run_it():
    model, variables = _explorer()
    html = lens.explore(model, variables)._repr_mimebundle_()["text/html"]
    # the variables table, one row per variable: the kernel's statistics (12
    # values), the bias's three values themselves
    assert html.count("<div class=var ") == 2 and html.count(">mean ") == 1
    assert "<span>[0, 0, 0]</span>" in html
    header, note = re.findall(r"<div>([^<]*)</div><div class=hint[^>]*>([^<]*)<", html)[
        0
    ]
    assert header == "lens.explore of Dense: 1 collection, 2 arrays, 15 values (60 B)"
    assert note.startswith("a static copy: run the cell in a live kernel to browse")


def test_nbconvert_shows_the_explorers_table_when_no_widget_state_is_saved():
    # what a notebook saved by JupyterLab holds (it saves no widget state unless
    # asked to); nbconvert then draws the text/html, and needs no widget script
    import nbformat
    from nbconvert import HTMLExporter

    model, variables = _explorer()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("lens.explore(model, variables)")
    bundle = lens.explore(model, variables)._repr_mimebundle_()
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert "a static copy: run the cell in a live kernel" in page
    assert len(re.findall(r"<div class=\"?var\b", page)) == 2  # one per variable
    assert "application/vnd.jupyter.widget-view+json" not in page
