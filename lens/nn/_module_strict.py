"""Strict mode's checks of Linen modules (``lens.strict``): what Flax accepts
silently and a Module's code rarely means.

- a dataclass field set on an unbound module after construction raises
  :class:`~lens.errors.SetAttributeFrozenModuleError` (the module is meant to be
  frozen; ``module.clone(field=...)`` is the copy with the change);
- a ``@compact`` method that creates a submodule in a class with another
  ``@compact`` method raises :class:`~lens.errors.MultipleMethodsCompactError`,
  the error Flax documents for it (Flax never raises it; compact methods that
  make parameters only, as Flax's bridge tests do, pass);
- a ``@compact`` method that creates a submodule in a module whose ``setup``
  also assigned submodules warns (:class:`~lens.errors.StrictModeWarning`): two
  places that define submodules, one naming them by attribute and the other
  ``ClassName_N``.

Each runs only when :func:`lens._strict.enabled` says so.
"""

from __future__ import annotations

import sys
from typing import Any

from lens import _strict, errors
from lens.nn._module_base import ModuleBase

_SETUP_MARK = "_lens_setup_submodules"  # the first attribute setup assigned one to
_WARNED_MARK = "_lens_warned_setup_and_compact"
_CONSTRUCTORS = ("__init__", "__post_init__")


def check_unbound_setattr(module: Any, name: str, val: Any) -> None:
    """Raises if ``name`` is a field of unbound ``module`` and its construction
    (``__init__``, ``__post_init__`` and what they call) is over."""
    fields = getattr(module, "__dataclass_fields__", {})
    field = fields.get(name)
    if field is None or not field.init:
        return
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name in _CONSTRUCTORS and frame.f_locals.get("self") is (
            module
        ):
            return  # still being constructed
        frame = frame.f_back
    raise errors.SetAttributeFrozenModuleError(
        type(module).__name__, name, val, unbound=True
    )


def _compact_methods(cls: type) -> tuple[str, ...]:
    cached = cls.__dict__.get("_lens_compact_methods")
    if cached is None:
        cached = tuple(
            sorted(n for n in dir(cls) if hasattr(getattr(cls, n, None), "compact"))
        )
        type.__setattr__(cls, "_lens_compact_methods", cached)
    return cached


def check_compact_child(parent: Any, child: Any) -> None:
    """A ``@compact`` method of ``parent`` creates the submodule ``child``:
    raises if ``parent``'s class has another ``@compact`` method; warns if its
    ``setup`` assigned submodules too."""
    names = _compact_methods(type(parent))
    if len(names) > 1:
        cls = type(parent).__name__
        listed = " and ".join(f"{cls}.{n}" for n in names)
        both = "both" if len(names) == 2 else "all"
        method = parent._state.compact_method
        raise errors.MultipleMethodsCompactError(
            f"{listed} are {both} @compact, and {cls}.{method} creates a "
            f"{type(child).__name__}{_path(parent)}.\nKeep @compact on one method "
            "and define the submodules the others use in setup(), or split the "
            "class.\nlens strict mode reports this (Flax accepts it)."
        )
    _check_setup_and_compact(parent, child)


# Submodules lens itself assigns while setting up (``@compact_name_scope``
# methods' scopes), which are no user's setup submodules.
_LENS_ATTRS = frozenset({"_compact_name_scope_modules"})


def note_setup_submodule(module: Any, name: str, val: Any) -> None:
    """Records that ``setup`` assigned a submodule (``val`` holds a Module)."""
    if name in _LENS_ATTRS:
        return
    if module.__dict__.get(_SETUP_MARK) is None and _holds_module(val):
        object.__setattr__(module, _SETUP_MARK, name)


def _check_setup_and_compact(parent: Any, child: Any) -> None:
    """Warns (once per module) when a ``@compact`` method creates ``child`` in
    ``parent`` whose ``setup`` also assigned submodules."""
    attr = parent.__dict__.get(_SETUP_MARK)
    if attr is None or parent.__dict__.get(_WARNED_MARK):
        return
    object.__setattr__(parent, _WARNED_MARK, True)
    cls = type(parent).__name__
    method = parent._state.compact_method or "a @compact method"
    _strict.warn(
        errors.StrictModeWarning(
            f"{cls}.{method} (@compact) creates a {type(child).__name__}"
            f"{_path(parent)}, and {cls}.setup assigns submodules too "
            f"(self.{attr}).\nDefine the submodules in one place: all in setup(), "
            "or all in the @compact method."
        )
    )


def _path(module: Any) -> str:
    scope = getattr(module, "scope", None)
    path = getattr(scope, "path_text", None)
    return f" (module {path})" if path else ""


def _holds_module(val: Any) -> bool:
    if isinstance(val, ModuleBase):
        return True
    if isinstance(val, list | tuple):
        return any(_holds_module(v) for v in val)
    if isinstance(val, dict):
        return any(_holds_module(v) for v in val.values())
    return False
