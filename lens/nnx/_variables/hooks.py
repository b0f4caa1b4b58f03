"""Variable hooks and initializer metadata (flax.nnx's deprecated hook API).

A hook is a function stored in a Variable's metadata under one of
:data:`HOOK_NAMES`, called as flax.nnx calls it:

- ``on_create_value(variable, value) -> value`` when the Variable is made,
- ``on_get_value(variable, value) -> value`` on every read,
- ``on_set_value(variable, value) -> value`` on every write (before it is stored),
- ``on_add_axis(variable, axis_index, axis_name)`` / ``on_remove_axis(...)``
  when a transform (``vmap``/``scan``) adds or removes an axis.

Each entry is one function or a tuple of them (called in order, each value fed to
the next). A Variable subclass may define them as methods instead. As in flax.nnx
they are deprecated (a UserWarning says so): override ``get_value``/``set_value`` in
a Variable subclass instead.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from lens._facades import show_at_flax_paths

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")  # a Variable (this module sits below variablelib: no import)

# A hook's first argument is the Variable (typed Any here, see V).
GetValueHook = Callable[[Any, A], A]
SetValueHook = Callable[[Any, A], A]
CreateValueHook = Callable[[Any, A], A]
AxisName = str
AxisIndex = int
AddAxisHook = Callable[[V, AxisIndex, AxisName | None], None]
RemoveAxisHook = Callable[[V, AxisIndex, AxisName | None], None]

HOOK_NAMES = (
    "on_set_value",
    "on_get_value",
    "on_create_value",
    "on_add_axis",
    "on_remove_axis",
)

_DEPRECATED = (
    "Variable hooks are deprecated. Create your own Variable type and overload "
    "`get_value` and `set_value` instead."
)


@dataclasses.dataclass
class VariableMetadata(Generic[A]):
    """An initializer's value with the hooks and metadata its Variable should
    get (what :func:`with_metadata` initializers return); ``Variable(vm)``
    unpacks it."""

    raw_value: A
    on_set_value: tuple[SetValueHook[A], ...] = ()
    on_get_value: tuple[GetValueHook[A], ...] = ()
    on_create_value: tuple[CreateValueHook[A], ...] = ()
    on_add_axis: tuple[AddAxisHook[Any], ...] = ()
    on_remove_axis: tuple[RemoveAxisHook[Any], ...] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _as_hooks(name: str, hooks: Any) -> tuple[Callable[..., Any], ...]:
    if not hooks:
        return ()
    if callable(hooks):
        return (hooks,)
    if isinstance(hooks, Sequence) and all(callable(h) for h in hooks):
        return tuple(hooks)
    raise TypeError(
        f"with_metadata: {name} must be a function or a sequence of functions, "
        f"got {hooks!r}.\nPass e.g. {name}=lambda variable, value: value."
    )


def with_metadata(
    initializer: F,
    on_set_value: SetValueHook[Any] | Sequence[SetValueHook[Any]] = (),
    on_get_value: GetValueHook[Any] | Sequence[GetValueHook[Any]] = (),
    on_create_value: CreateValueHook[Any] | Sequence[CreateValueHook[Any]] = (),
    on_add_axis: AddAxisHook[Any] | Sequence[AddAxisHook[Any]] = (),
    on_remove_axis: RemoveAxisHook[Any] | Sequence[RemoveAxisHook[Any]] = (),
    **metadata: Any,
) -> F:
    """Wraps ``initializer`` so the Variable built from its value gets
    ``metadata`` (and the given hooks, deprecated as in flax.nnx).

    >>> from lens import nnx
    >>> init = nnx.with_metadata(nnx.initializers.ones, out_sharding=None, tag="w")
    >>> nnx.Param(init(None, (2,))).tag
    'w'
    """
    hooks = {
        "on_set_value": _as_hooks("on_set_value", on_set_value),
        "on_get_value": _as_hooks("on_get_value", on_get_value),
        "on_create_value": _as_hooks("on_create_value", on_create_value),
        "on_add_axis": _as_hooks("on_add_axis", on_add_axis),
        "on_remove_axis": _as_hooks("on_remove_axis", on_remove_axis),
    }
    if any(hooks.values()):
        warnings.warn(_DEPRECATED, stacklevel=2)

    @functools.wraps(initializer)
    def wrapper(*args: Any) -> Any:
        return VariableMetadata(initializer(*args), metadata=metadata, **hooks)

    return wrapper  # type: ignore[return-value]


def unpack(
    boxed: VariableMetadata[Any], metadata: dict[str, Any], flags: dict[str, Any]
) -> Any:
    """Moves a :class:`VariableMetadata`'s metadata and hooks into ``metadata``
    and its ``hijax``/``ref``/``eager_sharding`` into ``flags`` (an argument given
    both ways must agree); returns its raw value."""
    extra = dict(boxed.metadata)
    for flag in ("hijax", "ref", "eager_sharding"):
        if flag in extra:
            given = extra.pop(flag)
            if flags.get(flag) is not None and flags[flag] != given:
                raise ValueError(
                    f"Cannot specify {flag} both in VariableMetadata and as an "
                    "argument to Variable constructor."
                )
            flags[flag] = given
    metadata.update(extra)
    for name in HOOK_NAMES:
        if name not in metadata and getattr(boxed, name):
            metadata[name] = tuple(getattr(boxed, name))
    return boxed.raw_value


def collect(cls: type, metadata: dict[str, Any]) -> None:
    """Adds the hooks ``cls`` defines as methods (those not in ``metadata``), and
    warns once hooks are present (deprecated, as in flax.nnx)."""
    for name in HOOK_NAMES:
        if name not in metadata and hasattr(cls, name):
            metadata[name] = getattr(cls, name)
    if any(metadata.get(name) for name in HOOK_NAMES):
        warnings.warn(_DEPRECATED, stacklevel=4)


def run_value_hooks(
    variable: Any, metadata: Mapping[str, Any], name: str, value: Any
) -> Any:
    """``value`` passed through the ``name`` hooks (``on_get_value``, ...)."""
    hooks = metadata.get(name)
    if not hooks:
        return value
    for hook in hooks if isinstance(hooks, tuple) else (hooks,):
        value = hook(variable, value)
    return value


def run_axis_hooks(
    variable: Any, metadata: Mapping[str, Any], name: str, index: int, axis: Any
) -> None:
    hooks = metadata.get(name)
    if hooks:
        for hook in hooks if isinstance(hooks, tuple) else (hooks,):
            hook(variable, index, axis)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
