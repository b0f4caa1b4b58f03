"""Displays never crash a notebook: on any error they warn once and fall back to text.

This is the one fallback of lens.display: every guarded renderer (a View's forms,
the registry's protocols, ``view_of``, the ``%load_ext`` formatters) goes through
``safe``.
"""

from __future__ import annotations

import contextvars
import functools
import html
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# ids of the objects whose display is failing right now (in this thread or task).
# While an object is here, its fallback text does not ask its own repr again: a
# view whose text form raises would otherwise recurse (repr -> fallback -> repr).
_FAILING: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "lens_display_failing", default=frozenset()
)


class DisplayWarning(UserWarning):
    """A lens display failed and fell back to plain ``repr``."""


def plain_repr(obj: Any) -> str:
    """``repr(obj)``, or ``object.__repr__`` when that fails or is already failing."""
    failing = _FAILING.get()
    if id(obj) in failing:
        return _last_resort(obj)
    token = _FAILING.set(failing | {id(obj)})
    try:
        return object.__repr__(obj) if type(obj).__repr__ is None else repr(obj)
    except Exception:  # noqa: BLE001 - the last resort must not raise
        return _last_resort(obj)
    finally:
        _FAILING.reset(token)


def _last_resort(obj: Any) -> str:
    try:
        return object.__repr__(obj)
    except Exception:  # noqa: BLE001 - the last resort must not raise
        return f"<{type(obj).__name__} object>"


def fallback(obj: Any, kind: str, error: BaseException | None = None) -> Any:
    """What a failed renderer of ``obj`` shows instead, in the form ``kind``.

    ``kind`` is ``'text'`` (a string), ``'html'`` (``<pre>`` of the text),
    ``'bundle'`` (``{'text/plain': text}``) or ``'object'`` (``obj`` itself, for
    IPython to show with its own repr). Warns with ``DisplayWarning`` unless this
    object's display is already failing further up (one failure, one warning).
    """
    if error is not None and id(obj) not in _FAILING.get():
        warnings.warn(
            f"lens could not display {type(obj).__name__} ({type(error).__name__}: "
            f"{error}); showing repr() instead.",
            DisplayWarning,
            stacklevel=3,
        )
    if kind == "object":
        return obj
    text = plain_repr(obj)
    if kind == "html":
        return f"<pre>{html.escape(text)}</pre>"
    if kind == "bundle":
        return {"text/plain": text}
    return text


def safe(kind: str) -> Callable[[F], F]:
    """Wraps a renderer of ``obj``: an exception becomes ``fallback(obj, kind)``.

    ``kind`` is ``'text'``, ``'html'``, ``'bundle'``, ``'rich'`` or ``'object'``;
    the fallback has the matching form.
    """

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(obj, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - displays must never raise
                return fallback(obj, kind, e)

        return wrapper  # type: ignore[return-value]

    return deco
