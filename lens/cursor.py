"""Edit immutable pytrees through a cursor (``lens.cursor``, like ``flax.cursor``).

A :class:`Cursor` records changes to a nested structure of dicts, FrozenDicts,
lists, tuples, named tuples and dataclasses (a train state, a variable dict) and
:meth:`~Cursor.build` makes the updated copy; the original is never modified.

Example:
    >>> params = {"dense": {"kernel": 1, "bias": 2}, "out": {"kernel": 3}}
    >>> c = cursor(params)
    >>> c["dense"]["bias"] = 0
    >>> c.build()
    {'dense': {'kernel': 1, 'bias': 0}, 'out': {'kernel': 3}}
    >>> cursor(params)["out"]["kernel"].set(30)
    {'dense': {'kernel': 1, 'bias': 2}, 'out': {'kernel': 30}}
    >>> cursor(params).apply_update(
    ...     lambda path, v: v * 10 if path.endswith("kernel") else v
    ... ).build()
    {'dense': {'kernel': 10, 'bias': 2}, 'out': {'kernel': 30}}
"""

from __future__ import annotations

import dataclasses
import enum
import operator
from collections.abc import Callable, Generator, Mapping
from typing import (
    Any,
    Generic,
    Protocol,
    TypeGuard,
    TypeVar,
    cast,
    runtime_checkable,
)

from lens._frozen_dict import FrozenDict
from lens.errors import CursorFindError, TraverseTreeError

A = TypeVar("A")
Key = Any

__all__ = ["AccessType", "Cursor", "ParentKey", "cursor"]


@runtime_checkable
class Indexable(Protocol):
    """Anything with ``__getitem__``."""

    def __getitem__(self, key: Any) -> Any: ...


class AccessType(enum.Enum):
    """How a child is reached: ``obj[key]`` or ``obj.key``."""

    ITEM = enum.auto()
    ATTR = enum.auto()


@dataclasses.dataclass
class ParentKey(Generic[A]):
    """A cursor's parent and the key that leads from it."""

    parent: Cursor[A]
    key: Key
    access_type: AccessType


def is_named_tuple(obj: Any) -> TypeGuard[Any]:
    """Whether ``obj`` is a named tuple instance (``_fields``, ``_replace``...)."""
    return (
        isinstance(obj, tuple)
        and hasattr(obj, "_fields")
        and hasattr(obj, "_asdict")
        and hasattr(obj, "_replace")
    )


def _children(obj: Any) -> tuple[Any, AccessType] | None:
    if isinstance(obj, FrozenDict | dict):
        return obj.items(), AccessType.ITEM
    if is_named_tuple(obj):
        return ((n, getattr(obj, n)) for n in obj._fields), AccessType.ATTR
    if isinstance(obj, list | tuple):
        return enumerate(obj), AccessType.ITEM
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = (f for f in dataclasses.fields(obj) if f.init)
        return ((f.name, getattr(obj, f.name)) for f in fields), AccessType.ATTR
    return None


def _traverse_tree(
    path: tuple[Any, ...],
    obj: Any,
    *,
    update_fn: Callable[[str, Any], Any] | None = None,
    cond_fn: Callable[[str, Any], bool] | None = None,
) -> Generator[Any, None, None]:
    """Pre-order walk: yields ``(path, new value)`` (update) or ``path`` (find).

    A node the update replaces (or the condition selects) is not descended into.
    """
    if not (bool(update_fn) ^ bool(cond_fn)):
        raise TraverseTreeError(update_fn, cond_fn)
    if path:
        str_path = "/".join(str(key) for key, _ in path)
        if update_fn:
            new = update_fn(str_path, obj)
            if new is not obj:
                yield path, new
                return
        elif cond_fn(str_path, obj):  # type: ignore[misc]
            yield path
            return
    found = _children(obj)
    if found is None:
        return
    items, access = found
    for key, value in items:
        yield from _traverse_tree(
            path + ((key, access),), value, update_fn=update_fn, cond_fn=cond_fn
        )


