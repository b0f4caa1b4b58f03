"""State filters: which variables a split, a ``StateAxes`` or a ``DiffState`` selects.

A filter is a predicate ``(path, value) -> bool`` or something that names one:

- a ``Variable`` subclass: variables of that type (``Param`` also selects subclasses);
- a ``str``: variables whose ``tag`` is that string (the RNG streams' names);
- ``...`` or ``True``: everything; ``None`` or ``False``: nothing;
- a tuple or list: any of its filters;
- ``All``, ``Any``, ``Not``, ``PathContains``, ``OfType``, ``WithTag``.
"""

from __future__ import annotations

import builtins
import typing
from collections.abc import Callable

Path = tuple[typing.Any, ...]


Predicate = Callable[[Path, typing.Any], bool]


def to_predicate(f: typing.Any) -> Predicate:
    """The predicate a filter stands for (see the module docstring)."""
    from lens.nnx.variablelib import Variable

    if isinstance(f, _Filter):
        return f
    if f is Ellipsis or f is True:
        return Everything()
    if f is None or f is False:
        return Nothing()
    if isinstance(f, type):
        if issubclass(f, Variable):
            return OfType(f)
        return lambda path, x: isinstance(x, f)
    if isinstance(f, str):
        return WithTag(f)
    if isinstance(f, tuple | list):
        return Any(*f)
    if callable(f):
        return typing.cast(Predicate, f)
    raise TypeError(
        f"{f!r} is not a state filter: use a Variable type (nnx.Param), a tag string, "
        "..., a tuple of filters, or a function (path, value) -> bool."
    )


class _Filter:
    def __call__(self, path: Path, x: typing.Any) -> bool:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(
            (type(self), tuple(sorted((k, repr(v)) for k, v in vars(self).items())))
        )


class Everything(_Filter):
    """Selects every variable (``...``)."""

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return True

    def __repr__(self) -> str:
        return "..."


class Nothing(_Filter):
    """Selects no variable."""

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return False

    def __repr__(self) -> str:
        return "Nothing()"


class OfType(_Filter):
    """Variables of ``type`` (or a subclass)."""

    def __init__(self, type: type):
        self.type = type

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return isinstance(x, self.type) or (
            isinstance(x, builtins.type) and issubclass(x, self.type)
        )

    def __repr__(self) -> str:
        return self.type.__name__


class WithTag(_Filter):
    """Variables whose ``tag`` metadata is ``tag`` (RNG state is tagged by stream)."""

    def __init__(self, tag: str):
        self.tag = tag

    def __call__(self, path: Path, x: typing.Any) -> bool:
        meta = getattr(x, "metadata", None)
        if isinstance(meta, dict):
            return meta.get("tag") == self.tag
        return getattr(x, "tag", None) == self.tag  # an RngStream

    def __repr__(self) -> str:
        return repr(self.tag)


class PathContains(_Filter):
    """Variables with ``key`` somewhere in their path."""

    def __init__(self, key: typing.Any, exact: bool = True):
        self.key = key
        self.exact = exact  # False: ``key`` may be part of a path entry's text

    def __call__(self, path: Path, x: typing.Any) -> bool:
        if self.exact:
            return self.key in path
        return any(str(self.key) in str(part) for part in path)

    def __repr__(self) -> str:
        return f"PathContains({self.key!r}, exact={self.exact})"


class Any(_Filter):  # noqa: A001 - Flax's name
    """Variables that any of ``filters`` selects."""

    def __init__(self, *filters: typing.Any):
        self.filters = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return builtins.any(f(path, x) for f in self.filters)

    def __repr__(self) -> str:
        return f"Any({', '.join(map(repr, self.filters))})"


class All(_Filter):
    """Variables that every one of ``filters`` selects."""

    def __init__(self, *filters: typing.Any):
        self.filters = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return builtins.all(f(path, x) for f in self.filters)

    def __repr__(self) -> str:
        return f"All({', '.join(map(repr, self.filters))})"


class Not(_Filter):
    """Variables that ``filter`` does not select."""

    def __init__(self, filter: typing.Any):
        self.filter = to_predicate(filter)

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return not self.filter(path, x)

    def __repr__(self) -> str:
        return f"Not({self.filter!r})"
