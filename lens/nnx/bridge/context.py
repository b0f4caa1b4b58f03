"""The bridge module stack (flax.nnx's ``MODULE_CONTEXT``): which
``bridge.Module`` runs ``setup`` or a method now, per context (thread, task)."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections import defaultdict
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass
class ModuleStackEntry:
    """One frame of the bridge module stack: the module whose ``setup`` or
    method runs, whether that method is ``@compact``, and how many submodules of
    each type it made (for automatic names such as ``Dense_0``)."""

    module: Any  # the running bridge.Module
    in_compact: bool
    type_counter: defaultdict[type, int] = dataclasses.field(
        default_factory=lambda: defaultdict(int)
    )


_STACK: contextvars.ContextVar[tuple[ModuleStackEntry | None, ...]] = (
    contextvars.ContextVar("lens_nnx_bridge_module_stack", default=(None,))
)


class ModuleContext:
    """flax's ``MODULE_CONTEXT``: ``module_stack`` is the stack of the current
    context (thread, task); its last entry is the running module, ``None`` when
    no bridge module runs."""

    @property
    def module_stack(self) -> list[ModuleStackEntry | None]:
        return list(_STACK.get())


MODULE_CONTEXT = ModuleContext()


@contextlib.contextmanager
def entered(module: Any, in_compact: bool) -> Iterator[ModuleStackEntry]:
    entry = ModuleStackEntry(module, in_compact)
    token = _STACK.set((*_STACK.get(), entry))
    try:
        yield entry
    finally:
        _STACK.reset(token)


def current_context() -> ModuleStackEntry | None:
    """The innermost entry of the bridge module stack (None outside any)."""
    return _STACK.get()[-1]


def current_module() -> Any:
    """The bridge module whose ``setup`` or method is running (None outside)."""
    ctx = current_context()
    return None if ctx is None else ctx.module


def auto_submodule_name(parent_ctx: ModuleStackEntry, cls: type) -> str:
    index = parent_ctx.type_counter[cls]
    parent_ctx.type_counter[cls] += 1
    return f"{cls.__name__}_{index}"
