"""Helpers over the attributes of modules: naming pytrees of submodules, freezing
attributes, finding methods and descriptors to wrap, and the nested repr.

A pytree of submodules assigned in ``setup`` (``self.layers = [Dense(2), ...]``)
names its modules after the attribute and their place in the tree: ``layers_0``,
``blocks_a_b``. The tree is walked in sorted key order, as Flax does, so a module
shared by two places is named after the first of them in that order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from lens import serialization, traverse_util
from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict
from lens.nn._module_base import ModuleBase


def _sorted_items(x: dict[Any, Any]) -> list[tuple[Any, Any]]:
    return sorted(x.items(), key=lambda kv: kv[0])


def _get_suffix_value_pairs(tree_or_leaf: Any) -> list[tuple[str, Any]]:
    """``[(suffix, leaf)]`` for a pytree: ``[("_0", a), ("_1", b)]`` for a list."""
    state = serialization.to_state_dict(tree_or_leaf)
    if not isinstance(state, dict) or not state:
        return [("", tree_or_leaf)]
    flat = traverse_util.flatten_dict(state)
    return [("_" + "_".join(k), v) for k, v in _sorted_items(flat)]


def _map_over_modules_in_tree(fn: Callable[[str, Any], Any], tree_or_leaf: Any) -> Any:
    """Maps ``fn(suffix, leaf)`` over a pytree, rebuilding its containers."""
    state = serialization.to_state_dict(tree_or_leaf)
    if not isinstance(state, dict) or not state:
        return fn("", tree_or_leaf)
    flat = traverse_util.flatten_dict(state, keep_empty_nodes=True)
    mapped = {k: fn("_" + "_".join(k), v) for k, v in _sorted_items(flat)}
    return serialization.from_state_dict(
        tree_or_leaf, traverse_util.unflatten_dict(mapped)
    )


def _freeze_attr(val: Any) -> Any:
    """Dicts become ``FrozenDict`` and lists tuples, recursively (attributes are frozen)."""
    if isinstance(val, dict | FrozenDict):
        return FrozenDict({k: _freeze_attr(v) for k, v in val.items()})
    if isinstance(val, tuple):
        if hasattr(val, "_fields") or type(val).__name__ == "PartitionSpec":
            return type(val)(*[_freeze_attr(v) for v in val])
        return tuple(_freeze_attr(v) for v in val)
    if isinstance(val, list):
        return tuple(_freeze_attr(v) for v in val)
    return val


def _get_local_method_names(cls: Any, exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """The names of the plain methods ``cls`` defines itself (not static/class)."""
    names = set()
    for name, value in cls.__dict__.items():
        if callable(value) and not inspect.isclass(value):
            if type(value) not in (staticmethod, classmethod):
                names.add(name)
    return tuple(names.difference(set(exclude)))


def _get_local_descriptor_names(
    cls: Any, exclude: Iterable[str] = ()
) -> tuple[str, ...]:
    """The names of the descriptors (e.g. properties) ``cls`` defines itself."""
    names = set()
    for name, value in cls.__dict__.items():
        if not callable(value) and (
            hasattr(value, "__get__")
            or hasattr(value, "__set__")
            or hasattr(value, "__delete__")
        ):
            if type(value) not in (staticmethod, classmethod):
                names.add(name)
    return tuple(names.difference(set(exclude)))


def _indent(x: str, num_spaces: int) -> str:
    pad = " " * num_spaces
    lines = x.split("\n")
    return "\n".join(pad + line for line in lines[:-1]) + "\n"


def _attr_repr(value: Any) -> str:
    if isinstance(value, ModuleBase):
        name = value.__dict__.get("__name__", None)
    else:
        name = getattr(value, "__name__", None)
    return name if callable(value) and name else repr(value)


def module_repr(module: Any, num_spaces: int = 4, depth: int | None = None) -> str:
    """The nested repr of a module: its attributes, then its children's reprs."""
    import dataclasses

    cls = type(module)
    try:
        fields = dataclasses.fields(cls)
    except TypeError:
        return object.__repr__(module)
    attributes = [f.name for f in fields if f.name not in ("parent", "name") and f.repr]
    children = {
        k: v for k, v in module._state.children.items() if isinstance(v, ModuleBase)
    }
    if depth is not None and depth <= 0:
        return f"{cls.__name__}(...)" if attributes or children else f"{cls.__name__}()"
    sub = None if depth is None else depth - 1
    rep = ""
    if attributes:
        rep += "# attributes\n"
        for attr in attributes:
            rep += f"{attr} = {_attr_repr(module.__dict__.get(attr, None))}\n"
    if children:
        rep += "# children\n"
        for name, child in children.items():
            rep += f"{name} = {module_repr(child, num_spaces, sub)}\n"
    if rep:
        return f"{cls.__name__}(\n{_indent(rep, num_spaces)})"
    return f"{cls.__name__}()"


show_at_flax_paths(__name__)
