"""The jit cache of :class:`~lens.nnx._transforms.jit.JitWrapped`: the last
call's walk of the arguments (:class:`CachedWalk`), reused while the structure
epoch and the argument objects are unchanged, and the write-back of the state the
compiled program changed (:class:`Unchanged`).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections import deque
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from lens import errors
from lens.core import pack_trace as _trace
from lens.nnx._graph.walk import Walker
from lens.nnx._objects.object import Pytree
from lens.nnx._transforms.jit_refs import unmark_refs
from lens.nnx._transforms.recipe import merge_outputs
from lens.nnx._transforms.specs import Entry, Skeleton, StaticSlot
from lens.nnx._variables.static import StaticValue
from lens.nnx._variables.variable import Variable
from lens.nnx.tracers import STRUCTURE_EPOCH, structure_epoch
from lens.traceback_util import api_boundary

_set = object.__setattr__


@dataclasses.dataclass(frozen=True)
class Unchanged:
    """The aux of a jit result whose structure did not change: per graph leaf,
    whether the function left it as it was (it is then not returned)."""

    same: tuple[bool, ...]
    refs: bool = False  # the outputs hold jax.Refs (jit_refs)


class Tag:
    """The static half of a jit result (:class:`Unchanged`, or the changed
    structure), carried as the one key of the result dict (:func:`tagged`).

    JAX rebuilds a dict in C++ on every call, the key taken from the traced
    output's treedef; a custom pytree node (``specs.Carrier``) would cost a Python
    unflatten per call. A Tag hashes and compares by identity (in C, too): two
    traces give two tags, and nothing compares the treedefs of jit's outputs."""

    __slots__ = ("aux",)

    def __init__(self, aux: Any):
        self.aux = aux

    def __repr__(self) -> str:
        return f"Tag({self.aux!r})"


def tagged(values: list[Any], aux: Any) -> dict[Tag, list[Any]]:
    """``{Tag(aux): values}``: what the function ``nnx.jit`` compiles returns."""
    return {Tag(aux): values}


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
    kinds: tuple[Any, ...]  # per argument: the object itself, "array" or a StaticSlot
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
    # per argument: its Variables (read directly), its leaves (None: the argument),
    # or _TREE: a plain tuple, list or dict of arrays, flattened again
    plan: list[tuple[int, list[Any]]] = dataclasses.field(default_factory=list)
    # the last write-back: (the ``same`` it was for, the Variables or Leaves to write)
    writes: tuple[Any, list[Any], bool, bool] | None = None
    plain: bool = False
    kept_args: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.reads = [(e.arg, e.leaf) for e in self.entries]
        self.leaves = [e.leaf for e in self.entries if e.leaf is not None]
        by_arg: list[list[Any]] = [[] for _ in self.kinds]
        for e in self.entries:
            by_arg[e.arg].append(e.leaf)
        self.plan = [
            (_TREE, leaves)
            if type(kind) is TreeSlot
            else (_VARIABLES, [leaf.variable for leaf in leaves])
            if leaves and all(x is not None and x.variable is not None for x in leaves)
            else (_LEAVES, leaves)
            for kind, leaves in zip(self.kinds, by_arg, strict=True)
        ]
        # A plain call (no keywords, no static arguments) may take :meth:`inputs`.
        self.plain = not self.static and self.signature == _NO_KEYWORDS
        self.kept_args = tuple(
            i for i in range(len(self.kinds)) if i not in self.donated_args
        )

    def quick(self, args: tuple[Any, ...]) -> bool:
        """Whether a plain call's ``args`` may reuse this walk (see :meth:`inputs`)."""
        return self.inputs(args) is not None

    def inputs(self, args: tuple[Any, ...]) -> list[list[Any]] | None:
        """Per argument, the current values of its leaves, when a plain call's
        ``args`` may reuse this walk: the structure epoch, the same objects in the
        same places, arrays where arrays were, and the plain lists and dicts met
        still holding the same items; else None. Every cached call runs this, so
        it checks and reads in one pass, a Variable's value read through its slot
        in a C loop."""
        if STRUCTURE_EPOCH[0] != self.epoch or len(args) != len(self.kinds):
            return None
        per_arg = []
        for a, kind, (mode, items) in zip(args, self.kinds, self.plan):
            if mode is _VARIABLES:
                if a is not kind:
                    return None
                per_arg.append(list(map(_RAW, items)))
            elif kind is _ARRAY:
                if type(a) is not _ARRAY_IMPL and not isinstance(a, _ARRAYS):
                    return None
                per_arg.append([a])
            elif mode is _TREE:
                if kind != _tree_slot(a):
                    return None
                per_arg.append(jax.tree_util.tree_leaves(a))
            else:
                if a is not kind:
                    return None
                per_arg.append([a if x is None else x.read() for x in items])
        for c, snap in self.containers:
            if _snapshot(c) != snap:
                return None
        return per_arg

    def write_back(self, same: tuple[bool, ...], new_values: list[Any]) -> None:
        """Writes ``new_values`` into the leaves the program changed."""
        if self.writes is None or self.writes[0] is not same:
            changed = [
                leaf
                for leaf, unchanged in zip(self.leaves, same, strict=True)
                if not unchanged
            ]
            direct = all(leaf.variable is not None for leaf in changed)
            targets = [leaf.variable for leaf in changed] if direct else changed
            # Variables whose value is Variable's own slot are written by the
            # slot's setter in one C loop (an optimizer step writes ~100).
            slotted = direct and all(
                getattr(type(v), "_raw_value", None) is _RAW_SLOT for v in targets
            )
            self.writes = (same, targets, direct, slotted)
        _, targets, direct, slotted = self.writes
        if len(targets) != len(new_values):
            raise ValueError("nnx.jit: the write-back lost count; please report this.")
        if slotted:
            deque(map(_RAW_SLOT.__set__, targets, new_values), maxlen=0)
        elif direct:
            for v, value in zip(targets, new_values, strict=True):
                _set(v, "_raw_value", value)
        else:
            for leaf, value in zip(targets, new_values, strict=True):
                leaf.write(value)


