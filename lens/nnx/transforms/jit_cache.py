"""The jit cache of :class:`~lens.nnx.transforms.compilation.JitWrapped`: the last
call's walk of the arguments (:class:`CachedWalk`), reused while the structure
epoch and the argument objects are unchanged, and the write-back of the state the
compiled program changed (:class:`Unchanged`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from lens import errors
from lens.nnx.graphwalk import Walker
from lens.nnx.pytreelib import Object
from lens.nnx.tracers import structure_epoch
from lens.nnx.transforms.general import Entry, Skeleton, merge_outputs
from lens.nnx.variablelib import StaticValue, Variable


@dataclasses.dataclass(frozen=True)
class Unchanged:
    """The aux of a jit result whose structure did not change: per graph leaf,
    whether the function left it as it was (it is then not returned)."""

    same: tuple[bool, ...]


def write_changed(
    entries: list[Entry], same: tuple[bool, ...], new_values: list[Any]
) -> None:
    leaves = [e.leaf for e in entries if e.leaf is not None]
    it = iter(new_values)
    for leaf, unchanged in zip(leaves, same, strict=True):
        if not unchanged:
            leaf.write(next(it))


@dataclasses.dataclass
class CachedWalk:
    """What a jit call learnt from walking its arguments, to skip the next walk.

    Valid while the structure epoch is unchanged (no attribute, container item or
    variable metadata was set since), the same objects are passed in the same
    places, and the plain lists and dicts met still hold the same items.
    """

    epoch: int
    kinds: tuple[Any, ...]  # per argument: the object itself, or "array"
    signature: Any
    static: frozenset[int]
    containers: list[tuple[Any, Any]]  # (container, snapshot of its items)
    entries: list[Entry]
    nodes: list[Any]
    key: StaticValue
    donated_args: tuple[int, ...]
    # derived once: per entry (argument, leaf or None), and the graph leaves
    reads: list[tuple[int, Any]] = dataclasses.field(default_factory=list)
    leaves: list[Any] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.reads = [(e.arg, e.leaf) for e in self.entries]
        self.leaves = [e.leaf for e in self.entries if e.leaf is not None]


def _snapshot(container: Any) -> Any:
    if type(container) is list:
        return tuple(map(id, container))
    return tuple((k, id(v)) for k, v in container.items())


def _arg_kinds(args: tuple[Any, ...], static: frozenset[int]) -> tuple[Any, ...] | None:
    """Per argument: the object (graph args), "array", or "static"; None when an
    argument is another pytree (the fast path does not cover it)."""
    kinds: list[Any] = []
    for i, a in enumerate(args):
        if i in static:
            kinds.append(("static", StaticValue(a)))
        elif isinstance(a, Object | Variable):
            kinds.append(a)
        elif isinstance(a, jax.Array | np.ndarray):
            kinds.append("array")
        else:
            return None
    return tuple(kinds)


def _same_kinds(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            if not (isinstance(y, tuple) and x == y):
                return False
        elif x is not y:
            return False
    return True


def store_walk(
    cache: dict[str, CachedWalk],
    epoch: int,
    args: tuple[Any, ...],
    static: frozenset[int],
    signature: Any,
    entries: list[Entry],
    walker: Walker,
    key: StaticValue,
    donated_args: tuple[int, ...],
) -> None:
    kinds = _arg_kinds(args, static)
    if kinds is None or structure_epoch() != epoch:
        cache.pop("last", None)  # the call changed structure: walk again next time
        return
    cache["last"] = CachedWalk(
        epoch,
        kinds,
        signature,
        static,
        [(c, _snapshot(c)) for c in walker.containers],
        entries,
        list(walker.nodes),
        key,
        donated_args,
    )


def cached_walk(
    cache: dict[str, CachedWalk],
    args: tuple[Any, ...],
    static: frozenset[int],
    signature: Any,
) -> CachedWalk | None:
    hit = cache.get("last")
    if hit is None or hit.epoch != structure_epoch() or hit.signature != signature:
        return None
    if hit.static != static:
        return None
    kinds = _arg_kinds(args, static)
    if kinds is None or not _same_kinds(kinds, hit.kinds):
        return None
    for c, snap in hit.containers:
        if _snapshot(c) != snap:
            return None
    return hit


def call_cached(hit: CachedWalk, args: tuple[Any, ...], jitted: Any) -> Any:
    per_arg: list[list[Any]] = [[] for _ in args]
    for i, leaf in hit.reads:
        per_arg[i].append(leaf.read() if leaf is not None else args[i])
    donated = [per_arg[i] for i in hit.donated_args]
    kept = [per_arg[i] for i in range(len(args)) if i not in hit.donated_args]
    result = jitted(hit.key, donated, kept)
    new_values, outs = result.values
    if not isinstance(result.aux, Unchanged):  # pragma: no cover - cached unchanged
        raise errors.GraphStructureError(
            "nnx.jit: the structure changed on a cached call; please report this."
        )
    if new_values:  # a forward pass changes nothing: no write-back at all
        it = iter(new_values)
        for leaf, unchanged in zip(hit.leaves, result.aux.same, strict=True):
            if not unchanged:
                leaf.write(next(it))
    return merge_outputs(outs, hit.nodes)


@dataclasses.dataclass(frozen=True)
class JitSkeleton:
    skeleton: Skeleton
    static: frozenset[int]
    n_args: int
