"""Transform frames and the structure epoch (flax.nnx's ``tracers``).

Objects and variables remember the transform level ("frame") they were made in: one
made outside a transform cannot be mutated inside it
(:class:`lens.errors.TraceContextError`). The structure epoch counts structural
changes, so cached graph walks know when to walk again.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

from lens import errors


class Frame:
    """One level of a lens.nnx transform (a fresh token per transformed call)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


# The innermost transform frame of this thread / task (None outside transforms).
# A context variable, so that a transform running in one thread never makes another
# thread's eager objects look captured.
_FRAME: contextvars.ContextVar[Frame | None] = contextvars.ContextVar(
    "lens_nnx_frame", default=None
)


def current_frame() -> Frame | None:
    return _FRAME.get()


@contextlib.contextmanager
def frame(name: str) -> Iterator[Frame]:
    f = Frame(name)
    token = _FRAME.set(f)
    try:
        yield f
    finally:
        _FRAME.reset(token)


# The structure epoch: bumped by every change that can alter an object graph's
# structure (an attribute set or deleted, a container item, variable metadata). A
# transform that cached a graph walk reuses it while the epoch is unchanged. This is
# a cache-invalidation counter (not per-call context), shared by all threads.
_EPOCH = [0]


_EPOCH_LOCK = threading.Lock()


def structure_epoch() -> int:
    return _EPOCH[0]


def structure_changed() -> None:
    with _EPOCH_LOCK:
        _EPOCH[0] += 1


def check_mutable(owner: Any, what: str, structural: bool = True) -> None:
    if structural:
        structure_changed()
    here = current_frame()
    made = object.__getattribute__(owner, "_lens_frame")
    if here is not None and made is not here:
        raise errors.TraceContextError(
            f"Cannot {what} of this {type(owner).__name__} inside nnx.{here.name}: it "
            "was created outside the transform and captured.\nPass it as an argument "
            "to the transformed function; its updates then come back out."
        )