class Cursor(Generic[A]):
    """A position in a pytree, recording changes below it.

    Index it (``c['params']``) or take attributes (``c.params``) to move down;
    assign (``c['params']['w'] = v``) to change; :meth:`build` from any cursor
    makes the updated copy of the structure under it.
    """

    _obj: A
    _parent_key: ParentKey[A] | None
    _changes: dict[Any, Cursor[A]]

    def __init__(self, obj: A, parent_key: ParentKey[A] | None):
        vars(self)["_obj"] = obj
        vars(self)["_parent_key"] = parent_key
        vars(self)["_changes"] = {}

    @property
    def _root(self) -> Cursor[A]:
        return self if self._parent_key is None else self._parent_key.parent._root

    @property
    def _path(self) -> str:
        pk = self._parent_key
        if pk is None:
            return ""
        if pk.access_type == AccessType.ITEM:
            key = f"'{pk.key}'" if isinstance(pk.key, str) else str(pk.key)
            return f"{pk.parent._path}[{key}]"
        return f"{pk.parent._path}.{pk.key}"

    def __getitem__(self, key: Any) -> Cursor[A]:
        if key in self._changes:
            return self._changes[key]
        if not isinstance(self._obj, Indexable):
            raise TypeError(f"Cannot index into {self._obj}")
        if isinstance(self._obj, Mapping) and key not in self._obj:
            raise KeyError(f"Key {key} not found in {self._obj}")
        if is_named_tuple(self._obj):
            return getattr(self, self._obj._fields[key])
        child = Cursor(self._obj[key], ParentKey(self, key, AccessType.ITEM))
        self._changes[key] = child
        return child

    def __getattr__(self, name: str) -> Cursor[A]:
        if name in self._changes:
            return self._changes[name]
        if not hasattr(self._obj, name):
            raise AttributeError(f"Attribute {name} not found in {self._obj}")
        child = Cursor(getattr(self._obj, name), ParentKey(self, name, AccessType.ATTR))
        self._changes[name] = child
        return child

    def __setitem__(self, key: Any, value: Any) -> None:
        if is_named_tuple(self._obj):
            setattr(self, self._obj._fields[key], value)
            return
        self._changes[key] = Cursor(value, ParentKey(self, key, AccessType.ITEM))

    def __setattr__(self, name: str, value: Any) -> None:
        self._changes[name] = Cursor(value, ParentKey(self, name, AccessType.ATTR))

    def set(self, value: Any) -> A:
        """Replaces the object here by ``value`` and returns the built root."""
        if self._parent_key is None:
            return value
        parent, key = self._parent_key.parent, self._parent_key.key
        parent._changes[key] = Cursor(value, self._parent_key)
        return parent._root.build()

    def build(self) -> A:
        """A copy of the object here with every recorded change applied."""
        changes = {
            k: (c.build() if isinstance(c, Cursor) else c)
            for k, c in self._changes.items()
        }
        obj: Any = self._obj
        if isinstance(obj, FrozenDict):
            return obj.copy(changes)  # type: ignore[return-value]
        if isinstance(obj, dict | list):
            new = obj.copy()
            for k, v in changes.items():
                new[k] = v
            return new  # type: ignore[return-value]
        if is_named_tuple(obj):
            return obj._replace(**changes)
        if isinstance(obj, tuple):
            items = list(obj)
            for k, v in changes.items():
                items[k] = v
            return tuple(items)  # type: ignore[return-value]
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return cast(A, dataclasses.replace(obj, **changes))
        return cast(A, obj)

    def apply_update(self, update_fn: Callable[[str, Any], Any]) -> Cursor[A]:
        """Records ``update_fn(path, value)`` for every node it changes.

        ``path`` is the ``'/'``-joined keys from here; a node is changed when
        the function returns another object (then its children are not
        visited). Call :meth:`build` for the result.
        """
        for path, value in _traverse_tree((), self._obj, update_fn=update_fn):
            child = self._descend(path[:-1])
            key, access = path[-1]
            if access is AccessType.ITEM:
                child[key] = value
            else:
                setattr(child, key, value)
        return self

    def _descend(self, path: Any) -> Cursor[A]:
        child = self
        for key, access in path:
            child = child[key] if access is AccessType.ITEM else getattr(child, key)
        return child

    def find(self, cond_fn: Callable[[str, Any], bool]) -> Cursor[A]:
        """The one cursor below here whose ``cond_fn(path, value)`` holds.

        Raises:
          CursorFindError: if no node, or more than one, matches.
        """
        found = self.find_all(cond_fn)
        try:
            first = next(found)
        except StopIteration:
            raise CursorFindError() from None
        try:
            second = next(found)
        except StopIteration:
            return first
        raise CursorFindError(first, second)

    def find_all(
        self, cond_fn: Callable[[str, Any], bool]
    ) -> Generator[Cursor[A], None, None]:
        """Cursors to every node below here whose ``cond_fn(path, value)`` holds."""
        for path in _traverse_tree((), self._obj, cond_fn=cond_fn):
            yield self._descend(path)

    def __str__(self) -> str:
        return str(self._obj)

    def __repr__(self) -> str:
        return self._pretty_repr()

    def _pretty_repr(self, indent: int = 2, _prefix_indent: int = 0) -> str:
        pad = " " * (_prefix_indent + indent)
        obj = repr(self._obj).replace("\n", "\n" + pad)
        s = f"Cursor(\n{pad}_obj={obj},\n{pad}_changes={{"
        if self._changes:
            entries = []
            for key, child in self._changes.items():
                prefix = " " * (_prefix_indent + 2 * indent) + repr(key) + ": "
                entries.append(
                    prefix
                    + child._pretty_repr(indent=indent, _prefix_indent=len(prefix))
                )
            s += "\n" + ",\n".join(entries) + "\n" + pad + "}\n"
        else:
            s += "}\n"
        return s + " " * _prefix_indent + ")"

    def __len__(self) -> int:
        return len(self._obj)  # type: ignore[arg-type]

    def __iter__(self) -> Any:
        if isinstance(self._obj, tuple | list):
            return (self[i] for i in range(len(self._obj)))
        raise NotImplementedError(
            "__iter__ method only implemented for tuples and lists, not type "
            f"{type(self._obj)}"
        )

    def __reversed__(self) -> Any:
        if isinstance(self._obj, tuple | list):
            return (self[i] for i in range(len(self._obj) - 1, -1, -1))
        raise NotImplementedError(
            "__reversed__ method only implemented for tuples and lists, not type "
            f"{type(self._obj)}"
        )

    __hash__ = None  # type: ignore[assignment]


# Arithmetic and comparisons act on the object at the cursor.
def _forward(op: Callable[..., Any]) -> Callable[..., Any]:
    return lambda self, *args: op(self._obj, *args)


def _reflect(op: Callable[..., Any]) -> Callable[..., Any]:
    return lambda self, other: op(other, self._obj)


for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "divmod": divmod,
    "pow": pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "xor": operator.xor,
    "or": operator.or_,
}.items():
    setattr(Cursor, f"__{_name}__", _forward(_op))
    setattr(Cursor, f"__r{_name}__", _reflect(_op))
for _name, _op in {
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "ge": operator.ge,
}.items():
    setattr(Cursor, f"__{_name}__", _forward(_op))
Cursor.__round__ = lambda self, ndigits=None: round(self._obj, ndigits)  # type: ignore[attr-defined]


def cursor(obj: A) -> Cursor[A]:
    """A :class:`Cursor` at the root of ``obj``."""
    return Cursor(obj, None)
