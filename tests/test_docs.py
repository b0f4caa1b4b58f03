"""The documentation builds, and references every public name and every error."""

import importlib.util
import inspect
import pathlib

import pytest

import lens.errors as errors
import lens.nn as nn
from lens.errors import _base as errors_base

ROOT = pathlib.Path(__file__).parent.parent


def _load_builder():
    spec = importlib.util.spec_from_file_location(
        "docs_build", ROOT / "docs" / "build.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_build_and_cover_the_api_and_errors(tmp_path):
    build = _load_builder()
    api = build.api_reference()
    for name in ("Dense", "vmap", "scan", "Module", "logical_axis_rules", "tabulate"):
        assert f"### `lens.nn.{name}`" in api
    assert "### `lens.core.lift.pack`" in api
    errs = build.error_reference()
    for name, cls in vars(errors).items():
        if (
            inspect.isclass(cls)
            and issubclass(cls, errors.LensError)
            and cls is not errors.LensError
        ):
            assert f"## `{name}`" in errs
    pages = build.render(tmp_path)
    names = {p.name for p in pages}
    assert {
        "index.html",
        "api.html",
        "errors.html",
        "concepts.html",
    } <= names
    index = (tmp_path / "index.html").read_text()
    assert 'href="concepts.html"' in index
    assert nn.Dense.__doc__


def test_the_eager_modules_guide_runs():
    """Every python block of docs/eager.md, in order, in one namespace."""
    import re

    text = (ROOT / "docs" / "eager.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/eager.md", "exec"), namespace)


def test_eager_guide_examples_run():
    """Every ``python`` block of docs/eager.md runs, in order, as one program
    (they assert what they show)."""
    import re

    text = (ROOT / "docs" / "eager.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 10
    exec(compile("\n".join(blocks), "docs/eager.md", "exec"), {})  # noqa: S102


def test_the_committed_error_reference_is_current():
    """docs/errors.md, which every error message links, is the error classes'
    docstrings as ``make docs`` writes them (regenerate it with ``make docs``)."""
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "docs"))
    try:
        import build
    finally:
        sys.path.pop(0)
    page = (pathlib.Path(__file__).parent.parent / "docs" / "errors.md").read_text()
    assert page == build.error_reference() + "\n", "run make docs"
    for name, cls in vars(errors).items():
        if isinstance(cls, type) and issubclass(cls, errors.LensError):
            if cls is not errors.LensError:
                assert f"## `{name}`" in page
                # the anchor the message's pointer names resolves on the page:
                # Flax's classes by Flax's own (#flax.errors.X), others by the heading
                anchor = errors_base.doc_anchor(cls)
                assert f"docs/errors.md#{anchor})" in errors_base.doc_pointer(cls)
                assert f'<a id="{anchor}">' in page or anchor == name.lower()


def test_flax_error_classes_point_to_flax_anchor():
    """An error Flax also has ends its first line as Flax's does
    (``#flax.errors.<Name>``), so a pattern written for Flax's message matches; the
    list of Flax's classes is flax 0.12.8's."""
    import pickle

    flax_errors = pytest.importorskip("flax.errors")
    names = {
        n
        for n, c in vars(flax_errors).items()
        if isinstance(c, type) and issubclass(c, Exception) and n != "FlaxError"
    }
    assert names == errors_base.FLAX_ERROR_NAMES
    err = errors.ScopeVariableNotFoundError("varname", "collection", "scope")
    text = str(pickle.loads(pickle.dumps(err)))
    assert "#flax.errors.ScopeVariableNotFoundError" in text.splitlines()[0]
    assert "#flax.errors.FlaxError" not in text
    assert "docs/errors.md#tracerleakerror)" in str(errors.TracerLeakError("x"))
