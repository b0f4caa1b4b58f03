"""The base of every lens error: the docs pointer, pickling, Flax's name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def path_text(path: Sequence[Any] | str) -> str:
    """Renders a scope path as ``/a/b`` (``/`` for the root); strings pass through."""
    if isinstance(path, str):
        return path
    return "/" + "/".join(str(p) for p in path)


FLAX_ERROR_NAMES = frozenset({
    "AlreadyExistsError", "ApplyModuleInvalidMethodError",
    "ApplyScopeInvalidVariablesStructureError", "ApplyScopeInvalidVariablesTypeError",
    "AssignSubModuleError", "CallCompactUnboundModuleError",
    "CallSetupUnboundModuleError", "CallShareScopeOnUnboundModuleError",
    "CallUnbindOnUnboundModuleError", "CursorFindError", "DescriptorAttributeError",
    "ImmutableVariableError", "IncorrectPostInitOverrideError",
    "InvalidCheckpointError", "InvalidFilterError", "InvalidInstanceModuleError",
    "InvalidRngError", "InvalidScopeError", "JaxTransformError", "LazyInitError",
    "MPACheckpointingRequiredError", "MPARestoreDataCorruptedError",
    "MPARestoreTargetRequiredError", "ModifyScopeVariableError",
    "MultipleMethodsCompactError", "NameInUseError", "PartitioningUnspecifiedError",
    "ReservedModuleAttributeError", "ScopeCollectionNotFound",
    "ScopeParamNotFoundError", "ScopeParamShapeError", "ScopeVariableNotFoundError",
    "SetAttributeFrozenModuleError", "SetAttributeInModuleSetupError",
    "TraceContextError", "TransformTargetError", "TransformedMethodReturnValueError",
    "TraverseTreeError",
})  # fmt: skip
"""The error classes Flax has (``flax.errors``): their docs anchor is Flax's
``#flax.errors.<Name>``, so a pattern or test written for Flax's pointer matches."""


def doc_anchor(cls: type) -> str:
    """The anchor of ``cls`` in docs/errors.md: ``flax.errors.<Name>`` for an error
    Flax also has (as Flax's own pointer ends), the lowercased name otherwise."""
    name = cls.__name__
    return f"flax.errors.{name}" if name in FLAX_ERROR_NAMES else name.lower()


def doc_pointer(cls: type) -> str:
    """What ends the first line of every message of ``cls``, as Flax's link does."""
    return f"(docs: help(lens.errors.{cls.__name__}), docs/errors.md#{doc_anchor(cls)})"


def _rebuild(
    cls: type[Exception], message: str, notes: Sequence[str] = ()
) -> Exception:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    for note in notes:
        err.add_note(note)
    return err


class LensError(Exception):
    """Base class of every error lens raises on purpose.

    The message is built by each subclass's constructor; ``__reduce__`` rebuilds
    an error from its message, so errors pickle whatever their constructor takes.
    """

    # True where Flax's own tests compare the whole message literally (serialization):
    # the message is then Flax's first line alone, and lens's lines (where, how to
    # fix, the docs pointer) become notes, which tracebacks show after it.
    flax_literal_message: bool = False

    def __init__(self, message: str = ""):
        # Like Flax's "<message> (<link>)": the pointer ends the first line, so a
        # pattern written for Flax's first line still matches; lens's lines on
        # where and how to fix follow.
        pointer = doc_pointer(type(self))
        if self.flax_literal_message:
            first, _, rest = message.partition("\n")
            super().__init__(first)
            for note in (rest, pointer):
                if note:
                    self.add_note(note)
            return
        if pointer not in message:
            first, sep, rest = message.partition("\n")
            message = f"{first} {pointer}{sep}{rest}" if first else pointer + sep + rest
        super().__init__(message)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # lens's own errors live in lens.errors' private files; name the public
        # module, where users find them (help(lens.errors.X)) and pickle looks.
        # A subclass defined elsewhere (a user's) keeps its own module.
        if cls.__module__.startswith("lens.errors."):
            cls.__module__ = "lens.errors"

    def __reduce__(self) -> tuple[Any, ...]:
        notes = tuple(getattr(self, "__notes__", ()))
        return (_rebuild, (type(self), str(self), notes))

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0]) if self.args else ""


FlaxError = LensError
"""Flax's name for the base class: ``except errors.FlaxError`` keeps working."""


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)
