"""State filters: which variables a split, a ``StateAxes`` or a ``DiffState`` selects.

A filter is a predicate ``(path, value) -> bool`` or something that names one:

- a ``Variable`` subclass: variables of that type (``Param`` also selects subclasses);
- a ``str``: variables whose ``tag`` is that string (the RNG streams' names);
- ``...`` or ``True``: everything; ``None`` or ``False``: nothing;
- a tuple or list: any of its filters;
- ``All``, ``Any``, ``Not``, ``PathContains``, ``PathIn``, ``OfType``, ``WithTag``.
"""

from __future__ import annotations

import builtins
import types
import typing
from collections.abc import Callable

from lens import errors
from lens._facades import show_at_flax_paths

Path = tuple[typing.Any, ...]


Predicate = Callable[[Path, typing.Any], bool]

# flax.nnx's names for what a filter may be (see the module docstring).
FilterLiteral = typing.Union[type, str, Predicate, bool, "types.EllipsisType", None]  # noqa: UP007
Filter = typing.Union[FilterLiteral, tuple["Filter", ...], list["Filter"]]  # noqa: UP007


class HasTag(typing.Protocol):
    """What :class:`WithTag` selects: something with a ``tag``."""

    tag: str


def to_predicate(filter: typing.Any) -> Predicate:  # noqa: A002 - Flax's name
    """The predicate a filter stands for (see the module docstring)."""
    from lens.nnx._variables.variable import Variable

    f = filter
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
    raise errors.InvalidStateFilterError(f)


def filters_to_predicates(
    filters: typing.Sequence[typing.Any],
) -> tuple[Predicate, ...]:
    """The predicates of ``filters``, in order; ``...``/``True`` only at the end.

    Raises:
        ValueError: ``...`` or ``True`` before a filter that is not one of them
            (everything would already be taken by it).
    """
    for i, f in enumerate(filters):
        rest = filters[i + 1 :]
        if _is_everything(f) and not builtins.all(_is_everything(g) for g in rest):
            raise ValueError(
                "`...` or `True` can only be used as the last filters, "
                f"got {f} it at index {i}.\nEverything is taken by the first `...`: "
                "move it to the end of the filters."
            )
    return tuple(to_predicate(f) for f in filters)


def _is_everything(f: typing.Any) -> bool:
    return f is Ellipsis or f is True


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
        return "Everything()"


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
        return f"OfType({self.type!r})"


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
        return f"WithTag({self.tag!r})"


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


class PathIn(_Filter):
    """Variables at exactly one of ``paths`` (tuples of keys)."""

    def __init__(self, *paths: Path):
        self.paths = frozenset(paths)

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return tuple(path) in self.paths

    def __repr__(self) -> str:
        return f"PathIn({','.join(map(repr, self.paths))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathIn) and self.paths == other.paths

    def __hash__(self) -> int:
        return hash(self.paths)


class _Combination(_Filter):
    """Variables selected by a combination of ``filters``: :class:`Any`, :class:`All`."""

    def __init__(self, *filters: typing.Any):
        self.predicates = tuple(to_predicate(f) for f in filters)

    @property
    def filters(self) -> tuple[Predicate, ...]:
        """``predicates`` (lens's earlier name)."""
        return self.predicates

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.predicates))})"


class Any(_Combination):  # noqa: A001 - Flax's name
    """Variables that any of ``filters`` selects."""

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return builtins.any(f(path, x) for f in self.predicates)


class All(_Combination):
    """Variables that every one of ``filters`` selects."""

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return builtins.all(f(path, x) for f in self.predicates)


class Not(_Filter):
    """Variables that ``collection_filter`` does not select."""

    def __init__(self, collection_filter: typing.Any, /):
        self.predicate = to_predicate(collection_filter)

    @property
    def filter(self) -> Predicate:
        """``predicate`` (lens's earlier name)."""
        return self.predicate

    def __call__(self, path: Path, x: typing.Any) -> bool:
        return not self.predicate(path, x)

    def __repr__(self) -> str:
        return f"Not({self.predicate!r})"


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
