"""Objects with reference semantics (flax.nnx's ``pytreelib``): :class:`Object`
(``Pytree``), the base of every ``nnx.Module``, and the attribute markers
(``data``/``static``, ``Data``/``Static``, ``nnx.dataclass``) that say which
attributes hold state.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterator
from typing import Any, Generic, Self, TypeVar

import jax

from lens._views import install as install_views
from lens.nnx import reprlib
from lens.nnx.tracers import check_mutable, current_frame
from lens.nnx.variablelib import RngState, StaticValue, Variable


class Object:
    """A node with reference semantics: attributes hold variables, other objects,
    lists/tuples/dicts of them, arrays and static values."""

    def __init_subclass__(cls, pytree: bool = True, **kwargs: Any) -> None:
        # As flax.nnx 0.12: every subclass is a JAX pytree (``jax.tree.map(f,
        # module)``, ``jax.jit(f)(module)``) unless it opts out with
        # ``class M(nnx.Module, pytree=False)``; it is a graph node either way.
        super().__init_subclass__(**kwargs)
        cls._lens_pytree = pytree
        if pytree:
            jax.tree_util.register_pytree_with_keys(
                cls,
                _flatten_object_with_keys,
                functools.partial(_unflatten_object, cls),
                _flatten_object,
            )

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        obj = object.__new__(cls)
        object.__setattr__(obj, "_lens_frame", current_frame())
        return obj

    _lens_pytree = True

    def __setattr__(self, name: str, value: Any) -> None:
        check_mutable(self, f"set {name!r}")
        if isinstance(value, _Marked):  # nnx.data(x) / nnx.static(x)
            if value.kind == "static" and type(self)._lens_pytree:
                _check_static(self, name, value.value, explicit=True)
            _marks(self)[name] = value.kind
            value = value.value
        elif type(self)._lens_pytree and _is_static(self, name):
            _check_static(self, name, value, explicit=False)
        # As flax.nnx's: the attribute is replaced, a Variable there included
        # (a quantizer swaps a kernel Param for a pytree of Params this way).
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        check_mutable(self, f"delete {name!r}")
        object.__delattr__(self, name)

    def __repr__(self) -> str:
        return _repr_node(self, 0, set())

    @property
    def _pytree__nodes(self) -> dict[Any, bool]:
        """flax.nnx's attribute table: each attribute and whether it is data
        (a pytree child) rather than static."""
        keys, is_data_key, _ = _object_parts(self)[1]
        return dict(zip(keys, is_data_key, strict=True))

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


# An object as a pytree: its data attributes (those holding arrays, Variables or
# objects, sorted by name as flax.nnx sorts them) are the children; the others,
# with the order of all keys, are the static aux data (StaticValue: compared by
# equality when hashable, else by identity, so jit can cache on it).
def _object_parts(obj: Object) -> tuple[list[tuple[Any, Any]], Any]:
    keys, is_data_key, statics, children = [], [], [], []
    marks = _declared(obj)
    for k, v in obj._graph_items():
        keys.append(k)
        held = marks[k] == "data" if k in marks else has_data(v)
        is_data_key.append(held)
        if held:
            children.append((k, v))
        else:
            statics.append(StaticValue(v))
    return children, (tuple(keys), tuple(is_data_key), tuple(statics))


def _key_entry(k: Any) -> Any:
    if isinstance(k, int):
        return jax.tree_util.SequenceKey(k)
    return jax.tree_util.GetAttrKey(k)


def _flatten_object_with_keys(obj: Object) -> tuple[list[tuple[Any, Any]], Any]:
    children, aux = _object_parts(obj)
    return [(_key_entry(k), v) for k, v in children], aux


def _flatten_object(obj: Object) -> tuple[list[Any], Any]:
    children, aux = _object_parts(obj)
    return [v for _, v in children], aux


def _unflatten_object(cls: type, aux: Any, children: Any) -> Object:
    keys, is_data_key, statics = aux
    obj = Object.__new__(cls)
    data_values, static_values = iter(children), iter(statics)
    marks = _marks(obj)
    for k, held in zip(keys, is_data_key, strict=True):
        obj._graph_set(k, next(data_values) if held else next(static_values).value)
        marks[k] = "data" if held else "static"
    return obj


_PRIVATE_ATTRIBUTES = frozenset({"_lens_frame", "_items", "_lens_marks"})


class _Marked:
    """What ``nnx.data(x)`` / ``nnx.static(x)`` return: ``x``, to be stored as the
    attribute's value, with whether the attribute is data or static."""

    __slots__ = ("kind", "value")

    def __init__(self, value: Any, kind: str):
        self.value = value
        self.kind = kind


