"""Globally unique ids (flax.nnx's ``ids``): a counter, not ``id()``, so an id is
never reused after its object is freed, and a copy of an id is a new id.

>>> from lens.nnx import ids
>>> a, b = ids.uuid(), ids.uuid()
>>> a == b, a == a
(False, True)
"""

from __future__ import annotations

import itertools
import threading
from typing import Any


class UUIDManager:
    """Hands out increasing :class:`UUID`\\ s, thread-safely."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = itertools.count(1)

    def __call__(self) -> UUID:
        with self._lock:
            return UUID(next(self._count))


uuid = UUIDManager()


class UUID:
    """A hashable id, equal only to itself; ``copy``/``deepcopy`` give new ids."""

    def __init__(self, rawid: int):
        self.id = rawid

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UUID) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"UUID({self.id})"

    def __deepcopy__(self, memo: Any) -> UUID:
        del memo
        return uuid()

    def __copy__(self) -> UUID:
        return uuid()


__all__ = ["UUID", "UUIDManager", "uuid"]
