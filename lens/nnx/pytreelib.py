"""Objects with reference semantics (flax.nnx's ``pytreelib``): :class:`Object`
(``Pytree``), the base of every ``nnx.Module``, and the attribute markers
(``data``/``static``, ``Data``/``Static``, ``nnx.dataclass``) that say which
attributes hold state.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Generic, Self, TypeVar

import jax

from lens.nnx.tracers import check_mutable, current_frame
from lens.nnx.variablelib import Variable


class Object:
    """A node with reference semantics: attributes hold variables, other objects,
    lists/tuples/dicts of them, arrays and static values."""

    def __init_subclass__(cls, pytree: bool = True, **kwargs: Any) -> None:
        # flax.nnx's ``class M(nnx.Module, pytree=False)``: lens objects are
        # always graph nodes (not JAX pytrees), so both spellings mean the same.
        super().__init_subclass__(**kwargs)

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        obj = object.__new__(cls)
        object.__setattr__(obj, "_lens_frame", current_frame())
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        check_mutable(self, f"set {name!r}")
        current = self.__dict__.get(name)
        if isinstance(current, Variable) and not isinstance(value, Variable):
            current.value = value  # assigning an array to a variable updates it
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        check_mutable(self, f"delete {name!r}")
        object.__delattr__(self, name)

    def __repr__(self) -> str:
        return _repr_node(self, 0, set())

    # How the graph walk sees an object: its (key, value) children, and how a
    # rebuilt one gets them back. Containers (nnx.List) override both.
    def _graph_items(self) -> list[tuple[Any, Any]]:
        return sorted(
            (k, v) for k, v in vars(self).items() if k not in _PRIVATE_ATTRIBUTES
        )

    def _graph_set(self, key: Any, value: Any) -> None:
        object.__setattr__(self, key, value)

    def _graph_clear(self) -> None:
        for k in [k for k in vars(self) if k not in _PRIVATE_ATTRIBUTES]:
            object.__delattr__(self, k)


_PRIVATE_ATTRIBUTES = frozenset({"_lens_frame", "_items"})


def node_items(obj: Object) -> list[tuple[Any, Any]]:
    return obj._graph_items()


def _repr_node(x: Any, depth: int, seen: set[int]) -> str:
    pad = "  " * (depth + 1)
    if isinstance(x, Object):
        if id(x) in seen:
            return f"<shared {type(x).__name__}>"
        seen.add(id(x))
        items = node_items(x)
        if not items:
            return f"{type(x).__name__}()"
        body = ",\n".join(
            f"{pad}{k}={_repr_node(v, depth + 1, seen)}" for k, v in items
        )
        return f"{type(x).__name__}(\n{body}\n{'  ' * depth})"
    if isinstance(x, list | tuple) and any(isinstance(e, Object) for e in x):
        body = ",\n".join(f"{pad}{_repr_node(e, depth + 1, seen)}" for e in x)
        o, c = ("[", "]") if isinstance(x, list) else ("(", ")")
        return f"{o}\n{body}\n{'  ' * depth}{c}"
    return repr(x)


A = TypeVar("A")


class Data(Generic[A]):
    """``x: nnx.Data[T]``: the attribute holds state (a hint; lens finds state
    by value)."""


class Static(Generic[A]):
    """``x: nnx.Static[T]``: the attribute is static (a hint)."""


_DATA_TYPES: set[type] = set()


def register_data_type(type_: type, /) -> None:
    """Treat values of ``type_`` as state (data) in objects."""
    _DATA_TYPES.add(type_)


def is_data(value: Any, /) -> bool:
    """Whether ``value`` itself is state: an array, a Variable, an object."""
    return (
        isinstance(value, jax.Array | Variable | Object) or type(value) in _DATA_TYPES
    )


def has_data(value: Any, /) -> bool:
    """Whether ``value`` holds state anywhere (a list of Variables does)."""
    return any(is_data(x) for x in jax.tree.leaves(value, is_leaf=lambda x: is_data(x)))


def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` for objects (``@nnx.dataclass class P(nnx.Pytree)``):
    fields become attributes, compared by identity as objects are."""
    kwargs.setdefault("eq", False)
    if cls is None:
        return functools.partial(dataclass, **kwargs)
    return dataclasses.dataclass(cls, **kwargs)


def data(value: Any, /) -> Any:
    """Marks an attribute value as data (part of the state). In lens every array,
    variable, module and list/dict of them already is: ``data`` returns ``value``."""
    return value


def static(value: Any, /) -> Any:
    """Marks an attribute value as static. lens treats non-array values as static
    already: ``static`` returns ``value``."""
    return value
