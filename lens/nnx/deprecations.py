"""Deprecated aliases for renamed functions (flax.nnx's ``deprecations``).

``old = deprecated(new)`` is ``new`` under its old name: each call warns
(:class:`DeprecationWarning`, pointing at the caller) and then runs ``new``.
``nnx.pure`` (now ``nnx.as_pure``) and ``nnx.vars_as`` (now ``nnx.with_vars``) are
made this way.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def deprecated(new_fn: F) -> F:
    """A deprecated alias of ``new_fn``: warns on every call, then calls it.

    The alias keeps ``new_fn``'s signature, annotations and docstring (with a
    deprecation notice first), so autocompletion and type checking still work.

    Args:
        new_fn: the current function the alias calls.

    Returns:
        A function that emits a :class:`DeprecationWarning` naming ``new_fn`` and
        returns ``new_fn(*args, **kwargs)``.

    Example:
        >>> import warnings
        >>> from lens.nnx.deprecations import deprecated
        >>> def new_api(x):
        ...     return x * 2
        >>> old_api = deprecated(new_api)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     old_api(3)
        6
        >>> str(caught[0].message)
        'This function is deprecated. Use new_api instead.'
    """

    @functools.wraps(new_fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"This function is deprecated. Use {new_fn.__qualname__} instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return new_fn(*args, **kwargs)

    notice = f".. deprecated::\n   Use :func:`{new_fn.__qualname__}` instead.\n\n"
    wrapper.__doc__ = notice + (new_fn.__doc__ or "")
    return wrapper  # type: ignore[return-value]
