"""Collection filters: which collections (or rng streams) a rule applies to.

A filter is ``True`` (everything), ``False`` (nothing), a name, a collection of names,
or ``DenyList(filter)`` (everything the inner filter does not match).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, Union

from lens.errors import InvalidFilterError

Filter = Union[bool, str, Sequence[str], "DenyList"]
CollectionFilter = Filter
PRNGSequenceFilter = Filter
T = TypeVar("T")


@dataclasses.dataclass(frozen=True, eq=True)
class DenyList:
    """Matches every collection except those the wrapped filter matches.

    Example:
        >>> in_filter(DenyList(["params"]), "batch_stats")
        True
        >>> in_filter(DenyList("params"), "params")
        False
    """

    deny: Any

    def __post_init__(self) -> None:
        _check(self.deny)
        if isinstance(self.deny, list | set):
            object.__setattr__(self, "deny", tuple(sorted(self.deny)))

    def __hash__(self) -> int:
        return hash(("DenyList", _canonical(self.deny)))


def _check(f: Any) -> None:
    if isinstance(f, bool | str | DenyList):
        return
    if isinstance(f, list | tuple | set | frozenset):
        for x in f:
            if not isinstance(x, str):
                raise InvalidFilterError(f)
        return
    raise InvalidFilterError(f)


def _canonical(f: Any) -> Any:
    """A hashable form of a filter, equal for filters that match the same names."""
    if isinstance(f, bool):
        return f
    if isinstance(f, str):
        return frozenset((f,))
    if isinstance(f, DenyList):
        inner = _canonical(f.deny)
        if inner is True:
            return False
        if inner is False:
            return True
        return DenyList(tuple(sorted(inner)) if isinstance(inner, frozenset) else inner)
    _check(f)
    names = frozenset(f)
    return names if names else False


def canonical_filter(f: Filter) -> Any:
    """Returns a hashable canonical form of ``f`` (used as a cache key)."""
    return _canonical(f)


def in_filter(filter_like: Filter, col: str) -> bool:
    """Returns whether the filter matches the collection name ``col``.

    Example:
        >>> in_filter(["params", "batch_stats"], "params"), in_filter(False, "params")
        (True, False)
    """
    if filter_like is True:
        return True
    if filter_like is False:
        return False
    if isinstance(filter_like, str):
        return col == filter_like
    if isinstance(filter_like, DenyList):
        return not in_filter(filter_like.deny, col)
    if isinstance(filter_like, list | tuple | set | frozenset):
        return col in filter_like
    raise InvalidFilterError(filter_like)


def filter_to_set(f: Filter) -> set[str]:
    """Returns the names an allow-list filter matches (``True``/DenyList raise)."""
    c = _canonical(f)
    if c is False:
        return set()
    if isinstance(c, frozenset):
        return set(c)
    raise ValueError(f"filter {f!r} matches an open set of names")


def union_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what ``a`` or ``b`` matches.

    Example:
        >>> sorted(union_filters("params", ["batch_stats"]))
        ['batch_stats', 'params']
    """
    a, b = _canonical(a), _canonical(b)
    if a is True or b is True:
        return True
    if a is False:
        return _decanon(b)
    if b is False:
        return _decanon(a)
    if isinstance(a, DenyList) and isinstance(b, DenyList):
        return _decanon(_canonical(DenyList(intersect_filters(a.deny, b.deny))))
    if isinstance(a, DenyList):
        return _decanon(_canonical(DenyList(subtract_filters(a.deny, b))))
    if isinstance(b, DenyList):
        return _decanon(_canonical(DenyList(subtract_filters(b.deny, a))))
    return _decanon(a | b)


def intersect_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what both ``a`` and ``b`` match.

    Example:
        >>> intersect_filters(True, ["params"])
        ('params',)
    """
    a, b = _canonical(a), _canonical(b)
    if a is False or b is False:
        return False
    if a is True:
        return _decanon(b)
    if b is True:
        return _decanon(a)
    if isinstance(a, DenyList) and isinstance(b, DenyList):
        return _decanon(_canonical(DenyList(union_filters(a.deny, b.deny))))
    if isinstance(a, DenyList):
        return subtract_filters(b, a.deny)
    if isinstance(b, DenyList):
        return subtract_filters(a, b.deny)
    return _decanon(a & b)


def subtract_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what ``a`` matches and ``b`` does not.

    Example:
        >>> subtract_filters(["params", "cache"], "cache")
        ('params',)
    """
    a, b = _canonical(a), _canonical(b)
    if a is False or b is True:
        return False
    if b is False:
        return _decanon(a)
    if a is True:
        return _decanon(_canonical(DenyList(_decanon(b))))
    if isinstance(a, DenyList):
        return _decanon(_canonical(DenyList(union_filters(a.deny, _decanon(b)))))
    if isinstance(b, DenyList):
        return intersect_filters(_decanon(a), b.deny)
    return _decanon(a - b)


def _decanon(c: Any) -> Filter:
    if isinstance(c, frozenset):
        return tuple(sorted(c)) if c else False
    return c


def group_collections(
    xs: Mapping[str, T], col_filters: Sequence[Filter]
) -> tuple[dict[str, T], ...]:
    """Splits ``xs`` into one dict per filter; each key goes to the first match.

    Keys that match no filter are left out.

    Example:
        >>> group_collections({"params": 1, "batch_stats": 2, "cache": 3},
        ...                   [["params"], True])
        ({'params': 1}, {'batch_stats': 2, 'cache': 3})
    """
    groups: list[dict[str, T]] = [{} for _ in col_filters]
    for key, value in xs.items():
        for i, f in enumerate(col_filters):
            if in_filter(f, key):
                groups[i][key] = value
                break
    return tuple(groups)


def first_match(name: str, col_filters: Iterable[Filter]) -> int | None:
    """Index of the first filter that matches ``name``, or None."""
    for i, f in enumerate(col_filters):
        if in_filter(f, name):
            return i
    return None
