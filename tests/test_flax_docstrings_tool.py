"""parity/flax_docstrings.py on small synthetic sources: which files it takes, which
docstrings it finds, and how a child run reports a docstring (no flax needed)."""

import ast
import json
import subprocess
import sys

import parity.flax_docstrings as fd

SOURCE = '''"""A module.

>>> 1 + 1
2
"""
import math

def f():
    """Doubles.

    >>> f() * 2
    4
    """
    return 2

def quiet():
    """No examples here."""

class C:
    """No examples on the class."""

    def g(self):
        """A method.

        >>> C().g()
        3
        """
        return 3
'''


def test_it_takes_files_with_examples_and_leaves_out_examples_and_tests(tmp_path):
    root = tmp_path / "flax"
    (root / "nnx" / "examples").mkdir(parents=True)
    (root / "__init__.py").write_text('"""\n>>> 1\n1\n"""\n')
    (root / "nnx" / "module.py").write_text(SOURCE)
    (root / "nnx" / "plain.py").write_text("x = 1\n")
    (root / "nnx" / "examples" / "demo.py").write_text(SOURCE)
    (root / "nnx" / "module_test.py").write_text(SOURCE)
    assert fd.modules_with_examples(root) == ["flax", "flax.nnx.module"]


def test_it_finds_the_docstrings_doctest_would_run():
    found = [(n, line) for n, _, line in fd.docstrings(ast.parse(SOURCE), "m")]
    assert found == [("m", 1), ("m.f", 8), ("m.C.g", 22)]


def test_a_child_run_reports_each_docstring_and_its_first_failure(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(SOURCE.replace("    4\n", "    5\n"))  # f's example now fails
    sys.path.insert(0, str(tmp_path))
    try:
        done = subprocess.run(
            [sys.executable, "-c", fd.CHILD, "flax", "m", str(source)],
            capture_output=True,
            text=True,
            cwd=fd.REPO,
            env={"PYTHONPATH": f"{fd.REPO}:{tmp_path}", "JAX_PLATFORMS": "cpu"},
            timeout=120,
        )
    finally:
        sys.path.remove(str(tmp_path))
    got = json.loads(done.stdout.splitlines()[-1])
    by_name = {r["name"]: r for r in got["results"]}
    assert set(by_name) == {"m", "m.f", "m.C.g"} and got["problems"] == []
    assert by_name["m"]["failed"] == 0 and by_name["m.C.g"]["failed"] == 0
    assert by_name["m.f"]["failed"] == 1
    assert "Expected:\n    5\nGot:\n    4" in by_name["m.f"]["first"]


def test_the_page_lists_failures_on_purpose_apart_from_the_ones_to_fix():
    name = next(iter(fd.ON_PURPOSE))
    rows = [
        {
            "module": "flax.x",
            "docstrings": 3,
            "flax": 3,
            "lens": 1,
            "failing": [
                {"name": name, "first": "Expected: a"},
                {"name": "flax.x.f", "first": "Expected: b"},
            ],
            "problems": [],
        }
    ]
    page = fd.markdown(rows)
    assert "**1 of the 3 docstrings whose examples pass under flax" in page
    purpose, to_fix = page.split("## Failing on lens, still to fix")
    assert f"- `{name}`: {fd.ON_PURPOSE[name]}" in purpose
    assert "### `flax.x.f`" in to_fix and "Expected: b" in to_fix
    assert name not in to_fix


def test_a_missing_name_in_an_import_keeps_the_others(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (pkg / "m.py").write_text(
        "from .helpers import double, _missing\n\n"
        'def f():\n    """Doubles.\n\n    >>> double(2)\n    4\n    """\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", fd.CHILD, "flax", "pkg.m", str(pkg / "m.py")],
        capture_output=True,
        text=True,
        cwd=fd.REPO,
        env={"PYTHONPATH": f"{fd.REPO}:{tmp_path}", "JAX_PLATFORMS": "cpu"},
        timeout=120,
    )
    got = json.loads(done.stdout.splitlines()[-1])
    assert [r["failed"] for r in got["results"]] == [0]  # double was imported
    assert any("_missing" in p for p in got["problems"])
