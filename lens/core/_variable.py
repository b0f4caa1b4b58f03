"""``Variable``, the handle on one stored variable, and the storage rules a scope uses:
unboxing on read, merging dicts in place on write, and the shapes an initializer
would give (checked when a stored param is read back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import jax
import numpy as np

from lens._facades import show_at_flax_paths
from lens.core import _meta

T = TypeVar("T")


class VariableStore(Protocol):
    """What a :class:`Variable` reads and writes through: a
    :class:`~lens.core.Scope` (a protocol, so this module stays below the scope
    module that imports it)."""

    @property
    def path_text(self) -> str: ...

    def get_variable(self, col: str, name: str, default: Any = None) -> Any: ...

    def put_variable(self, col: str, name: str, value: Any) -> None: ...

    def is_mutable_collection(self, col: str) -> bool: ...


# Expected parameter shapes, keyed by (init_fn, args, kwargs); saves an eval_shape
# per parameter per apply. Bounded: cleared when full.
_SHAPE_CACHE: dict[Any, tuple[tuple[int, ...], ...]] = {}
_SHAPE_CACHE_MAX = 8192


def leaf_shape(x: Any) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def expected_shapes(init_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    key: Any = (init_fn, args, tuple(sorted(kwargs.items())) if kwargs else ())
    try:
        hit = _SHAPE_CACHE.get(key)  # hashes the key once
    except TypeError:
        key = hit = None
    if hit is not None:
        return hit
    abstract = jax.eval_shape(lambda: init_fn(jax.random.key(0), *args, **kwargs))
    shapes = tuple(leaf_shape(x) for x in jax.tree_util.tree_leaves(abstract))
    if key is not None:
        if len(_SHAPE_CACHE) >= _SHAPE_CACHE_MAX:
            _SHAPE_CACHE.clear()
        _SHAPE_CACHE[key] = shapes
    return shapes


# The types seen to be arrays (``jax.Array`` or ``np.ndarray``; a type's
# instances all are or all are not): one set lookup instead of isinstance's
# Python-level ``jax.Array.__instancecheck__``. A cache of facts about types,
# filled as they are met.
plain_array_types: set[type] = set()


def unbox_value(v: Any) -> Any:
    """``meta.unbox`` with a fast path for the common case (a plain array)."""
    if type(v) in plain_array_types:
        return v
    if isinstance(v, jax.Array | np.ndarray):
        plain_array_types.add(type(v))
        return v
    return _meta.unbox(v)


def put_variable(target: dict[str, Any], key: str, value: Any) -> None:
    """Writes ``target[key] = value``, merging into an existing dict in place.

    Child scopes hold references to their sub-dicts; replacing a dict by a new one
    would leave them looking at the old one.
    """
    old = target.get(key)
    if isinstance(old, dict) and isinstance(value, Mapping):
        for k, v in value.items():
            put_variable(old, k, v)
    else:
        target[key] = value


class Variable(Generic[T]):
    """A handle on one variable: read and write it through ``.value``.

    With ``unbox=True`` (the default) ``.value`` is the plain array even when the
    stored value is an :class:`~lens.core.meta.AxisMetadata` box, and writing keeps
    the box around the new value.
    """

    __slots__ = ("scope", "collection", "name", "unbox")

    def __init__(
        self, scope: VariableStore, collection: str, name: str, unbox: bool = True
    ):
        self.scope = scope
        self.collection = collection
        self.name = name
        self.unbox = unbox

    @property
    def value(self) -> T:
        """The current value (unboxed unless ``unbox=False``)."""
        v = self.scope.get_variable(self.collection, self.name)
        return unbox_value(v) if self.unbox else v

    @value.setter
    def value(self, value: T) -> None:
        if self.unbox:
            old = self.scope.get_variable(self.collection, self.name)
            if _meta.boxes_take(old, value):
                value = _meta.replace_boxed(old, value)
        self.scope.put_variable(self.collection, self.name, value)

    def is_mutable(self) -> bool:
        """Whether the variable's collection is mutable in its scope."""
        return self.scope.is_mutable_collection(self.collection)

    def __repr__(self) -> str:
        return (
            f"Variable(collection={self.collection!r}, name={self.name!r}, "
            f"path={self.scope.path_text!r})"
        )


show_at_flax_paths(__name__)
