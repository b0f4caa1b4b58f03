"""``nn.share_scope``: two bound modules made to use one scope (Flax's
``linen.module.share_scope``)."""

from __future__ import annotations

from lens import errors
from lens._facades import show_at_flax_paths
from lens.core import Scope
from lens.nn._module_base import ModuleBase


def share_scope(module: ModuleBase, other: ModuleBase, /) -> None:
    """Makes ``module`` and ``other`` use one scope (they share variables).

    Useful to wrap a module and extend it without changing the parameter
    structure. If ``other`` is a descendant of ``module``, ``other`` takes
    ``module``'s scope; otherwise ``module`` takes ``other``'s.

    Raises:
      CallShareScopeOnUnboundModuleError: if either module is unbound.
    """
    if module.scope is None or other.scope is None:
        raise errors.CallShareScopeOnUnboundModuleError()

    def is_child_scope(scope: Scope, sub: Scope | None) -> bool:
        while sub is not None:
            if sub is scope:
                return True
            sub = sub.parent
        return False

    if is_child_scope(module.scope, other.scope):
        to_update, new_scope = other, module.scope
    else:
        to_update, new_scope = module, other.scope
    old_scope = to_update.scope
    object.__setattr__(to_update, "scope", new_scope)
    for m in to_update._state.children.values():
        if not isinstance(m, ModuleBase):
            continue
        if m.scope is not None and m.scope.parent == old_scope:
            if isinstance(m.scope.name, str):
                new_scope.reserve(m.scope.name)
            m.scope.parent = new_scope


show_at_flax_paths(__name__)
