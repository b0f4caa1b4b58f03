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


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``__init__`` is
    ``init_file`` (see the module docstring); sets the package's ``__all__`` to the
    lazy names unless it has its own, so ``from package import *`` loads them."""
    with open(init_file, encoding="utf-8") as f:
        table = lazy_table(f.read())
    namespace = sys.modules[package].__dict__
    namespace.setdefault("__all__", sorted(table))

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562's name
        try:
            module_name, attr = table[name]
        except KeyError:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            ) from None
        module = importlib.import_module(module_name)
        if module_name == package:  # ``from package import submodule``
            value = importlib.import_module(f"{package}.{attr}")
        else:
            try:
                value = getattr(module, attr)
            except AttributeError:
                value = importlib.import_module(f"{module_name}.{attr}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - PEP 562's name
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
