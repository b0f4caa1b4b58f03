"""Displays never crash a notebook: on any error they warn and fall back to ``repr``."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class DisplayWarning(UserWarning):
    """A lens display failed and fell back to plain ``repr``."""


def plain_repr(obj: Any) -> str:
    """``repr(obj)``, or a placeholder if even that fails."""
    try:
        return object.__repr__(obj) if type(obj).__repr__ is None else repr(obj)
    except Exception:  # noqa: BLE001 - the last resort must not raise
        return f"<{type(obj).__name__} object>"


def safe(kind: str) -> Callable[[F], F]:
    """Wraps a renderer of ``obj``: an exception becomes a warning and ``repr(obj)``.

    ``kind`` is ``'text'``, ``'html'``, ``'bundle'`` or ``'rich'``; the fallback has
    the matching form.
    """

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(obj, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - displays must never raise
                warnings.warn(
                    f"lens could not display {type(obj).__name__} ({type(e).__name__}: {e}); "
                    "showing repr() instead.",
                    DisplayWarning,
                    stacklevel=2,
                )
                text = plain_repr(obj)
                if kind == "html":
                    import html

                    return f"<pre>{html.escape(text)}</pre>"
                if kind == "bundle":
                    return {"text/plain": text}
                return text

        return wrapper  # type: ignore[return-value]

    return deco
