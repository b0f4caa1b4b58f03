"""Variables passed to ``apply`` that no module read: a warning naming them.

A typo'd or renamed key (``params/Dense_0/kernal``, or weights loaded under
``Dense_O`` and merged into the initialised ones) is not an error in Flax: the
module reads the name it declares and the extra value trains nothing. lens warns
with :class:`~lens.errors.UnusedVariablesWarning`, naming the paths.

What counts as read, per run of ``apply``:

* a name a scope reserved (a parameter, a variable or a child scope declared there);
* a whole subtree handed over at once (``scope.variables()``, ``collection()``;
  a lifted transform takes its module's variables this way, so the inside of a
  transformed module is never reported).

Only values beside a variable that was read are reported: a value stored in
a scope where a module declared variables of the same collection in this run,
under a name it did not declare. A whole unread subtree is never reported: a
submodule that a compact method calls only sometimes (``if train:``) or that
``apply(..., method=...)`` does not reach is a valid program. Nor is a collection
in which no module declared a variable (``intermediates``, or another collection
that ``sow`` writes only when it is mutable, returned by ``init`` and passed
back).

In strict mode (``lens.strict``) the values beside read variables raise
:class:`~lens.errors.UnusedVariablesError` instead, and every other value that
no module read, in a collection some module declared a variable of (a whole
unread submodule, a name at a scope that declared none of that collection),
warns :class:`~lens.errors.UnusedVariablesWarning` (it may be a ``method=``
call or a branch not taken).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens import _strict, errors
from lens.core._variable import plain_array_types

Path = tuple[str, ...]

_SHOWN = 8  # paths named in one warning


class Usage:
    """What the scopes of one ``apply`` declared and read (see the module doc)."""

    __slots__ = ("declared", "whole", "variables")

    def __init__(self) -> None:
        self.declared: dict[Path, set[str]] = {}  # children and variables
        self.whole: set[Path] = set()
        self.variables: set[tuple[str, Path]] = set()  # (col, path) with one

    def declare(self, path: Path, name: str, col: str | None) -> None:
        """``name`` reserved at ``path``: a child (``col=None``) or a variable."""
        self.declared.setdefault(path, set()).add(name)
        if col is not None:
            self.variables.add((col, path))

    def read_all(self, path: Path) -> None:
        self.whole.add(path)

    def unused(self, variables: Mapping[str, Any]) -> list[str]:
        """``collection/path`` of every variable no module read (see above)."""
        return self.report(variables)[0]

    def report(
        self, variables: Mapping[str, Any], unreached: bool = False
    ) -> tuple[list[str], list[str]]:
        """The values beside read variables, and (with ``unreached``, strict
        mode) the other unread values and subtrees of the collections a module
        declared a variable of, each as ``collection/path``."""
        beside: list[str] = []
        others: list[str] = []
        declared_cols = {col for col, _ in self.variables} if unreached else set()
        for col, tree in variables.items():
            if isinstance(tree, Mapping):
                found: list[Path] = []
                missed: list[Path] = []
                keep = missed if col in declared_cols else None
                self._walk(col, tree, (), found, keep)
                beside.extend("/".join((col, *p)) for p in found)
                others.extend("/".join((col, *p)) for p in missed)
        return beside, others

    def _walk(
        self,
        col: str,
        tree: Mapping[str, Any],
        path: Path,
        found: list[Path],
        missed: list[Path] | None,
    ) -> None:
        if path in self.whole:
            return
        names = self.declared.get(path)
        if names is None:  # no module ran here
            if missed is not None and tree:
                missed.append(path)
            return
        read_here = (col, path) in self.variables
        declared = self.declared
        for name, value in tree.items():
            key = name if type(name) is str else str(name)
            if key not in names:
                sub = (*path, key)
                if read_here and not isinstance(value, Mapping):
                    found.append(sub)
                elif missed is not None:
                    missed.append(sub)
            elif type(value) not in plain_array_types and isinstance(value, Mapping):
                # (an array, the common leaf, is no Mapping: no ABC check for it)
                sub = (*path, key)
                if sub in declared:
                    self._walk(col, value, sub, found, missed)


def warn_unused(usage: Usage, variables: Mapping[str, Any]) -> None:
    """Warns once per ``apply`` if some of ``variables`` were never read; in
    strict mode raises for values beside read variables and warns for the rest."""
    strict = _strict.enabled()
    beside, others = usage.report(variables, unreached=strict)
    if strict and beside:
        raise errors.UnusedVariablesError(beside[:_SHOWN], len(beside))
    if beside or others:
        paths = beside or others
        _strict.warn(errors.UnusedVariablesWarning(paths[:_SHOWN], len(paths)))
