"""File helpers over the local filesystem (``lens.io``, like ``flax.io``).

Flax routes these through TensorFlow's ``gfile`` when it is installed (for
``gs://`` paths); lens uses Python's own file functions. ``set_mode`` and
``override_mode`` are accepted for ported code.

Example:
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with GFile(os.path.join(d, "a.txt"), "w") as f:
    ...     _ = f.write("hi")
    >>> listdir(d), exists(os.path.join(d, "a.txt"))
    (['a.txt'], True)
    >>> rmtree(d)
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import shutil
from collections.abc import Iterator
from enum import Enum
from typing import IO, Any

from lens import errors

__all__ = [
    "BackendMode",
    "GFile",
    "NotFoundError",
    "gfile",
    "io_mode",
    "copy",
    "exists",
    "getsize",
    "glob",
    "isdir",
    "listdir",
    "makedirs",
    "override_mode",
    "remove",
    "rename",
    "rmtree",
    "set_mode",
]


class BackendMode(Enum):
    """Which file backend to use (lens has only the local one)."""

    DEFAULT = 0
    TF = 1


io_mode = BackendMode.DEFAULT
"""The backend in use (always ``BackendMode.DEFAULT`` in lens)."""

gfile = None
"""TensorFlow's ``tf.io.gfile`` in Flax when TensorFlow is installed; lens has none."""

NotFoundError = FileNotFoundError
"""What a missing file raises (Flax's name; TensorFlow's error under its backend)."""


def _check(mode: BackendMode) -> None:
    if mode is BackendMode.TF:
        raise ValueError(
            "lens.io has no TensorFlow backend.\nUse local paths, or read remote "
            "files with a library such as fsspec and pass bytes to lens."
        )


@contextlib.contextmanager
def override_mode(override: BackendMode) -> Iterator[None]:
    """Uses ``override`` inside the ``with`` block."""
    global io_mode
    _check(override)
    old, io_mode = io_mode, override
    try:
        yield
    finally:
        io_mode = old


def set_mode(override: BackendMode) -> None:
    """Sets the backend (only ``BackendMode.DEFAULT`` exists in lens)."""
    global io_mode
    _check(override)
    io_mode = override


def GFile(name: str | os.PathLike, mode: str) -> IO[Any]:  # noqa: N802 - Flax's name
    """``open(name, mode)``."""
    return open(name, mode)  # noqa: SIM115 - returned to the caller


def listdir(path: str | os.PathLike) -> list[str]:
    """The names in directory ``path``."""
    return os.listdir(path)


def isdir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory."""
    return os.path.isdir(path)


def copy(
    src: str | os.PathLike, dst: str | os.PathLike, overwrite: bool = False
) -> None:
    """Copies file ``src`` to ``dst``.

    Raises:
      AlreadyExistsError: (a ``FileExistsError``) if ``dst`` exists and
        ``overwrite`` is False.
    """
    if os.path.exists(dst) and not overwrite:
        raise errors.AlreadyExistsError(dst)
    shutil.copy(src, dst)


def rename(
    src: str | os.PathLike, dst: str | os.PathLike, overwrite: bool = False
) -> None:
    """Renames ``src`` to ``dst``.

    Raises:
      AlreadyExistsError: (a ``FileExistsError``) if ``dst`` exists and
        ``overwrite`` is False.
    """
    if os.path.exists(dst) and not overwrite:
        raise errors.AlreadyExistsError(dst)
    os.replace(src, dst)


def exists(path: str | os.PathLike) -> bool:
    """Whether ``path`` exists."""
    return os.path.exists(path)


def makedirs(path: str | os.PathLike) -> None:
    """Creates ``path`` and its parents (no error if it exists)."""
    os.makedirs(path, exist_ok=True)


def glob(pattern: str) -> list[str]:
    """The paths matching ``pattern`` (directories without a trailing ``/``)."""
    return [path.rstrip("/") for path in _glob.glob(pattern)]


def remove(path: str | os.PathLike) -> None:
    """Deletes file ``path``."""
    os.remove(path)


def rmtree(path: str | os.PathLike) -> None:
    """Deletes directory ``path`` and everything under it."""
    shutil.rmtree(path)


def getsize(path: str | os.PathLike) -> int:
    """The size of file ``path`` in bytes."""
    return os.path.getsize(path)
