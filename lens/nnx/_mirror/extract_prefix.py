"""flax.nnx's ``extract`` helpers for prefixes and argument tuples (exported by
:mod:`lens.nnx.extract`).

A *prefix* is a pytree that is a tree prefix of another (a transform's
``in_axes`` against its arguments): :func:`broadcast_prefix` gives each leaf of
the full tree the prefix leaf above it; :func:`broadcast_prefix_map` maps a
function over both; :func:`extract` / :func:`insert` take leaves out of a tree
and put them back. Variables and objects are leaves of a prefix (a prefix never
reaches into them). The tuple helpers (:func:`mask_at`, :func:`slice_at`,
:func:`replace_at`, :func:`find`) pick out one argument of a transform.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import functools
import inspect
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple, TypeVar

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import is_graph_node
from lens.nnx._transforms.specs import StateAxes
from lens.nnx._variables.variable import Variable

A = TypeVar("A")
B = TypeVar("B")

Index = int
KeyPath = tuple[Hashable, ...]
Prefix = Any
Leaf = Any


class OrderedDict(dict[A, B]):
    """A dict that is a pytree in insertion order (a plain dict's keys are
    sorted when flattened)."""

    def __repr__(self) -> str:
        if not self:
            return "OrderedDict({})"
        rows = ",\n".join(
            f"  {k!r}: " + repr(v).replace("\n", "\n  ") for k, v in self.items()
        )
        return "OrderedDict({\n" + rows + "\n})"


jax.tree_util.register_pytree_with_keys(
    OrderedDict,
    lambda d: ([(jax.tree_util.DictKey(k), v) for k, v in d.items()], tuple(d)),
    lambda keys, values: OrderedDict(zip(keys, values, strict=True)),
)


@functools.cache
def _labeled_type(keys: tuple[str, ...]) -> type:
    base: Any = collections.namedtuple("LabeledTuple", keys)

    class LabeledTuple(base):
        """A named tuple also read by key: ``t['args']`` is ``t.args``."""

        def keys(self) -> tuple[str, ...]:
            return self._fields

        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, str):
                return getattr(self, key)
            return super().__getitem__(key)

    return LabeledTuple


def labeled(**kwargs: Any) -> Any:
    """A named tuple of ``kwargs`` (one type per set of names): a pytree whose
    paths start with ``GetAttrKey(name)``, read as ``t.name`` or ``t['name']``."""
    return _labeled_type(tuple(kwargs))(**kwargs)


class PrefixMapping(abc.ABC):
    """A prefix that gives each Variable of an object its own prefix
    (``nnx.StateAxes``, ``nnx.StateSharding`` are ones)."""

    @abc.abstractmethod
    def map_prefix(self, path: tuple, variable: Variable, /) -> Any:
        """The prefix of the Variable at ``path``."""


# lens's per-filter specs (StateSharding is a StateAxes) map a Variable to its
# prefix by map_prefix: they are PrefixMappings, as flax.nnx's
PrefixMapping.register(StateAxes)


def _is_node(x: Any) -> bool:
    return isinstance(x, Variable) or is_graph_node(x)


def _not_a_prefix(e: ValueError, what: str) -> ValueError:
    return ValueError(
        f"{e}\n{what}: the prefix tree must be a tree prefix of the full tree "
        "(the same structure down to each prefix leaf; a prefix leaf applies to "
        "the whole subtree under it)."
    )


def broadcast_prefix(
    prefix_tree: Any,
    full_tree: Any,
    prefix_is_leaf: Callable[[Any], bool] | None = None,
    tree_is_leaf: Callable[[Any], bool] | None = None,
) -> list[Any]:
    """The prefix leaf of each leaf of ``full_tree`` (leaves by ``tree_is_leaf``),
    in ``full_tree``'s leaf order. Variables, objects and ``prefix_is_leaf``'s are
    leaves of ``prefix_tree``.

    Raises:
        ValueError: ``prefix_tree`` is not a tree prefix of ``full_tree``.
    """
    out: list[Any] = []

    def add(p: Any, sub: Any) -> None:
        out.extend([p] * jax.tree.structure(sub, is_leaf=tree_is_leaf).num_leaves)

    def is_leaf(x: Any) -> bool:
        return _is_node(x) or (prefix_is_leaf is not None and prefix_is_leaf(x))

    try:
        jax.tree.map(add, prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError as e:
        raise _not_a_prefix(e, "broadcast_prefix") from None
    return out


def broadcast_prefix2(
    prefix_tree: Any,
    full_tree: Any,
    is_leaf: Callable[[Any], bool] | None = None,
    prefix_leaf: Callable[[Any], bool] | None = None,
) -> tuple[list[KeyPath], list[Any]]:
    """:func:`broadcast_prefix` with the key path of each prefix leaf: ``(paths,
    prefixes)``, one per leaf of ``full_tree`` (leaves by ``is_leaf``, which also
    ends the prefix tree, as ``prefix_leaf`` does)."""

    def stop(x: Any) -> bool:
        return any(f is not None and f(x) for f in (prefix_leaf, is_leaf))

    paths: list[KeyPath] = []
    leaves: list[Any] = []

    def add(path: KeyPath, p: Any, sub: Any) -> None:
        n = jax.tree.structure(sub, is_leaf=is_leaf).num_leaves
        paths.extend([path] * n)
        leaves.extend([p] * n)

    try:
        jax.tree.map_with_path(add, prefix_tree, full_tree, is_leaf=stop)
    except ValueError as e:
        raise _not_a_prefix(e, "broadcast_prefix2") from None
    return paths, leaves


def broadcast_prefix_map(
    f: Callable[..., Any],
    prefix_tree: Any,
    full_tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
    prefix_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``full_tree`` with each leaf ``x`` replaced by ``f(path, prefix, x, *r)``:
    its key path, its prefix leaf, and the leaves of ``rest`` (trees of
    ``full_tree``'s structure) at the same place."""
    _, prefixes = broadcast_prefix2(
        prefix_tree, full_tree, is_leaf=is_leaf, prefix_leaf=prefix_leaf
    )
    leaves, treedef = jax.tree.flatten_with_path(full_tree, is_leaf=is_leaf)
    try:
        rest_leaves = [treedef.flatten_up_to(r) for r in rest]
    except ValueError as e:
        raise ValueError(
            f"{e}\nbroadcast_prefix_map: every tree in rest must have full_tree's "
            "structure."
        ) from None
    out = [
        f(path, p, x, *r)
        for (path, x), p, *r in zip(leaves, prefixes, *rest_leaves, strict=True)
    ]
    return jax.tree.unflatten(treedef, out)


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True, slots=True)
class ExtractIndex:
    """Where :func:`extract` took a leaf out: its index in the extracted list (a
    static pytree node, so a tree holding it carries no leaf there)."""

    index: int


