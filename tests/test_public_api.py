"""Every public name has a docstring; lens never imports flax."""

import importlib
import inspect
import pathlib
import re

import pytest

PUBLIC = [
    "lens",
    "lens.core",
    "lens.core.lift",
    "lens.core.meta",
    "lens.core.nn",
    "lens.nn",
    "lens.nn.initializers",
    "lens.nnx",
    "lens.struct",
    "lens.errors",
    "lens.serialization",
]


def _public_names(mod):
    for name in dir(mod):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if inspect.ismodule(obj):
            continue
        origin = getattr(obj, "__module__", "") or ""
        if not origin.startswith("lens"):
            continue  # re-exports of jax/numpy names keep their own docs
        yield name, obj


@pytest.mark.parametrize("modname", PUBLIC)
def test_every_public_name_has_a_docstring(modname):
    mod = importlib.import_module(modname)
    assert mod.__doc__, f"{modname} has no module docstring"
    missing = [
        n
        for n, obj in _public_names(mod)
        if (inspect.isclass(obj) or callable(obj)) and not inspect.getdoc(obj)
    ]
    assert not missing, f"{modname}: no docstring for {missing}"


def test_lens_never_imports_flax():
    root = pathlib.Path(importlib.import_module("lens").__file__).parent
    offenders = [
        str(p)
        for p in root.rglob("*.py")
        if re.search(r"^\s*(import flax|from flax)", p.read_text(), re.M)
    ]
    assert not offenders


def test_import_lens_is_lazy():
    import subprocess
    import sys

    code = "import sys, lens; print('jax' in sys.modules, 'lens.nn' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]
