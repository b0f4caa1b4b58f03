"""parity/flax_guides.py on a tiny synthetic notebook: no sdist, no kernel, no JAX.

The tool's verdicts (which cell a page stops at, which outputs differ) are only as
good as its cell extractor, its magic stripping, its runner and its comparator;
these tests pin each of them down.
"""

import doctest
import io
import json

import parity.flax_guides as fg

NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# A page\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "source": ["!pip install flax\n", "import math\n", "x = 2\n", "print(x)"],
        },
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "   \n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x * 1.5"},
        {
            "cell_type": "code",
            "metadata": {"tags": ["raises-exception"]},
            "outputs": [],
            "source": "raise KeyError('expected')",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "source": "%%timeit\nx + 1",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "source": "print(object())\nraise ValueError('bad value\\nmore')",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "source": "print('never')",
        },
    ],
}


def _run(cells):
    out = io.StringIO()
    fg.run_cells_exec(cells, out, setup="pass\n")
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_module_doctests():
    assert doctest.testmod(fg).failed == 0


def test_code_cells_keep_order_skip_markdown_and_empty_cells():
    cells = fg.code_cells(json.loads(json.dumps(NOTEBOOK)))
    assert [c.source.splitlines()[0] for c in cells] == [
        "!pip install flax",
        "x * 1.5",
        "raise KeyError('expected')",
        "%%timeit",
        "print(object())",
        "print('never')",
    ]
    assert [c.raises for c in cells] == [False, False, True, False, False, False]
    assert fg.imported_modules(cells) == {"math"}


def test_runs_to_the_first_unexpected_error_and_records_outputs():
    cells = fg.code_cells(NOTEBOOK)
    records = _run(cells)
    assert [r["cell"] for r in records] == [0, 1, 2, 3, 4]
    assert records[0]["text"] == "2\n"  # the shell line was taken out
    assert records[1]["text"] == "3.0\n"  # the last expression is shown
    assert records[2]["error"] == ["KeyError", "'expected'"]
    assert records[3] == {"cell": 3, "text": "3\n", "error": None, "expected": False}
    assert records[4]["error"] == ["ValueError", "bad value"]
    run = fg.read_results(records, len(cells), seconds=0.5)
    assert (run.status, run.stop, run.reason) == ("error", 4, "ValueError: bad value")
    # A run that got through every cell is ok; one that stopped without a word,
    # (kernel died) is a crash at the next cell.
    ok = fg.read_results(records[:4] + [{"done": True}], 4, seconds=0.1)
    assert ok.status == "ok"
    died = fg.read_results(records[:2], len(cells), seconds=0.1)
    assert (died.status, died.stop) == ("crash", 2)
    timed = fg.read_results([*records[:2], {"timeout": 2}], len(cells), 1.0)
    assert (timed.status, timed.stop) == ("timeout", 2)


def test_compare_text_tolerates_noise_but_not_values():
    assert fg.compare_text("a = 0.1234567", "a = 0.1234569") is None
    assert fg.compare_text("Array([1.,  2.])", "Array([1.0000001, 2.])") is None
    assert fg.compare_text("<object at 0x7f00aa>", "<object at 0x55bbcc>") is None
    assert fg.compare_text("\x1b[34mLinear\x1b[0m(3)", "Linear(3)") is None
    assert (
        fg.compare_text("<class 'flax.nnx.Param'>", "<class 'lens.nnx.Param'>") is None
    )
    assert fg.compare_text("loss 0.5", "loss 0.51") == "number 1: 0.5 vs 0.51"
    assert fg.compare_text("shape (2, 4)", "shape (2, 4, 1)") == "text: ')' vs ','"
    assert fg.compare_text("Param(", "Variable(").startswith("text:")
    # Digits inside names are text, not numbers.
    assert fg.compare_text("float32", "float16") == "text: 'float32' vs 'float16'"


def test_differences_compare_cells_both_ran_and_skip_timings():
    cells = fg.code_cells(NOTEBOOK)
    flax = fg.read_results(_run(cells), len(cells), 1.0)
    lens_records = _run(cells)
    lens_records[1]["text"] = "3.5\n"
    lens_records[3]["text"] = "1000 loops, best of 5: 1 us\n"  # %%timeit: ignored
    lens = fg.read_results(lens_records[:4], len(cells), 1.0)
    diffs = fg.differences(flax, lens, cells)
    assert [(d.index, d.what) for d in diffs] == [(1, "number 1: 3.0 vs 3.5")]


def test_strip_magics_and_skip_reasons():
    assert fg.strip_magics("%%time\nf()") == "f()"
    assert fg.strip_magics("%%writefile a.py\nx") is None
    assert fg.strip_magics("if x:\n  %time f()\ny") == "if x:\n  pass\ny"
    assert fg.is_timing("%%timeit\nf()") and not fg.is_timing("f()")
    cells = [fg.Cell("import no_such_module_here\nfrom flax import nnx")]
    assert fg.skip_reason("guides/x.ipynb", cells) == (
        "needs no_such_module_here (not installed)"
    )
    assert fg.skip_reason("guides/x.ipynb", [fg.Cell("import json")]) is None
    assert fg.skip_reason("guides/data_loaders.ipynb", []).startswith("network")


def test_kernel_outputs_compare_results_not_displays():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "y = 1\n"},
        {"output_type": "stream", "name": "stderr", "text": "a warning\n"},
        {
            "output_type": "display_data",
            "data": {"text/html": "<div/>", "text/plain": "<HTML object>"},
        },
        {"output_type": "display_data", "data": {"text/plain": "plain display"}},
        {"output_type": "execute_result", "data": {"text/plain": "Array(1)"}},
        {"output_type": "error", "ename": "KeyError", "evalue": "'a'\nmore"},
    ]
    text, displays, error = fg._cell_text(outputs)
    assert text == "y = 1\nArray(1)\n"
    assert displays == "<HTML object>\nplain display\n"
    assert error == ("KeyError", "'a'")
    assert fg.normalize("at /tmp/ipykernel_28178/5812.py:3") == (
        "at /tmp/ipykernel_?/?.py:3"
    )