_ARRAY = "array"  # a kind: an array argument (compared by identity)
_VARIABLES, _LEAVES, _TREE = 0, 1, 2  # how an argument's values are read


@dataclasses.dataclass(frozen=True)
class TreeSlot:
    """A kind: a plain pytree of arrays (a batch ``(x, y)``, a dict of arrays) with
    this structure; no Objects or Variables in it."""

    treedef: Any


def _is_node(x: Any) -> bool:
    return isinstance(x, Pytree | Variable)


def _tree_slot(a: Any) -> TreeSlot | None:
    """``a``'s TreeSlot when it is a tuple, list or dict of arrays (at any depth;
    None where a leaf is anything else, so the walk decides)."""
    if type(a) not in (tuple, list, dict):
        return None
    leaves, treedef = jax.tree_util.tree_flatten(a, is_leaf=_is_node)
    for leaf in leaves:
        if not isinstance(leaf, jax.Array | np.ndarray) or isinstance(leaf, Tracer):
            return None
    return TreeSlot(treedef)


_RAW = operator.attrgetter("_raw_value")
_ARRAYS = (jax.Array, np.ndarray)
try:  # jax.Array's concrete class, checked before isinstance
    from jax._src.array import ArrayImpl as _ARRAY_IMPL
except ImportError:  # pragma: no cover - another JAX layout: isinstance alone
    _ARRAY_IMPL = jax.Array
_RAW_SLOT = Variable.__dict__["_raw_value"]  # the slot's descriptor


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
            kinds.append(StaticSlot(StaticValue(a)))
        elif isinstance(a, Pytree | Variable):
            kinds.append(a)
        elif isinstance(a, jax.Array | np.ndarray):
            kinds.append(_ARRAY)
        else:
            tree = _tree_slot(a)
            if tree is None:
                return None
            kinds.append(tree)
    return tuple(kinds)


def _same_kinds(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, StaticSlot | TreeSlot):
            if not (type(y) is type(x) and x == y):
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
    if (
        kinds is None
        or structure_epoch() != epoch
        or not _trees_read_back(kinds, args, entries)
    ):
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


