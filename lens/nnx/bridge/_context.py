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


class ModuleContext:
    """flax's ``ModuleContext`` (``MODULE_CONTEXT`` is the one bridge modules
    use): ``module_stack`` is the stack of the current context (thread, task),
    starting as the given list (``[None]`` by default); its last entry is the
    running module, ``None`` when no bridge module runs. It is kept in a
    ``contextvars.ContextVar`` (flax: a thread-local), so reading it gives a copy.
    """

    def __init__(self, module_stack: list[ModuleStackEntry | None] | None = None):
        initial = (None,) if module_stack is None else tuple(module_stack)
        self._var: contextvars.ContextVar[tuple[ModuleStackEntry | None, ...]] = (
            contextvars.ContextVar(
                f"lens_nnx_bridge_module_stack_{id(self)}", default=initial
            )
        )

    @property
    def module_stack(self) -> list[ModuleStackEntry | None]:
        return list(self._var.get())

    @contextlib.contextmanager
    def push(self, entry: ModuleStackEntry) -> Iterator[ModuleStackEntry]:
        """Runs the block with ``entry`` on top of the stack."""
        token = self._var.set((*self._var.get(), entry))
        try:
            yield entry
        finally:
            self._var.reset(token)

    def __repr__(self) -> str:
        return f"ModuleContext(module_stack={self.module_stack!r})"


MODULE_CONTEXT = ModuleContext()


def entered(
    module: Any, in_compact: bool
) -> contextlib.AbstractContextManager[ModuleStackEntry]:
    return MODULE_CONTEXT.push(ModuleStackEntry(module, in_compact))


def current_context() -> ModuleStackEntry | None:
    """The innermost entry of the bridge module stack (None outside any)."""
    return MODULE_CONTEXT._var.get()[-1]


def current_module() -> Any:
    """The bridge module whose ``setup`` or method is running (None outside)."""
    ctx = current_context()
    return None if ctx is None else ctx.module


def auto_submodule_name(parent_ctx: ModuleStackEntry, cls: type) -> str:
    index = parent_ctx.type_counter[cls]
    parent_ctx.type_counter[cls] += 1
    return f"{cls.__name__}_{index}"
