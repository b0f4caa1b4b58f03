"""Named PRNG streams, derived the way Flax Linen derives them.

A stream is a root key plus a *suffix*: the names of the scopes from the root, then
the call count. ``make_rng`` in a scope at path ``(p1, ..., pn)`` for the ``c``-th
time hashes ``(p1, ..., pn, c)`` with SHA-1 (a ``str`` adds its UTF-8 bytes, an
``int`` its minimal big-endian bytes; with ``config.flax_fix_rng_separator`` a zero
byte precedes each), takes the first four digest bytes as a big-endian uint32 and
folds it into the root key. :class:`LazyRng` is that pair, as in ``flax.core``.

Lifted scopes share counters with the scope they were lifted from; a transform that
splits a stream replaces the root key by ``split(root, n)[i]`` and keeps the suffix.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import struct
from lens._facades import show_at_flax_paths
from lens._hot_jit import hot_jit
from lens.configurations import config


@functools.lru_cache(maxsize=65536)
def _path_hash(data: tuple[str | int, ...], separate: bool) -> int:
    m = hashlib.sha1()
    for x in data:
        if separate:
            m.update(b"\00")
        if isinstance(x, str):
            m.update(x.encode("utf-8"))
        elif isinstance(x, int):
            m.update(x.to_bytes((x.bit_length() + 7) // 8, byteorder="big"))
        else:
            raise ValueError(f"Expected int or string, got: {x}")
    return int.from_bytes(m.digest()[:4], byteorder="big")


def path_hash(data: tuple[str | int, ...]) -> int:
    """The uint32 that ``make_rng`` folds into the root key for ``data``.

    Example:
        >>> path_hash(("Dense_0", 1)) == path_hash(("Dense_0", 1))
        True
    """
    return _path_hash(tuple(data), bool(config.flax_fix_rng_separator))


# One compiled dispatch instead of several eager primitives: ~10x cheaper per
# make_rng outside jit, and the same bits; eager for a first model's few calls.
_fold_in = hot_jit(jax.random.fold_in)


def fold_path(key: Any, data: tuple[str | int, ...]) -> Any:
    """Folds the hash of ``data`` into ``key`` (see module docstring)."""
    if not data:
        return key
    return _fold_in(key, np.uint32(path_hash(data)))


class LazyRng(struct.PyTreeNode):
    """A root key and the static data still to fold into it (``flax.core.scope.LazyRng``).

    Example:
        >>> import jax
        >>> r = LazyRng.create(jax.random.key(0), "Dense_0")
        >>> LazyRng.create(r, 1).suffix
        ('Dense_0', 1)
    """

    rng: Any
    suffix: tuple[str | int, ...] = struct.field(pytree_node=False)

    def as_jax_rng(self) -> Any:
        """The key: the suffix's hash folded into the root key."""
        return fold_path(self.rng, self.suffix)

    @staticmethod
    def create(rng: Any, *suffix: str | int) -> LazyRng:
        """Extends ``rng`` (a key or a :class:`LazyRng`) by ``suffix``."""
        if isinstance(rng, LazyRng):
            return LazyRng(rng.rng, rng.suffix + suffix)
        return LazyRng(rng, suffix)

    def clear_suffix(self) -> LazyRng:
        """The same root key with no suffix."""
        return LazyRng(self.rng, ())


def is_key(x: Any) -> bool:
    """True for a typed key array or a legacy ``uint32[..., 2]`` key."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return False
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return True
    return dtype == np.uint32 and getattr(x, "shape", ())[-1:] == (2,)


def is_valid_rng(rng: Any) -> bool:
    """True for one key: a :class:`LazyRng`, a scalar typed key or a ``uint32[2]``."""
    if isinstance(rng, LazyRng):
        return True
    if not isinstance(rng, np.ndarray | jax.Array):
        return False
    if jnp.issubdtype(rng.dtype, jax.dtypes.prng_key):
        return rng.shape == ()
    return rng.shape == (2,) and rng.dtype == np.uint32


class RngCounters:
    """Per-stream call counts of one scope, and those of its named children.

    Kept across ``rewound()`` and re-pushes of the same child name, and shared
    between a scope and the scopes lifted from it.
    """

    __slots__ = ("counts", "children")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.children: dict[str, RngCounters] = {}

    def child(self, name: str) -> RngCounters:
        c = self.children.get(name)
        if c is None:
            c = self.children[name] = RngCounters()
        return c

    def snapshot(self) -> tuple[Any, ...]:
        """A hashable copy of the whole counter tree."""
        return (
            tuple(sorted(self.counts.items())),
            tuple(sorted((k, v.snapshot()) for k, v in self.children.items())),
        )

    def restore(self, snap: tuple[Any, ...]) -> None:
        """Sets the counter tree to a snapshot taken with :meth:`snapshot`."""
        counts, children = snap
        self.counts = dict(counts)
        for name, sub in children:
            self.child(name).restore(sub)


show_at_flax_paths(__name__)
