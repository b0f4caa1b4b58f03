"""Per-call context of the Module system, in ``contextvars``.

Which module's method is running (so a submodule created in it knows its parent),
the method interceptors, what ``capture_intermediates`` captures, the call records
of ``tabulate``, and whether methods run under ``jax.named_scope``. Each thread
(and each notebook kernel) has its own context, so models run in threads do not
see each other's state.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from lens._facades import show_at_flax_paths

_module_stack: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "lens_module_stack", default=(None,)
)
_capture_stack: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "lens_capture_stack", default=()
)
_interceptors: contextvars.ContextVar[tuple[Callable[..., Any], ...]] = (
    contextvars.ContextVar("lens_interceptors", default=())
)
_call_info: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "lens_call_info", default=()
)
_named_call: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "lens_named_call", default=None
)


def current_module() -> Any:
    """The module whose method is running (None at the top level)."""
    return _module_stack.get()[-1]


@contextlib.contextmanager
def pushed(var: contextvars.ContextVar[tuple[Any, ...]], item: Any) -> Iterator[None]:
    """``var`` with ``item`` appended while the ``with`` block runs."""
    token = var.set(var.get() + (item,))
    try:
        yield
    finally:
        var.reset(token)


def push(var: contextvars.ContextVar[tuple[Any, ...]], item: Any) -> Any:
    """Appends ``item`` to ``var``; returns the token for :func:`pop`."""
    return var.set(var.get() + (item,))


def pop(var: contextvars.ContextVar[Any], token: Any) -> None:
    """Undoes :func:`push`."""
    var.reset(token)


def use_named_call() -> bool:
    """Whether module methods run under ``jax.named_scope``."""
    override = _named_call.get()
    if override is not None:
        return override
    from lens.configurations import config

    return bool(config.flax_profile)


def enable_named_call() -> None:
    """Runs every module method under ``jax.named_scope`` (the default).

    The module's name then labels its operations in profiles.
    """
    from lens.configurations import config

    config.update("flax_profile", True)


def disable_named_call() -> None:
    """Stops running module methods under ``jax.named_scope``."""
    from lens.configurations import config

    config.update("flax_profile", False)


@contextlib.contextmanager
def override_named_call(enable: bool = True) -> Iterator[None]:
    """Turns named calls on or off inside a ``with`` block (this context only)."""
    token = _named_call.set(enable)
    try:
        yield
    finally:
        _named_call.reset(token)


class _StackView:
    """One of Flax's ``_context`` stacks, read from and written to a contextvar.

    Flax's stacks are lists that code pushes to and pops from
    (``_context.call_info_stack.append(...)``); here each push or pop sets the
    contextvar, so it stays this context's own.
    """

    __slots__ = ("_var",)

    def __init__(self, var: contextvars.ContextVar[tuple[Any, ...]]) -> None:
        self._var = var

    def __getitem__(self, i: Any) -> Any:
        return self._var.get()[i]

    def __len__(self) -> int:
        return len(self._var.get())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._var.get())

    def __bool__(self) -> bool:
        return bool(self._var.get())

    def __eq__(self, other: object) -> bool:
        return list(self._var.get()) == other

    __hash__ = None  # type: ignore[assignment]

    def append(self, item: Any) -> None:
        self._var.set(self._var.get() + (item,))

    def pop(self, i: int = -1) -> Any:
        items = list(self._var.get())
        item = items.pop(i)
        self._var.set(tuple(items))
        return item

    def __repr__(self) -> str:
        return repr(list(self._var.get()))


class _ContextView:
    """Flax's ``module._context``, read from and written to lens's contextvars
    (for ported code)."""

    module_stack = property(lambda self: _StackView(_module_stack))
    capture_stack = property(lambda self: _StackView(_capture_stack))
    call_info_stack = property(lambda self: _StackView(_call_info))


flax_context = _ContextView()
"""What ``flax.linen.module._context`` is in Flax (``lens.nn.module._context``)."""

show_at_flax_paths(__name__)
