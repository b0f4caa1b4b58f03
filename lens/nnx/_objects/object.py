"""Objects with reference semantics (flax.nnx's ``pytreelib``): :class:`Pytree`,
the base of every ``nnx.Module`` and nnx object (a JAX pytree unless a subclass says
``pytree=False``), :class:`Object` (one that never is), and the attribute markers
(``data``/``static``, ``Data``/``Static``, ``nnx.dataclass``) that say which
attributes hold state.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, Self, TypeVar

import jax
import numpy as np

from lens import errors
from lens._facades import show_at_flax_paths
from lens._views import Displayable
from lens.configurations import config
from lens.nnx import reprlib
from lens.nnx._objects import repr as pytree_repr
from lens.nnx._objects.state import PytreeState
from lens.nnx._variables.static import StaticValue
from lens.nnx._variables.variable import Variable
from lens.nnx.tracers import check_mutable

# flax.nnx's pytreelib names for the object repr machinery (lens.nnx._objects.repr).
ObjectContext = pytree_repr.ObjectContext
OBJECT_CONTEXT = pytree_repr.OBJECT_CONTEXT
ArrayRepr = pytree_repr.ArrayRepr
MutableArrayRepr = pytree_repr.MutableArrayRepr
VariableRepr = pytree_repr.VariableRepr

# Set when the documentation is built (flax.nnx's switch): classes then carry
# their __init__'s signature for sphinx.
BUILDING_DOCS = "FLAX_DOC_BUILD" in os.environ


class AttributeStatus(NamedTuple):
    """How an attribute is being set: as data or static, and whether that was
    said explicitly (``nnx.data``/``nnx.static``) or found from the value."""

    is_data: bool
    explicit: bool


class ObjectMeta(abc.ABCMeta):
    """The metaclass of nnx objects (flax.nnx's ``PytreeMeta``): calling a class
    makes the object (``__new__``), runs :meth:`_pytree_meta_construct` (its
    ``__init__``; a subclass of this metaclass may wrap it), then checks a pytree
    object's attributes (:func:`check_pytree`).

    An ``abc.ABCMeta``, so an object class can declare abstract methods; type
    checks are ``type``'s (no virtual subclasses), which keeps ``isinstance`` fast.
    """

    __instancecheck__ = type.__instancecheck__  # type: ignore[assignment]
    __subclasscheck__ = type.__subclasscheck__  # type: ignore[assignment]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = cls.__new__(cls, *args, **kwargs)
        if isinstance(obj, cls):
            cls._pytree_meta_construct(obj, *args, **kwargs)
            if getattr(cls, "_lens_pytree", False):
                check_pytree(obj)
        return obj

    def _pytree_meta_construct(cls, self: Any, *args: Any, **kwargs: Any) -> None:
        self.__init__(*args, **kwargs)


PytreeMeta = ObjectMeta


class Pytree(Displayable, reprlib.Representable, metaclass=ObjectMeta):
    """A node with reference semantics: attributes hold variables, other objects,
    lists/tuples/dicts of them, arrays and static values."""

    __lens_view__ = "nnx object"  # drawn by lens.display

    def __init_subclass__(cls, pytree: bool | None = None, **kwargs: Any) -> None:
        # As flax.nnx 0.12: every subclass is a JAX pytree (``jax.tree.map(f,
        # module)``, ``jax.jit(f)(module)``) unless it opts out with
        # ``class M(nnx.Module, pytree=False)`` (or config.flax_pytree_module is
        # off); it is a graph node either way.
        super().__init_subclass__(**kwargs)
        if slots := vars(cls).get("__slots__", ()):
            raise TypeError(
                "Pytree currently does not support __slots__, found "
                f"__slots__={slots} in '{cls.__name__}'.\nRemove __slots__: nnx "
                "objects keep their attributes in __dict__."
            )
        if pytree is None:
            pytree = bool(config.flax_pytree_module)
        cls._lens_pytree = pytree
        _warn_deprecated_annotations(cls)
        if BUILDING_DOCS:
            cls.__signature__ = inspect.signature(cls.__init__)
        if pytree:
            jax.tree_util.register_pytree_with_keys(
                cls,
                _flatten_object_with_keys,
                functools.partial(_unflatten_object, cls),
                _flatten_object,
            )

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Cooperative: a framework's base class later in the MRO may define
        # __new__ of its own (recording the constructor's arguments, say), and
        # runs as it would under flax.nnx, which defines none.
        following = super().__new__
        if following is object.__new__:
            obj = following(cls)
        else:
            obj = following(cls, *args, **kwargs)
        if "_pytree__state" not in vars(obj):
            object.__setattr__(obj, "_pytree__state", PytreeState())
        return obj

    if TYPE_CHECKING:
        _pytree__state: PytreeState

    @property
    def _lens_frame(self) -> Any:
        """The nnx transform frame this object was made in (its trace state's)."""
        state = vars(self).get("_pytree__state")
        return None if state is None else state._trace_state._lens_frame

    # pickling, as flax.nnx's: the instance dict (its ``_pytree__state`` included,
    # which an unpickled object takes anew in the trace that unpickles it)
    def __getstate__(self) -> dict[str, Any]:
        return vars(self).copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # flax.nnx also pickles ``_pytree__nodes`` (which attributes are data):
        # lens works it out (a property), so a flax pickle's copy is dropped.
        vars(self).update((k, v) for k, v in state.items() if k != "_pytree__nodes")

    _lens_pytree = True

    def _check_valid_context(self, error_msg: Callable[[], str]) -> None:
        """Raises :class:`~lens.errors.TraceContextError` (``error_msg()``) if this
        object was made in another JAX trace than the one running now. flax.nnx's
        hook, checked before every attribute is set or deleted: a framework may
        override it (to allow its own bookkeeping inside its shape inference, say)
        and call ``super()._check_valid_context(error_msg)`` otherwise."""
        state = self.__dict__.get("_pytree__state")
        if state is not None and not state.trace_state.is_valid():
            raise errors.TraceContextError(error_msg())

    def __setattr__(self, name: str, value: Any) -> None:
        check_mutable(self, f"set {name!r}")
        check_trace(self)
        if isinstance(value, list | tuple | dict):
            _check_no_nested_marks(self, name, value)
        if isinstance(value, _Marked):  # nnx.data(x) / nnx.static(x)
            if value.kind == "static" and type(self)._lens_pytree:
                _check_static(self, name, value.value, explicit=True)
            _marks(self)[name] = value.kind
            value = value.value
        elif type(self)._lens_pytree:
            if _is_static(self, name):
                _check_static(self, name, value, explicit=False)
            elif _stays_data(self, name, value):
                _marks(self)[name] = "data"  # as flax.nnx's: data status sticks
        # As flax.nnx's: the attribute is replaced, a Variable there included
        # (a quantizer swaps a kernel Param for a pytree of Params this way).
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        check_mutable(self, f"delete {name!r}")
        check_trace(self)
        object.__delattr__(self, name)

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        return pytree_repr.object_nnx_repr(self)

    def _repr_attributes(self) -> Iterator[tuple[str, Any]]:
        """The attributes the repr shows, in the order they were set: not lens's
        own, nor private ones (``_x``) unless they hold data."""
        for name, value in vars(self).items():
            if name in _PRIVATE_ATTRIBUTES or str(name).startswith("_pytree__"):
                continue
            if str(name).startswith("_") and not attribute_is_data(self, name, value):
                continue
            yield name, value

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
def _object_parts(obj: Pytree) -> tuple[list[tuple[Any, Any]], Any]:
    keys, is_data_key, statics, children = [], [], [], []
    marks = declared(obj)
    for k, v in obj._graph_items():
        keys.append(k)
        held = marks[k] == "data" if k in marks else holds_data(v)
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


def _flatten_object_with_keys(obj: Pytree) -> tuple[list[tuple[Any, Any]], Any]:
    children, aux = _object_parts(obj)
    return [(_key_entry(k), v) for k, v in children], aux


def _flatten_object(obj: Pytree) -> tuple[list[Any], Any]:
    children, aux = _object_parts(obj)
    return [v for _, v in children], aux


def _unflatten_object(cls: type, aux: Any, children: Any) -> Pytree:
    keys, is_data_key, statics = aux
    obj = Pytree.__new__(cls)
    data_values, static_values = iter(children), iter(statics)
    items = [
        (k, held, next(data_values) if held else next(static_values).value)
        for k, held in zip(keys, is_data_key, strict=True)
    ]
    if not any(isinstance(k, int) for k in keys):  # (a list keeps its order)
        # data attributes first, then the static ones, as flax.nnx rebuilds an
        # object: one unflattened (after jax.eval_shape, say) prints them so
        items.sort(key=lambda item: not item[1])
    marks = _marks(obj)
    for k, held, value in items:
        obj._graph_set(k, value)
        marks[k] = "data" if held else "static"
    return obj


_PRIVATE_ATTRIBUTES = frozenset(
    {"_lens_frame", "_items", "_lens_marks", "_pytree__state"}
)


def private_attributes() -> frozenset[str]:
    """The attributes lens keeps on every object for itself (not graph state)."""
    return _PRIVATE_ATTRIBUTES


def check_trace(obj: Pytree) -> None:
    """An object made outside the JAX trace running now (a ``jax.jit``,
    ``jax.grad``, ...) cannot be mutated in it, as in flax.nnx: asked through the
    object's ``_check_valid_context`` hook, which subclasses may override."""
    obj._check_valid_context(lambda: _trace_message(obj))


def _trace_message(obj: Pytree) -> str:
    return (
        f"Cannot mutate '{type(obj).__name__}' from different trace level: it "
        "was made outside the JAX transform running now and captured by its "
        "function.\nPass it to the function as an argument (a jax.jit rebuilds "
        "it inside), or use the nnx transform (nnx.jit, nnx.grad, ...), which "
        "carries its updates out."
    )


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


def _marks(obj: Pytree) -> dict[str, str]:
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
    metadata = getattr(annotation, "__metadata__", ())
    if DataAnnotation in metadata:
        return "data"
    return "static" if StaticAnnotation in metadata else None


def _warn_deprecated_annotations(cls: type) -> None:
    """flax.nnx deprecates ``x: nnx.Data[T]`` / ``nnx.Static[T]`` for field
    declarations (they still work)."""
    for ann in vars(cls).get("__annotations__", {}).values():
        kind = _annotation_kind(ann)
        if kind is not None:
            name = kind.capitalize()
            warnings.warn(
                f"'{name}' is deprecated, please replace:\n\n  some_field: "
                f"nnx.{name}[SomeType]\n\nwith:\n\n  some_field: SomeType = "
                f"nnx.{kind}()\n\n",
                DeprecationWarning,
                stacklevel=4,
            )


def _field_kind(cls: type, name: str, f: dataclasses.Field) -> str | None:
    if "static" not in f.metadata:
        return None
    static = f.metadata["static"]
    if not isinstance(static, bool):
        raise ValueError(
            f"Invalid 'static' metadata for attribute '{cls.__name__}.{name}': "
            f"expected bool, got {type(static).__name__}.\nDeclare the field with "
            "nnx.data() or nnx.static()."
        )
    return "static" if static else "data"


def _class_marks(cls: type) -> dict[str, str]:
    """The attributes a class declares data or static: ``nnx.Data[T]`` /
    ``nnx.Static[T]`` annotations, then fields with ``'static'`` metadata
    (``nnx.data()``/``nnx.static()``), computed once per class."""
    cached = cls.__dict__.get("_lens_class_marks")
    if cached is None:
        cached = {}
        for klass in reversed(cls.__mro__):
            for name, ann in vars(klass).get("__annotations__", {}).items():
                kind = _annotation_kind(ann)
                if kind is not None:
                    cached[name] = kind
        fields = getattr(cls, "__dataclass_fields__", {})
        for name, f in fields.items():
            kind = _field_kind(cls, name, f)
            if kind is None:
                continue
            if cached.get(name, kind) != kind:
                raise ValueError(
                    f"Conflicting pytree annotation for attribute "
                    f"'{cls.__name__}.{name}': previously registered as "
                    f"{cached[name]}, but found nnx.{kind}(...) annotation.\n"
                    "Keep one of the two declarations."
                )
            cached[name] = kind
        type.__setattr__(cls, "_lens_class_marks", cached)
    return cached


def declared(obj: Pytree) -> dict[str, str]:
    """Declared data/static attributes: by the class (annotations, fields), then
    those set with ``nnx.data(x)``/``nnx.static(x)``."""
    return {**_class_marks(type(obj)), **(obj.__dict__.get("_lens_marks") or {})}


def declared_kind(obj: Pytree, name: str) -> str | None:
    """``declared(obj).get(name)`` without building the merged dict (the graph
    walk asks this of every static attribute)."""
    marks = obj.__dict__.get("_lens_marks")
    if marks and name in marks:
        return marks[name]
    return _class_marks(type(obj)).get(name)


def _is_static(obj: Pytree, name: str) -> bool:
    return declared_kind(obj, name) == "static"


def _stays_data(obj: Pytree, name: str, value: Any) -> bool:
    """An undeclared data attribute stays data when a value without data (a
    string, None) replaces it, as in flax.nnx."""
    d = obj.__dict__
    return (name in d and name not in declared(obj) and not has_data(value)) and bool(
        has_data(d[name])
    )


def _check_static(obj: Pytree, name: str, value: Any, *, explicit: bool) -> None:
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


def _check_no_nested_marks(obj: Pytree, name: str, value: Any) -> None:
    """``nnx.data(...)``/``nnx.static(...)`` are assigned to an attribute
    directly, never inside a list, tuple or dict."""
    leaves = jax.tree.leaves(
        value, is_leaf=lambda x: isinstance(x, _Marked | Pytree | Variable)
    )
    tags = {x.kind for x in leaves if isinstance(x, _Marked)}
    if tags:
        raise ValueError(
            f"Found unexpected tags {tags} on attribute '{type(obj).__name__}."
            f"{name}'. Values from nnx.data(...) and\nnx.static(...) should be "
            "assigned to nnx.Pytree attributes directly, they should not be inside "
            f"other structures. Got value of type '{type(value)}' on Pytree of type "
            f"'{type(obj)}'.\nWrap the whole value instead: obj.{name} = "
            "nnx.data([...]), or use nnx.List / nnx.Dict for per-item control."
        )


def check_pytree(pytree: Any) -> None:
    """Checks an object's attributes as flax.nnx does after ``__init__``: no
    attribute declared static (``nnx.static``, ``nnx.Static``) holds data, and no
    ``nnx.data``/``nnx.static`` marker sits inside a container.

    Raises:
        TypeError: ``pytree`` is not an nnx object.
        ValueError: an attribute breaks one of the rules (named in the message).
    """
    if not isinstance(pytree, Pytree):
        raise TypeError(
            f"Expected a Pytree, got {type(pytree)}.\ncheck_pytree takes an nnx "
            "object (an nnx.Pytree / nnx.Module instance)."
        )
    marks = declared(pytree)
    for name, value in pytree._graph_items():
        if isinstance(value, list | tuple | dict):
            _check_no_nested_marks(pytree, name, value)
        if marks.get(name) == "static" and has_data(value):
            raise ValueError(
                f"Found unexpected data on value of type {type(value)} in static "
                f"attribute '{name}' of Pytree type '{type(pytree)}'.\nMake it "
                f"data: obj.{name} = nnx.data(...), or declare the field with "
                "nnx.data(); or remove the arrays/Variables/objects from it."
            )


def node_items(obj: Pytree) -> list[tuple[Any, Any]]:
    return obj._graph_items()


def attribute_is_data(obj: Pytree, name: str, value: Any) -> bool:
    """Whether attribute ``name`` (holding ``value``) is data: as declared
    (``nnx.data``/``nnx.static``, annotations), else whether it holds data."""
    marks = declared(obj)
    return marks[name] == "data" if name in marks else holds_data(value)


A = TypeVar("A")

DataAnnotation = "__data__"
StaticAnnotation = "__static__"

Data = Annotated[A, DataAnnotation]
"""``x: nnx.Data[T]`` (flax.nnx's, deprecated there for ``nnx.data()``): the
attribute holds state whatever its value. To a type checker it is a ``T``."""

Static = Annotated[A, StaticAnnotation]
"""``x: nnx.Static[T]``: the attribute is static whatever its value (a ``T``)."""

DATA_REGISTRY: set[type] = set()
"""The types :func:`register_data_type` added: their values are data."""


def register_data_type(type_: type[A], /) -> type[A]:
    """Treat values of ``type_`` as state (data) in objects; returns ``type_``,
    so it also works as a class decorator."""
    DATA_REGISTRY.add(type_)
    forget_data_types()
    return type_


def is_data(value: Any, /) -> bool:
    """Whether ``value`` itself is state: an array (JAX or NumPy), a Variable, a
    graph node (an object, or a type registered as one), or a value of a type
    :func:`register_data_type` registered. A list of arrays is not (see
    :func:`has_data`)."""
    t = type(value)
    known = _DATA_TYPES.get(t)
    if known is None:
        if len(_DATA_TYPES) > 4096:  # classes redefined cell after cell
            _DATA_TYPES.clear()
        known = _DATA_TYPES[t] = _is_data_type(value)
    return known


def _is_data_type(value: Any) -> bool:
    """:func:`is_data`'s answer, which depends on ``type(value)`` alone (a JAX
    tracer is an array, a hijax Variable a Variable)."""
    if isinstance(value, jax.Array | np.ndarray | Variable | Pytree):
        return True
    if type(value) in DATA_REGISTRY:
        return True
    registry = sys.modules.get("lens.nnx._graph.registry")  # loaded by graph code
    return registry is not None and type(value) in registry.GRAPH_REGISTRY


# is_data per type, asked on every attribute of every object a pytree flatten
# meets; forgotten when a type is registered as data or as a graph node.
_DATA_TYPES: dict[type, bool] = {}


def forget_data_types() -> None:
    """Drops :func:`is_data`'s per-type answers (a registration changed them)."""
    _DATA_TYPES.clear()


_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None)})


