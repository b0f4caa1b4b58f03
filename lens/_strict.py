"""Strict mode: lens raises or warns where Flax accepts a likely mistake silently.

Off by default, so lens behaves as Flax. Turn it on for the process with
``lens.strict()``, the environment variable ``LENS_STRICT=1`` (read when lens
is imported), ``lens.config.update("lens_strict", True)`` or, in a notebook,
``%lens_strict on`` (after ``%load_ext lens``); or for one block with
``with lens.strict():``, which holds for the code that block runs in its own
thread and context only (a ``contextvars`` override), and ends with the block.

Each check reads one flag (:func:`enabled`) and does nothing more when strict
mode is off. Where the result is certainly wrong strict mode raises (a
``LensError`` that is also the matching builtin error); where the code may mean
it, it warns (:class:`~lens.errors.StrictModeWarning`, at the user's line).
docs/reliability.md lists every case.

Example:
    >>> import lens
    >>> lens.is_strict()
    False
    >>> with lens.strict():
    ...     lens.is_strict()
    True
    >>> lens.is_strict()
    False
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import warnings
from types import TracebackType
from typing import Any

from lens.configurations import config

# None: follow the process flag (config.lens_strict); True/False: this context's.
_override: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "lens_strict", default=None
)


def enabled() -> bool:
    """Whether strict mode is on here: this context's override, else the process's."""
    override = _override.get()
    if override is None:
        return bool(config._values["lens_strict"])
    return override


def is_strict() -> bool:
    """Whether strict mode is on for the code running now (``lens.is_strict()``)."""
    return enabled()


class StrictMode:
    """What ``lens.strict(...)`` returns. The call itself already switched strict
    mode for the process; entered as a ``with`` block, it puts the process's
    setting back and holds the switch for the block only, in this thread and
    context (a ``contextvars`` override), until the block ends. One object may be
    entered again, nested, and from several threads."""

    def __init__(self, on: bool = True, process_before: bool | None = None):
        self._on = on
        self._process_before = process_before
        self._local = threading.local()

    def __enter__(self) -> StrictMode:
        if self._process_before is not None:  # the `with` form: not process-wide
            config.update("lens_strict", self._process_before)
            self._process_before = None
        tokens = self._local.__dict__.setdefault("tokens", [])
        tokens.append(_override.set(self._on))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _override.reset(self._local.tokens.pop())

    def __repr__(self) -> str:
        return f"lens.strict({self._on})"


def strict(enabled: bool = True, /) -> StrictMode:
    """Strict mode: raise or warn where Flax accepts a likely mistake silently.

    ``lens.strict()`` (or ``lens.strict(True)``) turns it on for the process, as
    ``LENS_STRICT=1`` and ``lens.config.update("lens_strict", True)`` do, and
    ``lens.strict(False)`` turns it off. Used as ``with lens.strict():``, it holds
    for that block only, in that thread and context.

    Args:
      enabled: on (the default) or off.

    Returns:
      A context manager, for the ``with`` form.

    Example:
        >>> import lens
        >>> with lens.strict():
        ...     lens.is_strict()
        True
        >>> lens.is_strict()
        False
    """
    if not isinstance(enabled, bool):
        raise TypeError(
            f"lens.strict takes True or False, got {enabled!r}.\nlens.strict() "
            "turns strict mode on for the process; `with lens.strict():` for a block."
        )
    before = bool(config._values["lens_strict"])
    config.update("lens_strict", enabled)
    return StrictMode(enabled, process_before=before)


def suspended() -> StrictMode:
    """Strict mode off inside the block (for lens's own code that does on purpose
    what a user's code would do by mistake)."""
    return StrictMode(False)


# ----------------------------------------------------------------- reporting

_INTERNAL = (os.path.dirname(os.path.abspath(__file__)),)  # lens/


def _internal_dirs() -> tuple[str, ...]:
    dirs = list(_INTERNAL)
    for name in ("jax", "optax"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)))
    return tuple(dirs)


def caller_level() -> int:
    """The stack level (for ``warnings.warn``) of the first frame outside lens,
    JAX, optax and generated code (a dataclass's ``__init__``): the user's line
    that led here."""
    internal = _internal_dirs()
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(internal)
        or frame.f_code.co_filename == "<string>"  # a dataclass's __init__
    ):
        frame, level = frame.f_back, level + 1
    return level


def warn(warning: Warning) -> None:
    """Emits ``warning`` at the user's line (see :func:`caller_level`)."""
    warnings.warn(warning, stacklevel=caller_level())


# ------------------------------------------------------------ notebook magic


def lens_strict_magic(line: str = "") -> None:
    """``%lens_strict [on|off]``: strict mode for the kernel; without an
    argument, says whether it is on."""
    arg = line.strip().lower()
    if arg in ("on", "true", "1", "yes"):
        strict(True)
    elif arg in ("off", "false", "0", "no"):
        strict(False)
    elif arg:
        raise ValueError(
            f"%lens_strict takes on or off, got {line.strip()!r}.\n"
            "%lens_strict on turns strict mode on for this kernel; "
            "%lens_strict alone says whether it is on."
        )
    print(f"lens strict mode is {'on' if enabled() else 'off'}.")


def load_magic(ipython: Any) -> None:
    """Registers ``%lens_strict`` in ``ipython``."""
    ipython.register_magic_function(lens_strict_magic, "line", "lens_strict")


def unload_magic(ipython: Any) -> None:
    """Removes ``%lens_strict`` from ``ipython``."""
    manager = getattr(ipython, "magics_manager", None)
    if manager is not None:
        manager.magics.get("line", {}).pop("lens_strict", None)
