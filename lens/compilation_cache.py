"""JAX's persistent compilation cache, on by default in notebooks.

Notebook users restart kernels all day; without a persistent cache every restart
compiles every jitted function again. ``%load_ext lens`` calls
:func:`enable_compilation_cache`, which points JAX's cache at a per-user folder,
so the first jitted train step after a restart loads the compiled program instead
of compiling it.

- Where: ``$LENS_COMPILATION_CACHE_DIR``, else ``$XDG_CACHE_HOME/lens/jax``, else
  ``~/.cache/lens/jax``.
- Opt out: set ``LENS_COMPILATION_CACHE=0`` before ``%load_ext lens`` (or call
  :func:`disable_compilation_cache`). A cache folder you set yourself
  (``jax.config.update("jax_compilation_cache_dir", ...)``) is left alone.
- Size: at most ``LENS_COMPILATION_CACHE_MAX_BYTES`` (default 2 GiB); JAX evicts
  the least recently used programs beyond it.
- Only programs that took at least ``LENS_COMPILATION_CACHE_MIN_SECONDS`` (default
  0.1 s) to compile are stored (smaller ones compile again faster than they load).
"""

from __future__ import annotations

import os
import pathlib

import jax

DEFAULT_MAX_BYTES = 2 << 30
MIN_COMPILE_SECONDS = 0.1


def default_cache_dir() -> pathlib.Path:
    """The per-user folder lens uses for JAX's compilation cache."""
    env = os.environ.get("LENS_COMPILATION_CACHE_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "lens" / "jax"


def enable_compilation_cache(
    path: str | os.PathLike[str] | None = None,
    *,
    max_bytes: int | None = None,
    min_compile_seconds: float | None = None,
) -> pathlib.Path | None:
    """Turns on JAX's persistent compilation cache in ``path`` (a per-user default).

    Returns the folder in use, or None when the cache stays off: opted out with
    ``LENS_COMPILATION_CACHE=0``, or the folder cannot be created. A folder already
    set in ``jax.config`` is kept (and returned).

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> enable_compilation_cache(folder) == pathlib.Path(folder)
        True
        >>> disable_compilation_cache()
    """
    if os.environ.get("LENS_COMPILATION_CACHE", "1").strip().lower() in (
        "0",
        "false",
        "no",
        "off",
    ):
        return None
    current = jax.config.values["jax_compilation_cache_dir"]
    if current and path is None:
        return pathlib.Path(current)
    folder = pathlib.Path(path) if path is not None else default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if max_bytes is None:
        max_bytes = int(
            os.environ.get("LENS_COMPILATION_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)
        )
    if min_compile_seconds is None:
        min_compile_seconds = float(
            os.environ.get("LENS_COMPILATION_CACHE_MIN_SECONDS", MIN_COMPILE_SECONDS)
        )
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_seconds)
    jax.config.update("jax_compilation_cache_max_size", max_bytes)
    _reset_jax_cache()
    return folder


def disable_compilation_cache() -> None:
    """Turns JAX's persistent compilation cache off again."""
    jax.config.update("jax_compilation_cache_dir", None)
    _reset_jax_cache()


def _reset_jax_cache() -> None:
    # JAX opens its cache once, on the first compile: a folder set later is only
    # used after the cache object is reset.
    try:
        from jax._src import compilation_cache

        compilation_cache.reset_cache()
    except (ImportError, AttributeError):  # pragma: no cover - older/newer JAX
        pass


__all__ = [
    "default_cache_dir",
    "disable_compilation_cache",
    "enable_compilation_cache",
]
