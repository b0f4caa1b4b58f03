"""Module paths in JAX's name stack, while ``lens.compile_time`` traces.

JAX records the ``jax.named_scope``\\ s open around each jaxpr equation
(``eqn.source_info.name_stack``). While :data:`TRACING` is set (by
``lens.compile_time``, for the one trace it measures), lens.nn's module methods and
lens.nnx's Module ``__call__`` open one named after the module's path, marked so
it cannot be mistaken for a user's scope: ``lens.nn:/blocks/Dense_3``,
``lens.nnx:/layers/0/linear``. Otherwise a module call reads the flag and nothing
more: no scope, no change to the program.

lens.nn knows a module's path (its scope's). A lens.nnx module does not: before
tracing, ``lens.compile_time`` writes each module's path into it
(:data:`NNX_PATH`, a plain attribute, so the copies that ``nnx.jit``/``nnx.scan``
or ``jax.jit`` make inside the trace carry it) and removes it afterwards. For the
same span, the classes of those modules get a ``__call__`` that opens the scope
(:func:`patch_calls`, undone by :func:`unpatch_calls`): outside ``compile_time``
an nnx module's call is the class's own, with nothing added.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Iterable
from typing import Any

import jax

TRACING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lens_compile_time_tracing", default=False
)
"""Whether module calls name their path in JAX's name stack (this context only)."""

NN = "lens.nn:"
NNX = "lens.nnx:"
NNX_PATH = "_lens_compile_time_path"
"""The attribute that holds an nnx module's path while ``compile_time`` traces."""


def nn_scope(path: Iterable[str]) -> str:
    """The scope name of the lens.nn module at ``path`` (its scope's path)."""
    return NN + "/" + "/".join(path)


def module_path(name_stack: Any) -> tuple[str, str] | None:
    """``(framework, path)`` of the innermost module scope in ``name_stack`` (a
    ``jax`` NameStack): ``("nn", "/blocks/Dense_3")``; None outside any module."""
    for entry in reversed(getattr(name_stack, "stack", ())):
        name = getattr(entry, "name", "")
        if name.startswith(NNX):
            return "nnx", name[len(NNX) :]
        if name.startswith(NN):
            return "nn", name[len(NN) :]
    return None


# class -> (its own __call__, how many compile_time calls patched it); a registry
# of what is patched, shared by threads (a lock), not per-call context
_PATCHED: dict[type, list[Any]] = {}
_LOCK = threading.Lock()


def _named_call(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        if TRACING.get():
            path = self.__dict__.get(NNX_PATH)
            if path is not None:
                with jax.named_scope(NNX + path):
                    return call(self, *args, **kwargs)
        return call(self, *args, **kwargs)

    return __call__


def patch_calls(modules: Iterable[Any]) -> list[type]:
    """Gives the class that defines each module's ``__call__`` one that names the
    module's path while :data:`TRACING` is set; returns the classes patched."""
    classes = []
    with _LOCK:
        for module in modules:
            owner = next(
                (c for c in type(module).__mro__ if "__call__" in vars(c)), None
            )
            if owner is None or owner in classes:
                continue
            call = vars(owner)["__call__"]
            if owner in _PATCHED:
                _PATCHED[owner][1] += 1
            elif inspect.isfunction(call):
                _PATCHED[owner] = [call, 1]
                owner.__call__ = _named_call(call)  # type: ignore[method-assign]
            else:
                continue
            classes.append(owner)
    return classes


def unpatch_calls(classes: Iterable[type]) -> None:
    """Undoes :func:`patch_calls` (the last caller restores the class's own)."""
    with _LOCK:
        for owner in classes:
            entry = _PATCHED.get(owner)
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] == 0:
                owner.__call__ = entry[0]  # type: ignore[method-assign]
                del _PATCHED[owner]