def unmark(value: Any) -> Any:
    """``value`` without an ``nnx.data``/``nnx.static`` declaration (a container
    item holds the value itself)."""
    return value.value if isinstance(value, _Marked) else value


def _marks(obj: Object) -> dict[str, str]:
    """The attributes ``nnx.data``/``nnx.static`` declared on this object."""
    marks = obj.__dict__.get("_lens_marks")
    if marks is None:
        marks = {}
        object.__setattr__(obj, "_lens_marks", marks)
    return marks


def _annotation_kind(annotation: Any) -> str | None:
    if isinstance(annotation, str):  # postponed: "nnx.Data[int]"
        head = annotation.split("[", 1)[0].rsplit(".", 1)[-1]
        return {"Data": "data", "Static": "static"}.get(head)
    origin = typing.get_origin(annotation)
    return "data" if origin is Data else "static" if origin is Static else None


def _class_marks(cls: type) -> dict[str, str]:
    """The attributes a class declares data or static: ``nnx.Data[T]`` /
    ``nnx.Static[T]`` annotations, then ``nnx.data()``/``nnx.static()`` fields
    (computed once per class)."""
    cached = cls.__dict__.get("_lens_class_marks")
    if cached is None:
        cached = {}
        for klass in reversed(cls.__mro__):
            for name, ann in vars(klass).get("__annotations__", {}).items():
                kind = _annotation_kind(ann)
                if kind is not None:
                    cached[name] = kind
        fields = getattr(cls, "__dataclass_fields__", {})
        cached.update(
            {
                name: f.metadata["nnx"]
                for name, f in fields.items()
                if "nnx" in f.metadata
            }
        )
        type.__setattr__(cls, "_lens_class_marks", cached)
    return cached


def _declared(obj: Object) -> dict[str, str]:
    """Declared data/static attributes: by the class (annotations, fields), then
    those set with ``nnx.data(x)``/``nnx.static(x)``."""
    return {**_class_marks(type(obj)), **(obj.__dict__.get("_lens_marks") or {})}


def _is_static(obj: Object, name: str) -> bool:
    marks = obj.__dict__.get("_lens_marks")
    if marks and name in marks:
        return marks[name] == "static"
    return _class_marks(type(obj)).get(name) == "static"


def _check_static(obj: Object, name: str, value: Any, *, explicit: bool) -> None:
    """A static attribute must not hold arrays, Variables or objects."""
    if not has_data(value):
        return
    where = f"attribute '{name}' of Pytree type '{type(obj)}'"
    fix = (
        f"\nMake it data instead: obj.{name} = nnx.data(...), or declare the "
        f"field with nnx.data(); or opt out: class {type(obj).__name__}(..., "
        "pytree=False)."
    )
    if explicit:
        msg = (
            f"Found data in value of type '{type(value)}' annotated with "
            f"nnx.static(...) when setting {where}."
        )
    elif name not in vars(obj):
        msg = f"Found unexpected data on value of type {type(value)} in static {where}."
    elif is_data(value):
        msg = f"Cannot assign data value of type '{type(value)}' to static {where}."
    else:
        msg = f"Found data on value of type '{type(value)}' assigned to static {where}."
    raise ValueError(msg + fix)


