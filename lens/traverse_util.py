"""Walking and rebuilding nested variable dicts (``lens.traverse_util``).

The same names as ``flax.traverse_util``: :func:`flatten_dict` and
:func:`unflatten_dict` convert between nested dicts and ``{path: leaf}``,
:func:`path_aware_map` maps with each leaf's path, and the :class:`Traversal`
family selects parts of a structure to read or update without mutating it.

Example:
    >>> flat = flatten_dict({"params": {"Dense_0": {"kernel": 1, "bias": 2}}})
    >>> flat[("params", "Dense_0", "bias")]
    2
    >>> unflatten_dict(flat, sep=None) == {"params": {"Dense_0": {"kernel": 1, "bias": 2}}}
    True
    >>> flatten_dict({"a": {"b": 1}}, sep="/")
    {'a/b': 1}
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jax

from lens import struct
from lens.cursor import is_named_tuple

Path = tuple[Any, ...]


@struct.dataclass
class _EmptyNode:
    pass


empty_node = _EmptyNode()
"""Marks an empty dict in a flat dict (``flatten_dict(keep_empty_nodes=True)``)."""


def flatten_dict(
    xs: Mapping[Any, Any],
    keep_empty_nodes: bool = False,
    is_leaf: Callable[[Path, Any], bool] | None = None,
    sep: str | None = None,
) -> dict[Any, Any]:
    """Flattens a nested dict into ``{path tuple (or sep-joined str): leaf}``.

    Args:
      xs: the nested dict (a ``FrozenDict`` or any mapping).
      keep_empty_nodes: keep empty sub-dicts, as :data:`empty_node` leaves.
      is_leaf: ``is_leaf(path, value)`` stops the descent at a mapping.
      sep: join the keys of a path with this string instead of making tuples.
    """
    if not isinstance(xs, Mapping):
        raise TypeError(f"expected a dict (Mapping), got {type(xs).__name__}")
    out: dict[Any, Any] = {}

    def key(path: Path) -> Any:
        return sep.join(path) if sep is not None else path

    def walk(x: Any, path: Path) -> None:
        if isinstance(x, Mapping) and not (is_leaf is not None and is_leaf(path, x)):
            if not x:
                if keep_empty_nodes and path:
                    out[key(path)] = empty_node
                return
            for k, v in x.items():
                walk(v, path + (k,))
        else:
            out[key(path)] = x

    walk(xs, ())
    return out


def unflatten_dict(xs: Mapping[Any, Any], sep: str | None = None) -> dict[Any, Any]:
    """The inverse of :func:`flatten_dict`: ``{path: leaf}`` to a nested dict.

    Args:
      xs: a flat dict whose keys are tuples (or ``sep``-joined strings).
      sep: the separator used when flattening, if any.
    """
    if not isinstance(xs, Mapping):
        raise TypeError(f"expected a dict (Mapping), got {type(xs).__name__}")
    out: dict[Any, Any] = {}
    for path, value in xs.items():
        if sep is not None:
            path = tuple(path.split(sep))
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = {} if value is empty_node else value
    return out


def path_aware_map(
    f: Callable[[Path, Any], Any], nested_dict: Mapping[Any, Any]
) -> dict[Any, Any]:
    """Maps ``f(path, leaf)`` over a nested dict; returns a new nested dict.

    Example:
        >>> path_aware_map(lambda p, x: x * 2 if p[-1] == "kernel" else x,
        ...                {"Dense": {"kernel": 1, "bias": 1}})
        {'Dense': {'kernel': 2, 'bias': 1}}
    """
    flat = flatten_dict(nested_dict, keep_empty_nodes=True)
    return unflatten_dict(
        {k: f(k, v) if v is not empty_node else v for k, v in flat.items()}
    )


# -------------------------------------------------------------------- traversals


class Traversal(abc.ABC):
    """Selects parts of a structure; :meth:`iterate` reads them, :meth:`update` rebuilds.

    Traversals never mutate their input. Compose them by attribute and item access
    on :data:`t_identity`: ``t_identity.each()['foo']``.
    """

    @abc.abstractmethod
    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        """Returns a copy of ``inputs`` with ``fn`` applied to the selected parts."""

    @abc.abstractmethod
    def iterate(self, inputs: Any) -> Iterator[Any]:
        """Yields the selected parts of ``inputs``."""

    def set(self, values: list[Any], inputs: Any) -> Any:
        """Replaces the selected parts, in order, by ``values``."""
        values = list(values)
        it = iter(values)

        def take(_: Any) -> Any:
            try:
                return next(it)
            except StopIteration:
                raise ValueError(
                    "Not enough values to set: the traversal selects more parts "
                    f"than the {len(values)} given."
                ) from None

        out = self.update(take, inputs)
        if next(it, _DONE) is not _DONE:
            raise ValueError("Too many values to set: some were not used.")
        return out

    def compose(self, other: Traversal) -> Traversal:
        """``other`` applied to what this traversal selects."""
        return TraverseCompose(self, other)

    def merge(self, *traversals: Traversal) -> Traversal:
        """Each of ``traversals`` applied to what this one selects."""
        return self.compose(TraverseMerge(*traversals))

    def each(self) -> Traversal:
        """Every element of the selected sequences."""
        return self.compose(TraverseEach())

    def tree(self) -> Traversal:
        """Every pytree leaf of the selected parts."""
        return self.compose(TraverseTree())

    def filter(self, fn: Callable[[Any], bool]) -> Traversal:
        """Only the selected parts for which ``fn`` is true."""
        return self.compose(TraverseFilter(fn))

    def __getattr__(self, attr: str) -> Traversal:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self.compose(TraverseAttr(attr))

    def __getitem__(self, key: Any) -> Traversal:
        return self.compose(TraverseItem(key))


_DONE = object()


class TraverseId(Traversal):
    """Selects the whole input."""

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        return fn(inputs)

    def iterate(self, inputs: Any) -> Iterator[Any]:
        yield inputs


t_identity = TraverseId()
"""The identity traversal, where compositions start."""


class TraverseMerge(Traversal):
    """Selects what any of several traversals selects."""

    def __init__(self, *traversals: Traversal):
        self._traversals = traversals

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        for t in self._traversals:
            inputs = t.update(fn, inputs)
        return inputs

    def iterate(self, inputs: Any) -> Iterator[Any]:
        for t in self._traversals:
            yield from t.iterate(inputs)


class TraverseCompose(Traversal):
    """Applies a second traversal to what a first one selects."""

    def __init__(self, x: Traversal, y: Traversal):
        self._x, self._y = x, y

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        return self._x.update(lambda v: self._y.update(fn, v), inputs)

    def iterate(self, inputs: Any) -> Iterator[Any]:
        for v in self._x.iterate(inputs):
            yield from self._y.iterate(v)


class TraverseFilter(Traversal):
    """Selects the input only when a predicate holds."""

    def __init__(self, fn: Callable[[Any], bool]):
        self._fn = fn

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        return fn(inputs) if self._fn(inputs) else inputs

    def iterate(self, inputs: Any) -> Iterator[Any]:
        if self._fn(inputs):
            yield inputs


class TraverseAttr(Traversal):
    """Selects an attribute (of a dataclass, namedtuple or object)."""

    def __init__(self, attr: str):
        self._attr = attr

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        value = fn(getattr(inputs, self._attr))
        if is_named_tuple(inputs):
            return inputs._replace(**{self._attr: value})
        if dataclasses.is_dataclass(inputs) and not isinstance(inputs, type):
            return dataclasses.replace(inputs, **{self._attr: value})
        out = copy.copy(inputs)
        setattr(out, self._attr, value)
        return out

    def iterate(self, inputs: Any) -> Iterator[Any]:
        yield getattr(inputs, self._attr)


class TraverseItem(Traversal):
    """Selects an item (a key, an index or a slice)."""

    def __init__(self, key: Any):
        self._key = key

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        if isinstance(inputs, tuple):
            items = list(inputs)
            if isinstance(self._key, slice):
                idx = range(*self._key.indices(len(items)))
                for i in idx:
                    items[i] = fn(items[i])
            else:
                items[self._key] = fn(items[self._key])
            return inputs._make(items) if is_named_tuple(inputs) else tuple(items)
        out = copy.copy(inputs)
        if isinstance(self._key, slice):
            for i in range(*self._key.indices(len(out))):
                out[i] = fn(out[i])
        else:
            out[self._key] = fn(out[self._key])
        return out

    def iterate(self, inputs: Any) -> Iterator[Any]:
        if isinstance(self._key, slice):
            yield from inputs[self._key]
        else:
            yield inputs[self._key]


class TraverseEach(Traversal):
    """Selects every element of a list or tuple (or every value of a dict)."""

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        if type(inputs) is dict:
            return {k: fn(v) for k, v in inputs.items()}
        if is_named_tuple(inputs):
            return inputs._make([fn(x) for x in inputs])
        if type(inputs) not in (list, tuple):
            raise ValueError(
                "Only the entries of a list or tuple can be traversed.\n"
                f"Got {type(inputs).__name__}; use .tree() for other pytrees."
            )
        return type(inputs)(fn(x) for x in inputs)

    def iterate(self, inputs: Any) -> Iterator[Any]:
        if isinstance(inputs, dict):
            yield from inputs.values()
        else:
            yield from inputs


class TraverseTree(Traversal):
    """Selects every pytree leaf."""

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        return jax.tree_util.tree_map(fn, inputs)

    def iterate(self, inputs: Any) -> Iterator[Any]:
        yield from jax.tree_util.tree_leaves(inputs)


def _params_of(inputs: Any) -> Mapping[Any, Any]:
    if isinstance(inputs, Mapping):
        return inputs
    raise ValueError(
        "ModelParamTraversal can only traverse a params dict (a Mapping), got "
        f"{type(inputs).__name__}."
    )


def _get_params_dict(inputs: Any) -> dict[Any, Any]:
    """A nested params dict as a plain (unfrozen) copy. Flax's private name,
    which projects call to walk parameters; anything but a dict or FrozenDict
    raises ValueError, as in Flax."""
    from lens._frozen_dict import FrozenDict, unfreeze

    if isinstance(inputs, dict | FrozenDict):
        return unfreeze(inputs)
    raise ValueError(
        "Can only traverse a flax Model instance or a nested dict, not "
        f"{type(inputs)}. Pass the params dict (variables['params'])."
    )


def _sorted_items(x: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """``x``'s items ordered by key (Flax's private name)."""
    return sorted(x.items(), key=lambda item: item[0])


class ModelParamTraversal(Traversal):
    """Selects the leaves of a params dict whose ``/``-joined path passes a filter.

    Deprecated, as in Flax: prefer ``optax.masked`` or :func:`path_aware_map`.
    ``filter_fn(path, value)`` gets paths like ``'/Dense_0/kernel'``.
    """

    def __init__(self, filter_fn: Callable[[str, Any], bool]):
        warnings.warn(
            # Flax's words first: warning filters written for Flax match them
            "`flax.traverse_util.Traversal` will be deprecated. If you are using it "
            "for `flax.optim`, use `optax` instead. For ModelParamTraversal: "
            "optax.masked or path_aware_map on the params dict.",
            DeprecationWarning,
            stacklevel=2,
        )
        self._filter_fn = filter_fn

    def _selected(self, inputs: Any) -> dict[Path, Any]:
        flat = flatten_dict(_params_of(inputs), keep_empty_nodes=True)
        return {
            k: v
            for k, v in flat.items()
            if v is not empty_node
            and self._filter_fn("/" + "/".join(str(p) for p in k), v)
        }

    def iterate(self, inputs: Any) -> Iterator[Any]:
        yield from self._selected(inputs).values()

    def update(self, fn: Callable[[Any], Any], inputs: Any) -> Any:
        flat = flatten_dict(_params_of(inputs), keep_empty_nodes=True)
        picked = self._selected(inputs)
        new = unflatten_dict({k: fn(v) if k in picked else v for k, v in flat.items()})
        if type(inputs) is not dict and hasattr(type(inputs), "__init__"):
            try:
                return type(inputs)(new)
            except TypeError:
                return new
        return new
