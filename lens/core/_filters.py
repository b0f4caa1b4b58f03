"""Collection filters: which collections (or rng streams) a rule applies to.

A filter is ``True`` (everything), ``False`` (nothing), a name, a collection of names,
or ``DenyList(filter)`` (everything the inner filter does not match). The set
operations return what Flax returns (sets of names, or a ``DenyList``), so filters
compare equal across the two libraries.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, Union

from lens._facades import show_at_flax_paths
from lens.errors import InvalidFilterError

Filter = Union[bool, str, typing.Collection[str], "DenyList"]
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
        if isinstance(self.deny, list | set):
            # Equal to Flax's DenyList(set) and hashable (a dict key in axes maps).
            object.__setattr__(self, "deny", tuple(sorted(self.deny)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenyList):
            return NotImplemented
        return _canonical(self) == _canonical(other)

    def __hash__(self) -> int:
        return hash(("DenyList", _canonical(self.deny)))

    def __lt__(self, other: object) -> bool:
        if isinstance(other, str):
            return False
        if isinstance(other, DenyList):
            return str(self.deny) < str(other.deny)
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, str):
            return True
        if isinstance(other, DenyList):
            return str(self.deny) > str(other.deny)
        return NotImplemented


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
        return ("deny", inner)
    if isinstance(f, typing.Collection):
        for x in f:
            if not isinstance(x, str):
                raise InvalidFilterError(f)
        names = frozenset(f)
        return names if names else False
    raise InvalidFilterError(f)


def canonical_filter(f: Filter) -> Any:
    """Returns a hashable canonical form of ``f`` (used as a cache key)."""
    return _canonical(f)


def is_filter_empty(filter_like: Filter) -> bool:
    """Whether the filter matches nothing (``False``, ``[]``, ``DenyList(True)``).

    A name is never empty.
    """
    if isinstance(filter_like, str):
        return False
    if isinstance(filter_like, bool):
        return not filter_like
    if isinstance(filter_like, DenyList):
        return _canonical(filter_like) is False
    if isinstance(filter_like, typing.Collection):
        return not filter_like
    raise InvalidFilterError(filter_like)


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
    if isinstance(filter_like, typing.Collection):
        return col in filter_like
    raise InvalidFilterError(filter_like)


def filter_to_set(x: Filter) -> set[str]:
    """The names an allow-list filter matches.

    Raises:
      ValueError: for ``True`` or a ``DenyList`` (an open set of names).
    """
    if x is True or isinstance(x, DenyList):
        raise ValueError(f"The filter {x!r} matches an open set of names.")
    if x is False:
        return set()
    if isinstance(x, str):
        return {x}
    if isinstance(x, typing.Collection):
        return set(x)
    raise InvalidFilterError(x)


def union_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what ``a`` or ``b`` matches.

    Example:
        >>> sorted(union_filters("params", ["batch_stats"]))
        ['batch_stats', 'params']
    """
    if a is True or b is True:
        return True
    if isinstance(a, DenyList) and isinstance(b, DenyList):
        return DenyList(intersect_filters(a.deny, b.deny))
    if isinstance(b, DenyList):
        a, b = b, a
    if isinstance(a, DenyList):
        return DenyList(subtract_filters(a.deny, b))
    return filter_to_set(a) | filter_to_set(b)


def subtract_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what ``a`` matches and ``b`` does not.

    Example:
        >>> subtract_filters(["params", "cache"], "cache")
        {'params'}
    """
    if b is True:
        return False
    if a is True:
        return DenyList(b)
    if isinstance(a, DenyList) and isinstance(b, DenyList):
        return subtract_filters(b.deny, a.deny)
    if isinstance(a, DenyList):
        return DenyList(union_filters(a.deny, b))
    if isinstance(b, DenyList):
        return intersect_filters(a, b.deny)
    return filter_to_set(a) - filter_to_set(b)


def intersect_filters(a: Filter, b: Filter) -> Filter:
    """A filter matching what both ``a`` and ``b`` match.

    Example:
        >>> intersect_filters(True, ["params"])
        ['params']
    """
    if a is True:
        return b
    if b is True:
        return a
    if isinstance(a, DenyList) and isinstance(b, DenyList):
        return DenyList(union_filters(b.deny, a.deny))
    if isinstance(b, DenyList):
        a, b = b, a
    if isinstance(a, DenyList):
        return subtract_filters(b, a.deny)
    return filter_to_set(a) & filter_to_set(b)


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


show_at_flax_paths(__name__)
