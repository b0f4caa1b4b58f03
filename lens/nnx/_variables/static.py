"""Static values in a GraphDef or a jit cache key: hashable ones compared by
equality, others by identity (:class:`StaticValue`), and a Variable's metadata
frozen into such values (:func:`freeze_metadata`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def freeze_metadata(meta: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, StaticValue(v)) for k, v in sorted(meta.items()))


class StaticValue:
    """A static value compared by equality when hashable, else by identity."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: Any):
        self.value = value
        self._hash: int | None = None  # computed once: jit hashes its key per call

    def _key(self) -> Any:
        try:
            hash(self.value)
        except TypeError:
            return ("id", id(self.value))
        return ("eq", type(self.value), self.value)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, StaticValue):
            return NotImplemented
        a, b = self._key(), other._key()
        if a[0] != b[0]:
            return False
        return a == b if a[0] == "id" else (a[1] is b[1] and _eq(a[2], b[2]))

    def __hash__(self) -> int:
        if self._hash is None:
            k = self._key()
            self._hash = hash(k[:2]) if k[0] == "eq" else hash(k)
        return self._hash

    def __repr__(self) -> str:
        return repr(self.value)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b