def _trees_read_back(
    kinds: tuple[Any, ...], args: tuple[Any, ...], entries: list[Entry]
) -> bool:
    """Whether each tree argument's leaves, flattened, are the walk's values of
    it in the walk's order (what a cached call passes in their place)."""
    for i, kind in enumerate(kinds):
        if type(kind) is TreeSlot:
            walked = [e.value for e in entries if e.arg == i]
            leaves = jax.tree_util.tree_leaves(args[i])
            if len(walked) != len(leaves) or any(
                a is not b for a, b in zip(walked, leaves, strict=True)
            ):
                return False
    return True


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


def call_cached(hit: CachedWalk, per_arg: list[list[Any]], jitted: Any) -> Any:
    """A cached call: ``per_arg`` (:meth:`CachedWalk.inputs`) into the compiled
    program, the state it changed written back, the outputs rebuilt."""
    if hit.donated_args:
        donated = [per_arg[i] for i in hit.donated_args]
        kept = [per_arg[i] for i in hit.kept_args]
    else:
        donated, kept = [], per_arg
    [(tag, (new_values, outs))] = jitted(hit.key, donated, kept).items()
    aux = tag.aux
    if type(aux) is not Unchanged:  # pragma: no cover - cached unchanged
        raise errors.GraphStructureError(
            "nnx.jit: the structure changed on a cached call; please report this."
        )
    if new_values:  # a forward pass changes nothing: no write-back at all
        hit.write_back(aux.same, new_values)
    if aux.refs:
        outs = unmark_refs(outs, [v for vs in per_arg for v in vs])
    return merge_outputs(outs, hit.nodes)


@dataclasses.dataclass(frozen=True)
class JitSkeleton:
    skeleton: Skeleton
    static: frozenset[int]
    n_args: int


_NO_STATIC: frozenset[int] = frozenset()
_NO_KEYWORDS = ((), ())  # the cache signature of a call with no keyword arguments


def _plain_calls(wrapped: Any) -> bool:
    """Whether ``wrapped``'s calls may go straight to the cached walk: no static
    arguments, no shardings to place, no simple-mode checks."""
    specs, options = wrapped.specs, wrapped.options
    return not (
        specs.static
        or specs.static_names
        or options["in_shardings"] is not None
        or options["out_shardings"] is not None
    )


def _plain_output(out: Any) -> bool:
    """Whether ``out`` holds only arrays (no Pytree or Variable): then a simple
    mode's output check (an input Variable returned) has nothing to find."""
    if isinstance(out, jax.Array) or out is None:
        return True
    return all(
        isinstance(x, jax.Array | np.ndarray)
        for x in jax.tree_util.tree_leaves(out, is_leaf=_is_node)
    )


def with_fast_path(call: Callable[..., Any]) -> Callable[..., Any]:
    """``JitWrapped.__call__`` behind JAX's ``api_boundary``, trying the cached walk
    first: a call with no keyword arguments to a plain jit (see
    :func:`_plain_calls`) outside a pack trace skips the argument bookkeeping.

    In a simple mode (``graph=False``, ``jit_partial``), the inputs' check is the
    cached call's (same objects, same structure: the same answer), and the
    outputs are checked only when they hold more than arrays."""

    @functools.wraps(call)
    def fast(self: Any, *args: Any, **kwargs: Any) -> Any:
        hit = self._cache.get("last")
        if hit is not None and hit.plain and not kwargs and not _trace.active():
            per_arg = hit.inputs(args)
            if per_arg is not None:
                how = self.__dict__.get("_fast")
                if how is None:
                    how = self.__dict__["_fast"] = _fast_calls(self)
                if how is not _SLOW:
                    out = call_cached(hit, per_arg, self.jitted_fn)
                    if how is _CHECKED and not _plain_output(out):
                        self.mode.check_outputs((args, {}), out)
                    return out
        return call(self, *args, **kwargs)

    return api_boundary(fast)


_SLOW, _DIRECT, _CHECKED = "slow", "direct", "checked"  # how a cached call runs


def _fast_calls(wrapped: Any) -> str:
    """How ``wrapped``'s cached calls run: not on the fast path (static arguments,
    shardings to place), straight, or with a simple mode's output check."""
    if not _plain_calls(wrapped):
        return _SLOW
    return _CHECKED if wrapped.mode.simple else _DIRECT
