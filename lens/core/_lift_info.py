"""What lifted transforms let through, and the errors that explain missing state.

Every scope of one ``init``/``apply``/``bind`` (or of one lifted rebuild inside a
transform) shares a :class:`Shared` record; its ``lifts`` are the
:class:`LiftInfo` of each transform the scope sits in, so a missing collection or
stream names the transform that hid it and how to lift it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens import errors
from lens.core._filters import Filter, in_filter
from lens.core._unused import Usage


class LiftInfo:
    """What one lifted transform let through; used to explain missing state."""

    __slots__ = (
        "transform",
        "path",
        "in_filter",
        "out_filter",
        "rng_filter",
        "hint",
        "groups",
        "rng_groups",
    )

    def __init__(
        self,
        transform: str,
        path: tuple[str, ...],
        in_filter: Filter,
        out_filter: Filter,
        rng_filter: Filter,
        hint: Callable[[str, str], str] | None,
        groups: tuple[tuple[Filter, str], ...] = (),
        rng_groups: tuple[tuple[Filter, str], ...] = (),
    ):
        self.transform = transform
        self.path = path
        self.in_filter = in_filter
        self.out_filter = out_filter
        self.rng_filter = rng_filter
        self.hint = hint
        # (filter, how it is lifted) per group, e.g. ("params", "axis 0"): for displays.
        self.groups = groups
        self.rng_groups = rng_groups

    def fix(self, kind: str, name: str) -> str:
        """How to lift collection (``kind='collection'``) or stream ``name``."""
        if self.hint is not None:
            return self.hint(kind, name)
        if kind == "rng":
            return f'Add "{name}" to the rng filters of {self.transform}.'
        return f'Add "{name}" to the variable filters of {self.transform}.'

    @property
    def where(self) -> str:
        return f"{self.transform} at {errors.path_text(self.path)}"


class Shared:
    """State shared by the scopes of one init/apply/bind or one lifted rebuild."""

    __slots__ = ("alive", "lifts", "track", "created", "usage")

    def __init__(self, lifts: tuple[LiftInfo, ...] = ()):
        self.alive = True
        self.lifts = lifts
        # (collection, path) of each variable written, when a pack trace records.
        self.track: set[tuple[str, tuple[str, ...]]] | None = None
        # (collection, path, value) of each variable created, for loop initialisation.
        self.created: list[tuple[str, tuple[str, ...], Any]] | None = None
        # What apply's modules declared and read, to warn about unused variables.
        self.usage: Usage | None = None


def _lift_blocking(
    lifts: tuple[LiftInfo, ...], col: str, for_write: bool
) -> LiftInfo | None:
    """The first lift that hides collection ``col`` (or drops its writes)."""
    for info in lifts:
        if not in_filter(info.in_filter, col):
            return info
        if for_write and not in_filter(info.out_filter, col):
            return info
    return None


def missing_error(scope: Any, col: str, name: str) -> Exception:
    """Why ``scope`` cannot read ``name`` of ``col``, and how to fix it."""
    info = _lift_blocking(scope._shared.lifts, col, for_write=False)
    hint = ""
    if info is not None:
        hint = (
            f'Collection "{col}" is not lifted into {info.where}, so it is '
            f"invisible inside.\n{info.fix('collection', col)}"
        )
    if scope.is_collection_empty(col):
        return errors.ScopeCollectionNotFound(col, name, scope.path_text, hint=hint)
    if col == "params":
        return errors.ScopeParamNotFoundError(name, scope.path_text, hint=hint)
    return errors.ScopeVariableNotFoundError(name, col, scope.path_text, hint=hint)


def not_mutable_error(scope: Any, col: str, name: str) -> Exception:
    """Why ``scope`` cannot write ``name`` of ``col``, and how to fix it."""
    info = _lift_blocking(scope._shared.lifts, col, for_write=True)
    hint = ""
    if info is not None:
        hint = (
            f'"{col}" is not among the collections that {info.where} returns, so '
            f"writes to it inside would be lost.\n{info.fix('collection', col)}"
        )
    return errors.ModifyScopeVariableError(col, name, scope.path_text, hint=hint)


def rng_error(scope: Any, name: str) -> Exception:
    """Why ``scope`` has no stream ``name``, and how to fix it."""
    for info in scope._shared.lifts:
        if not in_filter(info.rng_filter, name):
            return errors.InvalidRngError(
                f'{scope.name} needs PRNG for "{name}"\nThe stream is used at '
                f"{scope.path_text} but is not lifted into {info.where}.\n"
                f"{info.fix('rng', name)}"
            )
    return errors.InvalidRngError(
        f'{scope.name} needs PRNG for "{name}"\nThe stream "{name}" is used at '
        f"{scope.path_text} but was not given; pass it to init/apply: "
        f'rngs={{"{name}": jax.random.key(0)}}.'
    )
