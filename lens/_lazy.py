"""Package namespaces that load their modules on first use (PEP 562).

A package lists its public names as ordinary imports inside ``if TYPE_CHECKING:``
(what type checkers and readers see) and ends with::

    if not TYPE_CHECKING:  # a checker would take any name for a lazy one
        __getattr__, __dir__ = lazy_exports(__name__, __file__)

At run time those imports are not executed: the first access of a name imports its
module and caches the value in the package's namespace, so ``import lens.nn`` costs
almost nothing beyond the package's own ``__init__``, and a model pays only for the
layers it uses. The import statements stay the one list of public names.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def lazy_table(source: str) -> dict[str, tuple[str, str]]:
    """``{public name: (module, attribute)}`` from the ``from M import A as B``
    statements in the top-level ``if TYPE_CHECKING:`` blocks of ``source``.

    Example:
        >>> lazy_table("if TYPE_CHECKING:\\n    from a.b import c as d, e\\n")
        {'d': ('a.b', 'c'), 'e': ('a.b', 'e')}
    """
    table: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                for alias in stmt.names:
                    table[alias.asname or alias.name] = (stmt.module, alias.name)
    return table


def _served(
    module: str, table: dict[str, tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` serving ``table``'s names (``{name: (home,
    attribute)}``) from ``module``'s namespace: each loads on first access and is
    cached there."""
    namespace = sys.modules[module].__dict__

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562's name
        try:
            home, attr = table[name]
        except KeyError:
            raise AttributeError(
                f"module {module!r} has no attribute {name!r}"
            ) from None
        if home == module:  # ``from package import submodule``
            value = importlib.import_module(f"{module}.{attr}")
        else:
            try:
                value = getattr(importlib.import_module(home), attr)
            except AttributeError:  # a submodule not imported yet
                value = importlib.import_module(f"{home}.{attr}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - PEP 562's name
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``__init__`` is
    ``init_file`` (see the module docstring); sets the package's ``__all__`` to the
    lazy names unless it has its own, so ``from package import *`` loads them."""
    with open(init_file, encoding="utf-8") as f:
        table = lazy_table(f.read())
    sys.modules[package].__dict__.setdefault("__all__", sorted(table))
    return _served(package, table)


def facade_exports(
    module: str,
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a facade: a module at one of Flax's
    paths whose names live elsewhere, as its entry in lens/_facades.py lists them.

    Each name loads from its home on first access and is then cached in the
    facade's namespace, so ``from lens.nnx.variablelib import Param`` and
    ``lens.nnx.Param`` are the same object and the facade costs nothing until used.
    ``__all__`` holds the public names (``from facade import *``); flax's private
    names that tests and ports reach for (``graphlib._flatten_pytree``) load too.
    """
    from lens._facades import exports_of

    table = exports_of(module)
    public = sorted(n for n in table if not n.startswith("_"))
    return (*_served(module, table), public)
