"""flax.nnx's ``traversals`` module: flattening nested mappings by path tuples."""

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lens.traverse_util import empty_node as empty_node
from lens.traverse_util import flatten_dict, unflatten_dict

_EmptyNode = type(empty_node)  # flax.nnx.traversals._EmptyNode (isinstance checks)

IsLeafCallable = Callable[[tuple[Any, ...], Mapping[Any, Any]], bool]
"""``is_leaf(path, mapping)``: whether a nested mapping is a leaf (kept whole)."""


def flatten_mapping(
    xs: Mapping[Any, Any],
    /,
    *,
    keep_empty_nodes: bool = False,
    is_leaf: IsLeafCallable | None = None,
    sep: str | None = None,
) -> dict[Any, Any]:
    """``{path tuple: leaf}`` of a nested mapping (a State included); an empty
    mapping is dropped, or kept as :data:`empty_node` with ``keep_empty_nodes``;
    with ``sep`` the paths are ``sep``-joined strings."""
    return flatten_dict(
        _plain(xs), keep_empty_nodes=keep_empty_nodes, is_leaf=is_leaf, sep=sep
    )


def flatten_to_sequence(
    xs: Mapping[Any, Any], /, *, is_leaf: IsLeafCallable | None = None
) -> list[tuple[Any, Any]]:
    """``[(path tuple, leaf), ...]`` of a nested mapping, in its iteration order
    (empty mappings are dropped; ``is_leaf(path, mapping)`` keeps one whole).

    >>> flatten_to_sequence({"foo": 1, "bar": {"a": 2, "b": {}}})
    [(('foo',), 1), (('bar', 'a'), 2)]
    """
    if not isinstance(xs, Mapping):
        raise TypeError(
            f"expected Mapping; got {type(xs).__qualname__}\n"
            "flatten_to_sequence takes a nested mapping (a dict or a State)."
        )
    out: list[tuple[Any, Any]] = []

    def walk(x: Any, path: tuple[Any, ...]) -> None:
        if not isinstance(x, Mapping) or (is_leaf is not None and is_leaf(path, x)):
            out.append((path, x))
            return
        for k, v in x.items():
            walk(v, (*path, k))

    walk(xs, ())
    return out


def unflatten_mapping(xs: Any, /, *, sep: str | None = None) -> dict[Any, Any]:
    """The nested dict of a ``{path tuple: leaf}`` mapping or of a sequence of
    ``(path, leaf)`` pairs (``sep``-joined string paths with ``sep``)."""
    if not isinstance(xs, Mapping):
        if not isinstance(xs, Iterable):
            raise TypeError(
                f"expected Mapping or Iterable; got {type(xs).__qualname__}\n"
                "unflatten_mapping takes {path: leaf} or [(path, leaf), ...]."
            )
        xs = dict(xs)
    return unflatten_dict(xs, sep=sep)


def _plain(xs: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in xs.items()}


__all__ = [
    "IsLeafCallable",
    "empty_node",
    "flatten_mapping",
    "flatten_to_sequence",
    "unflatten_mapping",
]
