"""Copying and merging the dict structure of variable trees (leaves are shared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def copy_tree(d: Any) -> Any:
    """Copies the dict structure of a variable tree; leaves are shared."""
    if isinstance(d, Mapping):
        return {k: copy_tree(v) for k, v in d.items()}
    return d


def merge_into(dest: dict[str, Any], src: Mapping[str, Any]) -> None:
    """Writes ``src`` into ``dest`` in place, recursing into dicts both have."""
    for k, v in src.items():
        d = dest.get(k)
        if isinstance(v, Mapping) and isinstance(d, dict):
            merge_into(d, v)
        else:
            dest[k] = copy_tree(v)


def merged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``old`` with ``new`` merged in."""
    out = copy_tree(old)
    merge_into(out, new)
    return out