def node_items(obj: Object) -> list[tuple[Any, Any]]:
    return obj._graph_items()


def _repr_node(x: Any, depth: int, seen: set[int]) -> str:
    """Flax's module repr: attributes in the order they were set, Variables with
    their values, a ``# Param: 9 (36 B)`` comment per node."""
    if isinstance(x, Object):
        if id(x) in seen:
            return f"<shared {type(x).__name__}>"
        seen.add(id(x))
        items = [(k, v) for k, v in vars(x).items() if k not in _PRIVATE_ATTRIBUTES]
        if type(x)._graph_items is not Object._graph_items:  # nnx.List, nnx.Dict
            items = node_items(x)
        return reprlib.node_repr(
            type(x).__name__,
            [(str(k), _repr_node(v, depth + 1, seen)) for k, v in items],
            comment=_node_comment(x),
        )
    if isinstance(x, list | tuple) and any(isinstance(e, Object) for e in x):
        body = ",\n".join(
            "  " + reprlib.indent(_repr_node(e, depth + 1, seen), "  ") for e in x
        )
        o, c = ("[", "]") if isinstance(x, list) else ("(", ")")
        return f"{o}\n{body}\n{c}"
    return repr(x)


def _node_comment(x: Object) -> str:
    """`` # Param: 9 (36 B), BatchStat: 2 (8 B), Total: 11 (44 B)`` over the
    node's variables (rng keys and counts together as ``RngState``)."""
    by_type: dict[str, list[Any]] = {}
    for v in _variables_below(x, set()):
        name = "RngState" if isinstance(v, RngState) else type(v).__name__
        by_type.setdefault(name, []).append(v._value)
    parts = [
        reprlib.size_comment(vals, f"{name}: ")[3:] for name, vals in by_type.items()
    ]
    parts = [p for p in parts if p]
    if len(parts) > 1:
        everything = [v for vals in by_type.values() for v in vals]
        parts.append(reprlib.size_comment(everything, "Total: ")[3:])
    return f" # {', '.join(parts)}" if parts else ""


def _variables_below(x: Any, seen: set[int]) -> Iterator[Variable]:
    if id(x) in seen:
        return
    if isinstance(x, Variable):
        seen.add(id(x))
        yield x
    elif isinstance(x, Object):
        seen.add(id(x))
        for _, v in node_items(x):
            yield from _variables_below(v, seen)
    elif isinstance(x, list | tuple | dict):
        for v in x.values() if isinstance(x, dict) else x:
            yield from _variables_below(v, seen)


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


_MISSING: Any = object()


def data(value: Any = _MISSING, /, **kwargs: Any) -> Any:
    """Declares an attribute data (a pytree child, whatever its value), as
    flax.nnx's ``nnx.data``: ``self.x = nnx.data(1.0)``, or as a dataclass field,
    ``x: float = nnx.data(default=1.0)`` (``kwargs`` go to ``dataclasses.field``).

    Arrays, Variables, objects and containers of them are data without it.
    """
    return _declare(value, "data", kwargs)


def static(value: Any = _MISSING, /, **kwargs: Any) -> Any:
    """Declares an attribute static (part of the structure, not a pytree child),
    as flax.nnx's ``nnx.static``; see :func:`data`."""
    return _declare(value, "static", kwargs)


def _declare(value: Any, kind: str, kwargs: dict[str, Any]) -> Any:
    if value is _MISSING:
        metadata = {**kwargs.pop("metadata", {}), "nnx": kind}
        return dataclasses.field(metadata=metadata, **kwargs)
    if kwargs:
        raise TypeError(
            f"nnx.{kind}(value, ...) takes no field arguments ({', '.join(kwargs)}).\n"
            f"Write nnx.{kind}(value) for an attribute, or nnx.{kind}(default=value, "
            "...) for a dataclass field."
        )
    return _Marked(value, kind)


# Objects display through lens.display (registered there; loaded on first display).
install_views(Object)
