"""flax.nnx's ``traversals`` module: flattening nested mappings by path tuples."""

from collections.abc import Mapping
from typing import Any

from lens.traverse_util import flatten_dict, unflatten_dict


def flatten_mapping(
    xs: Mapping[Any, Any],
    /,
    *,
    keep_empty_nodes: bool = False,
    is_leaf: Any = None,
    sep: str | None = None,
) -> dict[Any, Any]:
    """``{path tuple: leaf}`` of a nested mapping (a State included)."""
    return flatten_dict(
        _plain(xs), keep_empty_nodes=keep_empty_nodes, is_leaf=is_leaf, sep=sep
    )


def unflatten_mapping(
    xs: Mapping[Any, Any], /, *, sep: str | None = None
) -> dict[Any, Any]:
    """The nested dict of a ``{path tuple: leaf}`` mapping."""
    return unflatten_dict(xs, sep=sep)


def _plain(xs: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in xs.items()}


__all__ = ["flatten_mapping", "unflatten_mapping"]
