"""``ModuleBase``, the root of :class:`~lens.nn.Module`'s classes (Flax's
``flax.linen.module.ModuleBase``), in a module of its own below the files Module
is assembled from.

``Module`` imports its mixins and helpers (entry points, variables, call support,
tree walks). Those helpers ask "is this a module?" with ``isinstance(x,
ModuleBase)`` and type their arguments as ``ModuleBase``, instead of importing
``Module``, which would close an import cycle.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any

from lens._facades import show_at_flax_paths


def module_field(*, kw_only: bool = False, default: Any = ...) -> Any:
    """The field type of Module subclasses, for static analyzers (no runtime use)."""
    return dataclasses.field()


@typing.dataclass_transform(field_specifiers=(module_field,))
class ModuleBase:
    """A base that makes static analyzers treat Module subclasses as dataclasses.

    Only :class:`~lens.nn.Module` derives from it (through the mixins it is made
    of), so ``isinstance(x, ModuleBase)`` is ``isinstance(x, Module)``.
    """

    if typing.TYPE_CHECKING:
        scope: Any
        _state: Any
        _parent_ref: Any
        __dataclass_fields__: Any

        def clone(self, *, parent: Any = ..., **updates: Any) -> Any: ...

        def _module_checks(self) -> None: ...

        def _call_wrapped_method(
            self, fun: Callable[..., Any], args: tuple, kwargs: dict
        ) -> Any: ...


show_at_flax_paths(__name__)
