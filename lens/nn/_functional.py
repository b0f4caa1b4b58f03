"""``nn.init``, ``nn.apply``, ``nn.init_with_output``: functions of several methods.

Useful when one computation calls more than one method of a module (the lifecycle
seed's ``CorrectModule``): ``nn.init(fn, module)(key)`` runs ``fn(bound_module)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens import errors
from lens.core._filters import DenyList, Filter
from lens.core._scope import Scope, _check_rngs
from lens.core._scope import apply as core_apply
from lens.nn._module import Module


def apply(
    fn: Callable[..., Any],
    module: Module,
    mutable: Filter = False,
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., Any]:
    """``wrapper(variables, *args, rngs=None, **kw)`` running ``fn(bound_module, *args)``."""
    flags = (
        {"capture_intermediates": capture_intermediates}
        if capture_intermediates
        else None
    )

    def scope_fn(scope: Scope, *args: Any, **kwargs: Any) -> Any:
        return fn(module.clone(parent=scope, _deep_clone=True), *args, **kwargs)

    return core_apply(scope_fn, mutable=mutable, flags=flags)


def init_with_output(
    fn: Callable[..., Any],
    module: Module,
    mutable: Filter = DenyList("intermediates"),
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., tuple[Any, dict[str, Any]]]:
    """``wrapper(rngs, *args, **kw)`` returning ``(fn(bound_module, *args), variables)``."""

    def wrapper(rngs: Any, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        rngs = _check_rngs(rngs)
        if "params" not in rngs:
            raise errors.InvalidRngError("params", (), 'init needs a "params" key.')
        flags = {"initializing": True, "capture_intermediates": capture_intermediates}

        def scope_fn(scope: Scope, *args: Any, **kwargs: Any) -> Any:
            return fn(module.clone(parent=scope, _deep_clone=True), *args, **kwargs)

        return core_apply(scope_fn, mutable=mutable, flags=flags)(
            {}, *args, rngs=rngs, **kwargs
        )

    return wrapper


def init(
    fn: Callable[..., Any],
    module: Module,
    mutable: Filter = DenyList("intermediates"),
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., dict[str, Any]]:
    """``wrapper(rngs, *args, **kw)`` returning the variables ``fn(bound_module)`` creates."""
    f = init_with_output(fn, module, mutable, capture_intermediates)
    return lambda rngs, *args, **kwargs: f(rngs, *args, **kwargs)[1]
