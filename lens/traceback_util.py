"""Hiding lens's own frames from tracebacks (``lens.traceback_util``).

When an error raised in user code passes through a JAX transform, JAX filters
the traceback (``jax_traceback_filtering``): registered library files are left
out, so the traceback shows the user's code. lens registers its module and
lifting internals; ``config.flax_filter_frames`` (default True) decides whether
they are hidden, and :func:`show_lens_in_tracebacks` shows them again (to debug
lens itself).

Example:
    >>> show_lens_in_tracebacks()
    >>> hide_lens_in_tracebacks()
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any, TypeVar

# jax.extend's module, from its home: importing the jax.extend package loads
# Pallas (~12 ms of every first model).
from jax._src import source_info_util
from jax._src import traceback_util as _jax_tb

from lens.configurations import config

_lens_exclusions: set[str] = set()
_flax_exclusions = _lens_exclusions  # Flax's name, for ported tests

_F = TypeVar("_F", bound=Callable[..., Any])


def api_boundary(
    fun: _F, *, repro_api_name: str | None = None, repro_user_func: bool = False
) -> _F:
    """Marks ``fun`` as a public entry point: frames below it are lens's own and
    are hidden from filtered tracebacks (JAX's ``api_boundary``, whose options
    ``repro_api_name`` and ``repro_user_func`` pass through)."""
    return _jax_tb.api_boundary(
        fun, repro_api_name=repro_api_name, repro_user_func=repro_user_func
    )


def _filtering() -> bool:
    return bool(config.flax_filter_frames)


def register_exclusion(path: str) -> None:
    """Marks a lens source file (or directory prefix) as internal."""
    _lens_exclusions.add(path)
    if _filtering():
        _jax_tb.register_exclusion(path)
        source_info_util.register_exclusion(path)


def hide_lens_in_tracebacks() -> None:
    """Hides lens's internal frames from filtered tracebacks."""
    for path in _lens_exclusions:
        if path not in _jax_tb._exclude_paths:
            _jax_tb._exclude_paths.append(path)


def show_lens_in_tracebacks() -> None:
    """Shows lens's internal frames in tracebacks again."""
    for path in _lens_exclusions:
        if path in _jax_tb._exclude_paths:
            _jax_tb._exclude_paths.remove(path)


hide_flax_in_tracebacks = hide_lens_in_tracebacks
show_flax_in_tracebacks = show_lens_in_tracebacks

_HERE = pathlib.Path(__file__).parent
for _rel in (
    "core/_scope.py",
    "core/_entry.py",
    "core/_variable.py",
    "core/lift",
    "nn/_module.py",
    "nn/_module_entry.py",
    "nn/_module_vars.py",
    "nn/_module_support.py",
    "nn/_lifting.py",
    "nn/_transforms.py",
    "nnx/transforms",
    "nnx/_transforms",
    "nnx/_graph",
    "nnx/_objects",
    "nnx/_variables/state.py",
    "nnx/tracers.py",
    "nnx/pytreelib.py",
    "nnx/helpers.py",
    "nnx/bridge",
):
    register_exclusion(str(_HERE / _rel))

__all__ = [
    "api_boundary",
    "hide_flax_in_tracebacks",
    "hide_lens_in_tracebacks",
    "register_exclusion",
    "show_flax_in_tracebacks",
    "show_lens_in_tracebacks",
]
