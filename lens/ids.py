"""Unique ids for module instances (``lens.ids``, like ``flax.ids``).

``id()`` is a recyclable address; these ids are never reused, so the sharing of
one submodule by several attributes survives clones. A copy is a new module and
gets a new id.

Example:
    >>> a, b = uuid(), uuid()
    >>> a == a, a == b
    (True, False)
"""

from __future__ import annotations

import threading
from typing import Any


class ModuleId:
    """A unique, hashable id; ``copy``/``deepcopy`` give a new one."""

    __slots__ = ("id",)

    def __init__(self, rawid: int):
        self.id = rawid

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleId) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"ModuleId({self.id})"

    def __copy__(self) -> ModuleId:
        return uuid()

    def __deepcopy__(self, memo: Any) -> ModuleId:
        return uuid()

    def __setstate__(self, state: Any) -> None:
        # lens pickles its slot as (None, {"id": n}); flax's FlaxId has no
        # slots and pickles {"id": n} (a Linen module pickled by flax)
        if isinstance(state, tuple):
            state = state[1]
        self.id = state["id"]


FlaxId = ModuleId
"""Flax's name for :class:`ModuleId`."""


class UUIDManager:
    """Hands out increasing ids (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._id = 0

    def __call__(self) -> ModuleId:
        with self._lock:
            self._id += 1
            return ModuleId(self._id)


uuid = UUIDManager()
"""A new :class:`ModuleId`: ``uuid()``."""

__all__ = ["FlaxId", "ModuleId", "UUIDManager", "uuid"]
