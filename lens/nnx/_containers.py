"""Graph containers (``nnx.List``, ``nnx.Dict``), attribute markers (``data``,
``static``) and the State helpers Flax users reach for: ``to_pure_dict``,
``replace_by_pure_dict``, ``to_flat_state``/``from_flat_state``.

A ``List`` of layers is a node of the graph: its items are found at integer paths
(``layers/0/kernel``), exactly as flax.nnx reports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping, MutableSequence
from typing import Any

from lens import errors
from lens.nnx._graph import Object, Variable, _check_mutable, path_str
from lens.nnx._state import FlatState, State


class List(Object, MutableSequence):
    """A list whose items (modules, variables, arrays) are part of the graph."""

    def __init__(self, it: Iterable[Any] | None = None, /):
        object.__setattr__(self, "_items", list(it or ()))

    def _list(self) -> list[Any]:
        d = self.__dict__
        if "_items" not in d:
            object.__setattr__(self, "_items", [])
        return d["_items"]

    def _graph_items(self) -> list[tuple[Any, Any]]:
        return list(enumerate(self._list()))

    def _graph_set(self, key: Any, value: Any) -> None:
        items = self._list()
        if key == len(items):
            items.append(value)
        else:
            items[key] = value

    def _graph_clear(self) -> None:
        self._list().clear()

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __setitem__(self, i: Any, value: Any) -> None:
        _check_mutable(self, "set an item")
        self._list()[i] = value

    def __delitem__(self, i: Any) -> None:
        _check_mutable(self, "delete an item")
        del self._list()[i]

    def __len__(self) -> int:
        return len(self._list())

    def insert(self, i: int, value: Any) -> None:
        _check_mutable(self, "insert an item")
        self._list().insert(i, value)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:  # identity, like any object (Mapping sets None)
        return object.__hash__(self)


class Dict(Object, MutableMapping):
    """A mapping of string keys to graph members, also reachable as attributes."""

    def __init__(self, *args: Any, **kwargs: Any):
        for k, v in dict(*args, **kwargs).items():
            setattr(self, k, v)

    def _keys(self) -> list[str]:
        return [k for k, _ in self._graph_items()]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or key.startswith("_"):
            raise KeyError(
                f"nnx.Dict keys are public attribute names (strings without a "
                f"leading underscore); got {key!r}."
            )
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:  # identity, like any object (Mapping sets None)
        return object.__hash__(self)


def data(value: Any, /) -> Any:
    """Marks an attribute value as data (part of the state). In lens every array,
    variable, module and list/dict of them already is: ``data`` returns ``value``."""
    return value


def static(value: Any, /) -> Any:
    """Marks an attribute value as static. lens treats non-array values as static
    already: ``static`` returns ``value``."""
    return value


# ------------------------------------------------------------------ state helpers


def to_pure_dict(state: Mapping[Any, Any]) -> dict[Any, Any]:
    """Nested plain dicts of raw values (no Variable boxes): what checkpointing
    libraries and ``jax.tree`` utilities expect."""
    return {
        k: to_pure_dict(v)
        if isinstance(v, Mapping)
        else (v.value if isinstance(v, Variable) else v)
        for k, v in state.items()
    }


def replace_by_pure_dict(state: State, pure_dict: Mapping[Any, Any]) -> None:
    """Writes the values of ``pure_dict`` (as from :func:`to_pure_dict`) into
    ``state``'s variables, in place. Every path must exist in ``state`` (keys that
    were integers may come back as strings, as after a JSON round trip)."""
    flat = dict(to_flat_state(state))

    def go(d: Mapping[Any, Any], prefix: tuple[Any, ...]) -> None:
        for k, v in d.items():
            path = prefix + (k,)
            if isinstance(v, Mapping):
                go(v, path)
                continue
            target = path if path in flat else _int_path(path)
            if target not in flat:
                raise errors.GraphStructureError(
                    f"replace_by_pure_dict: the state has no variable at "
                    f"{path_str(path)}; is the dict from a different model?"
                )
            _set_path(state, target, v)

    go(pure_dict, ())


def _int_path(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(int(p) if isinstance(p, str) and p.isdigit() else p for p in path)


def _set_path(state: Any, path: tuple[Any, ...], value: Any) -> None:
    node = state
    for p in path[:-1]:
        node = node[p]
    cur = node[path[-1]]
    if isinstance(cur, Variable):
        shape = getattr(cur.value, "shape", None)
        if shape is not None and getattr(value, "shape", shape) != shape:
            raise ValueError(
                f"replace_by_pure_dict: {path_str(path)} has shape {shape}, the "
                f"new value {value.shape}."
            )
        object.__setattr__(cur, "_value", value)
    else:
        node[path[-1]] = value


def to_flat_state(state: State) -> FlatState:
    """``state`` as a flat list of ``(path, variable)`` pairs."""
    s = state if isinstance(state, State) else State(state)
    return s.flat_state()


def from_flat_state(flat: Any) -> State:
    """The inverse of :func:`to_flat_state` (also takes a ``{path: value}`` dict)."""
    items = flat.items() if isinstance(flat, Mapping) else flat
    return State.from_flat_state(dict(items))


__all__ = [
    "Dict",
    "FlatState",
    "List",
    "data",
    "from_flat_state",
    "replace_by_pure_dict",
    "static",
    "to_flat_state",
    "to_pure_dict",
]