def holds_data(value: Any, /) -> bool:
    """``bool(has_data(value))``, answered without a tree walk for the values an
    object's attributes mostly hold: a scalar, string or None (unless its type
    was registered as data), or itself data (an array, Variable or object)."""
    t = type(value)
    if t in _SCALARS:
        return t in DATA_REGISTRY
    if is_data(value):
        return True
    if (t is tuple or t is list) and all(type(x) in _SCALARS for x in value):
        return False  # kernel_size=(3, 3), a list of names: unless registered
    return bool(has_data(value))


def has_data(value: Any, /) -> list[Any]:
    """The data (see :func:`is_data`) anywhere in ``value``: a list of
    Variables has data. Empty (falsy) when there is none."""
    seen: set[int] = set()

    def stop(x: Any) -> bool:
        if id(x) in seen:
            return True
        seen.add(id(x))
        return is_data(x)

    return [x for x in jax.tree.leaves(value, is_leaf=stop) if is_data(x)]


def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` for objects (``@nnx.dataclass class P(nnx.Pytree)``):
    fields become attributes; the repr stays the object's (``repr=False``). As
    flax.nnx's, ``eq=True`` by default: instances compare by their fields (and so
    are unhashable, which the graph functions and transforms do not need); pass
    ``eq=False`` to compare by identity."""
    kwargs["repr"] = False
    if cls is None:
        return functools.partial(dataclass, **kwargs)
    return dataclasses.dataclass(cls, **kwargs)


_MISSING: Any = dataclasses.MISSING


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
    if value is not _MISSING and kwargs:
        raise TypeError(
            f"nnx.{kind}() accepts either a single positional argument or keyword "
            f"arguments, but not both.\nWrite nnx.{kind}(value) for an attribute, "
            f"or nnx.{kind}(default=value, ...) for a dataclass field."
        )
    if value is not _MISSING:
        return _Marked(value, kind)
    metadata = {"nnx_value": value}
    extra = kwargs.pop("metadata", None)
    if extra is not None:
        if "static" in extra:
            raise ValueError(
                f"Cannot use 'static' key in metadata argument for nnx.{kind}.\n"
                f"nnx.{kind} sets it; use nnx.data or nnx.static to choose."
            )
        metadata.update(extra)
    metadata["static"] = kind == "static"
    return dataclasses.field(metadata=metadata, **kwargs)


# After the helpers: making the class runs Pytree.__init_subclass__, which uses them.
class Object(Pytree, pytree=False):
    """Base class for NNX objects that are not pytrees (flax.nnx's ``Object``).

    A graph node like every nnx object (``nnx.state``, ``nnx.jit`` and the other
    nnx functions see its attributes), but a leaf to ``jax.tree`` functions, and
    its attributes take any value: no data/static rules apply. ``class
    Foo(nnx.Object)`` is ``class Foo(nnx.Pytree, pytree=False)``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        pytree = kwargs.pop("pytree", False)
        if pytree is not False:
            raise ValueError(
                "Object is not a pytree, but 'pytree' was explicitly set to "
                f"{pytree!r} for type {cls}.\nSubclass nnx.Pytree for a pytree: "
                f"class {cls.__name__}(nnx.Pytree)."
            )
        super().__init_subclass__(pytree=False, **kwargs)


# Objects display through lens.display (registered there; loaded on first display).


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
