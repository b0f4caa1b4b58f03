"""Text reprs of Variables, States and Objects (flax.nnx's ``reprlib``).

Reprs show the values, as flax.nnx's do: a user printing a model in a notebook sees
the numbers (numpy's print options shorten large arrays). Each node is written as

    Param( # 3 (12 B)
      value=Array([1., 1., 1.], dtype=float32)
    )

with a comment giving the number of elements and bytes it holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import numpy as np


def bytes_repr(num_bytes: int) -> str:
    """``12 B``, ``4.1 KB``, ``1.2 MB``, ``3.0 GB``."""
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if num_bytes > scale:
            return f"{num_bytes / scale:,.1f} {unit}"
    return f"{num_bytes:,} B"


def size_and_bytes(value: Any) -> tuple[int, int]:
    """Elements and bytes of the arrays in ``value`` (a pytree)."""
    size = nbytes = 0
    for leaf in jax.tree.leaves(value):
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            n = int(np.prod(leaf.shape))
            size += n
            # a key array's dtype (key<fry>) is not numpy's: ask it for its size
            nbytes += n * int(getattr(leaf.dtype, "itemsize", 0) or 0)
    return size, nbytes


def size_comment(value: Any, prefix: str = "") -> str:
    """`` # 3 (12 B)`` for a value holding arrays, else ``""``."""
    size, nbytes = size_and_bytes(value)
    if not size:
        return ""
    return f" # {prefix}{size:,} ({bytes_repr(nbytes)})"


def indent(text: str, pad: str) -> str:
    """``text`` with every line after the first indented by ``pad``."""
    return text.replace("\n", "\n" + pad)


def node_repr(
    name: str, attributes: Iterable[tuple[str, str]], *, comment: str = ""
) -> str:
    """``Name( # comment`` then one ``key=value`` line per attribute, then ``)``."""
    rows = [f"  {k}={indent(v, '  ')}" for k, v in attributes]
    if not rows:
        return f"{name}()"
    return f"{name}({comment}\n" + ",\n".join(rows) + "\n)"
