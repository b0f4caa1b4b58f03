"""Named RNG streams for eager modules, and ``split_rngs``.

``Rngs(0, dropout=1)`` holds one :class:`RngStream` per name (``0`` is the
``default`` stream). Each stream is a key and a counter; calling it returns
``fold_in(key, count)`` and advances the counter, as in Flax NNX, so the same seed
gives the same parameters. A stream that was not given falls back to ``default``.

``split_rngs(splits=n)`` replaces streams' keys by ``n`` keys (and their counters by
``n`` zeros) for the duration of a call, so a ``vmap`` over the Rngs gives each
member its own key; the outer keys are restored after, advanced by one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from lens.core._rng import is_key
from lens.nnx._filters import to_predicate
from lens.nnx._graph import Object, RngCount, RngKey, check_graph_modes
from lens.nnx._state import iter_graph
from lens.traceback_util import api_boundary


class RngStream(Object):
    """One named stream: ``stream()`` returns a new key."""

    def __init__(self, tag: str, key: Any):
        if not is_key(key):
            key = jax.random.key(key)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros((), jnp.uint32), tag=tag)

    def __call__(self) -> jax.Array:
        key = jax.random.fold_in(self.key.value, self.count.value)
        self.count.value = self.count.value + 1
        return key

    def fork(self) -> RngStream:
        """A new stream seeded from this one (advances this one by one)."""
        return RngStream(self.tag, self())


class Rngs(Object):
    """Named RNG streams: ``Rngs(0)``, ``Rngs(params=0, dropout=1)``.

    ``rngs.params()`` (or ``rngs['params']()``) returns a new key of stream
    ``params``, or of ``default`` when there is no such stream; ``rngs()`` uses
    ``default``.
    """

    def __init__(self, default: Any = None, **streams: Any):
        if default is not None:
            streams = {"default": default, **streams}
        if not streams:
            raise ValueError("Rngs needs a seed or key: Rngs(0), Rngs(params=0, ...).")
        for name, seed in streams.items():
            setattr(self, name, RngStream(name, seed))

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith("_"):
            raise AttributeError(name)
        d = self.__dict__
        if "default" in d:
            return d["default"]
        names = [k for k, v in d.items() if isinstance(v, RngStream)]
        raise AttributeError(
            f"Rngs has no stream {name!r} and no 'default' stream to fall back on "
            f"(streams: {names}). Add it: Rngs({name}=0, ...), or give a default "
            "seed: Rngs(0, ...)."
        )

    def __getitem__(self, name: str) -> RngStream:
        return getattr(self, name)

    def __contains__(self, name: str) -> bool:
        return isinstance(self.__dict__.get(name), RngStream)

    def __call__(self) -> jax.Array:
        return self.default()

    def streams(self) -> dict[str, RngStream]:
        return {k: v for k, v in self.__dict__.items() if isinstance(v, RngStream)}


class SplitBackups:
    """What ``split_rngs`` replaced; ``restore()`` (or leaving the ``with``) puts
    it back."""

    def __init__(self, backups: list[tuple[RngStream, Any, Any]]):
        self.backups = backups

    def restore(self) -> None:
        for stream, key, count in self.backups:
            object.__setattr__(stream.key, "_value", key)
            object.__setattr__(stream.count, "_value", count)
        self.backups = []

    def __enter__(self) -> SplitBackups:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


def _split(nodes: list[Any], splits: int, only: Any, squeeze: bool) -> SplitBackups:
    pred = to_predicate(only)
    backups = []
    seen: set[int] = set()
    for node in nodes:
        for path, x in iter_graph(node):
            if not isinstance(x, RngStream) or id(x) in seen:
                continue
            seen.add(id(x))
            if not (pred(path, x.key) or pred(path + ("key",), x.key)):
                continue
            key = x()
            backups.append((x, x.key.value, x.count.value))
            keys = jax.random.split(key, splits)
            object.__setattr__(x.key, "_value", keys[0] if squeeze else keys)
            shape = () if squeeze else (splits,)
            object.__setattr__(x.count, "_value", jnp.zeros(shape, jnp.uint32))
    return SplitBackups(backups)


def split_rngs(
    node: Any = None,
    /,
    *,
    splits: int,
    only: Any = ...,
    squeeze: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """Splits RNG streams into ``splits`` keys, for a transform that maps over them.

    ``split_rngs(rngs, splits=5)`` splits now and returns a handle to use as a
    context manager (the keys are restored when the ``with`` ends).
    ``@split_rngs(splits=5)`` decorates a function: the streams in its arguments
    are split for each call and restored after. ``only`` filters the streams (a
    stream name, a tuple of names, ...).
    """
    check_graph_modes("split_rngs", graph, graph_updates)
    if not isinstance(splits, int) or splits < 1:
        raise ValueError(f"split_rngs: splits must be a positive int, got {splits!r}.")
    if node is not None and not callable(node) or isinstance(node, Object):
        return _split([node], splits, only, squeeze)

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        @api_boundary
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            nodes = [
                x
                for x in jax.tree.leaves(
                    (args, kwargs), is_leaf=lambda x: isinstance(x, Object)
                )
                if isinstance(x, Object)
            ]
            with _split(nodes, splits, only, squeeze):
                return f(*args, **kwargs)

        return wrapper

    return decorate if node is None else decorate(node)
