"""``import lens.nn`` / ``import lens.nnx`` stay cheap (issue 29): the packages load
their modules on first use (lens/_lazy.py), and never the display stack or optax.

Each check runs in a fresh interpreter, since this process has loaded everything.
"""

import ast
import json
import pathlib
import subprocess
import sys

import pytest

from lens._lazy import lazy_table

LAZY_PACKAGES = ["lens.nn", "lens.nnx", "lens.core", "lens.core.lift"]
HEAVY = ("treescope", "rich", "ipywidgets", "IPython", "optax", "lens.display")


def _fresh(code: str) -> object:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("package", ["lens.nn", "lens.nnx", "lens"])
def test_import_loads_no_display_stack_and_no_optax(package):
    loaded = _fresh(
        f"import sys, json, {package}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{HEAVY!r} or m.startswith({HEAVY!r}))))"
    )
    assert loaded == [], f"import {package} loaded {loaded}"


@pytest.mark.parametrize("package", ["lens.nn", "lens.nnx"])
def test_import_loads_only_the_package_itself(package):
    loaded = _fresh(
        f"import sys, json, {package}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('lens'))))"
    )
    assert loaded == ["lens", "lens._flax_alias", "lens._lazy", package, "lens.version"]


def test_first_use_loads_what_it_needs_and_keeps_it():
    code = (
        "import sys, json; from lens import nn; d = nn.Dense; "
        "print(json.dumps([d is nn.Dense, 'Dense' in vars(nn), "
        "'lens.nn._linear' in sys.modules, 'lens.nn._recurrent' in sys.modules, "
        "nn.linear.Dense is d, 'LSTMCell' in dir(nn)]))"
    )
    assert _fresh(code) == [True, True, True, False, True, True]


def test_star_import_and_flax_alias_see_every_name():
    code = (
        "import json, lens; lens.alias_flax(); from flax.linen import *; "
        "from flax import nnx; "
        "print(json.dumps([Dense.__module__, nnx.Linear.__module__, "
        "issubclass(nnx.Object, nnx.Pytree), type(nnx.bridge).__name__]))"
    )
    assert _fresh(code) == [
        "lens.nn.linear",  # flax's path (the class lives in lens.nn._linear)
        "lens.nnx.nn.linear",
        True,  # nnx.Object is flax's: a Pytree subclass that is not a pytree
        "module",
    ]


def test_nnx_objects_display_without_loading_visualization_first():
    code = (
        "import sys, json; from lens import nnx; "
        "m = nnx.Linear(2, 3, rngs=nnx.Rngs(0)); "
        "print(json.dumps(['lens.nnx.visualization' in sys.modules, "
        "hasattr(m, '_repr_mimebundle_'), hasattr(nnx.state(m), '__rich__')]))"
    )
    assert _fresh(code) == [False, True, True]


def test_unknown_name_is_an_attribute_error_naming_the_package():
    import lens.nn

    with pytest.raises(
        AttributeError, match="module 'lens.nn' has no attribute 'Dens'"
    ):
        lens.nn.Dens  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]


def test_lazy_table_reads_type_checking_imports_only():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import os\n"
        "if TYPE_CHECKING:\n"
        "    from a.b import c as d, e\n"
        "    from a import (f,)\n"
        "from g import h\n"
    )
    assert lazy_table(source) == {"d": ("a.b", "c"), "e": ("a.b", "e"), "f": ("a", "f")}


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checkers_see_no_module_getattr(package):
    # A module-level __getattr__ makes pyright/mypy accept any attribute
    # (nn.Dens would pass): the lazy hook must sit under `if not TYPE_CHECKING:`.
    root = pathlib.Path(__file__).parent.parent
    path = root / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    hooks = [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.UnaryOp)
        and isinstance(node.test.op, ast.Not)
        and getattr(node.test.operand, "id", None) == "TYPE_CHECKING"
    ]
    assert len(hooks) == 1 and "__getattr__" in ast.unparse(hooks[0])
    top_level = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            top_level.add(node.name)
        elif isinstance(node, ast.Assign):
            top_level |= {
                n.id for n in ast.walk(node.targets[0]) if isinstance(n, ast.Name)
            }
    assert "__getattr__" not in top_level