def extract(
    f: Callable[[jax.tree_util.KeyPath, Any, Any], bool],
    prefix: Any,
    tree: Any,
    *,
    is_leaf: Callable[[Any], bool] | None = None,
    prefix_leaf: Callable[[Any], bool] | None = None,
) -> tuple[Any, list[Any]]:
    """``(tree', extracted)``: each leaf for which ``f(path, prefix, leaf)`` holds
    is moved to ``extracted`` and replaced by its :class:`ExtractIndex`;
    :func:`insert` puts them back."""
    extracted: list[Any] = []

    def take(path: Any, p: Any, leaf: Any) -> Any:
        if not f(path, p, leaf):
            return leaf
        extracted.append(leaf)
        return ExtractIndex(len(extracted) - 1)

    new_tree = broadcast_prefix_map(
        take, prefix, tree, is_leaf=is_leaf, prefix_leaf=prefix_leaf
    )
    return new_tree, extracted


def insert(tree: Any, extracted: list[Any]) -> Any:
    """The inverse of :func:`extract`: each :class:`ExtractIndex` replaced by the
    leaf it stands for.

    Raises:
        IndexError: an index is past the end of ``extracted``.
    """

    def put(x: Any) -> Any:
        if not isinstance(x, ExtractIndex):
            return x
        if not 0 <= x.index < len(extracted):
            raise IndexError(
                f"ExtractIndex({x.index}) is out of range for {len(extracted)} "
                "extracted leaves.\nPass the list that extract() returned with "
                "this tree."
            )
        return extracted[x.index]

    return jax.tree.map(put, tree, is_leaf=lambda x: isinstance(x, ExtractIndex))


class Mask(NamedTuple):
    """A masked-out argument (an empty pytree: it holds no leaves)."""


def mask_at(t: tuple, index: int | None) -> tuple[Any, tuple]:
    """``(t[index], t with Mask() there)``; ``(None, t)`` when ``index`` is None or
    ``t`` is not a tuple."""
    if index is None or not isinstance(t, tuple):
        return None, t
    return t[index], tuple(Mask() if i == index else x for i, x in enumerate(t))


def slice_at(t: tuple, index: int | None) -> tuple[Any, tuple]:
    """``(t[index], t without it)``; ``(None, t)`` when ``index`` is None."""
    if index is None:
        return None, t
    return t[index], t[:index] + t[index + 1 :]


def replace_at(t: tuple, index: int | None, value: Any) -> tuple:
    """``t`` with ``value`` at ``index`` (``t`` itself when ``index`` is None)."""
    if index is None:
        return t
    xs = list(t)
    xs[index] = value
    return tuple(xs)


def find(t: tuple, value: Any) -> int | None:
    """The first index of ``value`` in the tuple ``t`` (None if absent, or if
    ``t`` is not a tuple)."""
    if not isinstance(t, tuple):
        return None
    return next((i for i, x in enumerate(t) if x == value), None)


def filter_kwargs(f: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """The ``kwargs`` that ``f`` takes by keyword (all of them if it has a
    ``**kwargs``)."""
    params = inspect.signature(f).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return kwargs
    by_keyword = (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    names = {p.name for p in params if p.kind in by_keyword}
    return {k: v for k, v in kwargs.items() if k in names}


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
