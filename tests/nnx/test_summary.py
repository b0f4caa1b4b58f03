"""nnx.tabulate against flax.nnx's: the same rows, FLOPs columns and variable
cells, one row per distinct call, and a clear error for a missing method."""

import jax.numpy as jnp
import pytest

from lens import nnx as lnnx
from tests.helpers import tabulate

fnnx = pytest.importorskip("flax.nnx")
PLAIN = {"force_terminal": False, "no_color": True, "width": 300}


def _model(nnx, shared=True):
    class Block(nnx.Module):
        def __init__(self, linear, rngs):
            self.linear = linear
            self.bn = nnx.BatchNorm(3, rngs=rngs)

        def forward(self, x, *, scale=None):
            return nnx.relu(self.bn(self.linear(x)))

    class Model(nnx.Module):
        def __init__(self, rngs):
            linear = nnx.Linear(3, 3, rngs=rngs)
            self.block1 = Block(linear, rngs)
            self.block2 = Block(linear if shared else nnx.Linear(3, 3, rngs=rngs), rngs)
            self.meta = nnx.Param(jnp.ones((2,)), note="a note", n=3)

        def __call__(self, x):
            y = self.block1.forward(x, scale={}) if shared else self.block1.forward(x)
            extra = {"none": None} if shared else {}  # (flax drops None outputs)
            return self.block2.forward(y), {"sum": y.sum(), **extra}

    return Model(nnx.Rngs(0))


def _table(nnx, shared=True, **kwargs):
    model = _model(nnx, shared)
    return tabulate(nnx, model, jnp.ones((4, 3)), console_kwargs=PLAIN, **kwargs)


def test_flops_columns_match_flax():
    # (flax's tabulate fails on shared modules and keyword arguments with flops)
    ours = _table(lnnx, False, compute_flops=True, compute_vjp_flops=True)
    theirs = _table(fnnx, False, compute_flops=True, compute_vjp_flops=True)
    assert ours.splitlines()[1:] == theirs.splitlines()[1:]
    header = ours.splitlines()[2]
    assert "flops" in header and "vjp_flops" in header


def test_rows_cells_and_totals_match_flax():
    ours, theirs = _table(lnnx, False), _table(fnnx, False)
    assert ours.splitlines()[1:] == theirs.splitlines()[1:]
    assert "block2/linear" in ours


def test_shared_module_and_keyword_inputs():
    ours = _table(lnnx, compute_vjp_flops=True)
    # the shared Linear is called twice with the same inputs: one row
    assert sum(" block1/linear " in line for line in ours.splitlines()) == 1
    assert "block2/linear" not in ours
    assert "note: a note" in ours and "n: 3" in ours
    assert "scale: {}" in ours and "none: None" in ours


def test_depth_and_row_filter():
    text = _table(lnnx, depth=1)
    assert "block1/forward" not in text and "Model" in text
    only_bn = _table(lnnx, row_filter=lambda row: row.type.__name__ == "BatchNorm")
    assert "block1/bn" in only_bn and "block1/forward" not in only_bn


def test_model_is_not_changed_and_methods_are_restored():
    model = _model(lnnx)
    before = lnnx.state(model)
    cls_call = type(model).__dict__["__call__"]
    lnnx.tabulate(model, jnp.ones((4, 3)), compute_flops=True)
    assert type(model).__dict__["__call__"] is cls_call
    assert "_lens_tabulate_id" not in vars(model)
    after = lnnx.state(model)
    assert float(jnp.sum(after["block1"]["bn"]["mean"][...])) == 0.0
    assert before.flat_state().paths == after.flat_state().paths


def test_missing_method_is_a_clear_error():
    with pytest.raises(AttributeError, match="has no method 'encode'"):
        lnnx.tabulate(_model(lnnx), jnp.ones((4, 3)), method="encode")


def test_tabulate_returns_its_table_outside_a_kernel_even_with_an_ipython_shell():
    # An InteractiveShell that a library or test made in this process is not a
    # notebook: the table is returned as text (in a Jupyter kernel rich displays it).
    from IPython.core.interactiveshell import InteractiveShell

    had_shell = InteractiveShell.initialized()
    InteractiveShell.instance()
    try:
        text = lnnx.tabulate(lnnx.Linear(2, 3, rngs=lnnx.Rngs(0)), jnp.ones((1, 2)))
    finally:
        if not had_shell:
            InteractiveShell.clear_instance()
    assert "Linear" in text and "Total" in text


def test_secondary_text_is_dim_in_a_terminal_and_italic_in_a_notebook(monkeypatch):
    # rich draws dim as the fixed grey #7f7f7f in a notebook: 4.0:1 on
    # JupyterLab's light theme, under WCAG AA; there lens marks dtypes and
    # byte sizes italic in the theme's own colour instead.
    from lens.nnx import summary

    model = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    x = jnp.ones((1, 2))
    terminal = lnnx.tabulate(model, x, console_kwargs={"force_terminal": True})
    assert "\x1b[2m" in terminal
    monkeypatch.setattr(summary, "_in_notebook", lambda: True)
    notebook = lnnx.tabulate(model, x, console_kwargs={"force_jupyter": False})
    assert "\x1b[2m" not in notebook and "\x1b[3mfloat32" in notebook
    assert summary._SECONDARY.get() == "dim"  # restored after the call
