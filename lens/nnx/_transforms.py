"""JAX-style transforms over eager objects: ``jit``, ``grad``, ``value_and_grad``,
``vmap``.

Arguments follow JAX's conventions: ``in_axes`` / ``argnums`` give one spec per
argument, and an object argument is lifted as one pytree would be. The Lift types
refine a spec inside one object: ``StateAxes({Param: 1, BatchStat: None})`` maps
each filter's variables on its own axis; ``DiffState(0, LoRAParam)`` differentiates
argument 0's ``LoRAParam`` variables only.

Each call runs one recipe:

1. walk every object argument once (aliases numbered as such), giving a static
   graph structure and the variables' values, each resolved to its spec;
2. check *consistent aliasing*: a node met twice must get the same spec;
3. call the JAX transform on a pure function of those values, which rebuilds the
   objects, calls the user function, and walks the arguments again to return their
   new values, plus the outputs (an output that is an input must keep its input
   spec; an object captured from outside cannot be returned);
4. write the new values back into the caller's objects, and rebuild the outputs
   (an input returned comes back as the same Python object).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import errors
from lens.nnx._filters import to_predicate
from lens.nnx._graph import (
    Builder,
    InPlaceBuilder,
    Leaf,
    Object,
    Param,
    State,
    Variable,
    Walker,
    _Static,
    frame,
    is_graph_node,
    path_str,
    structure_epoch,
)

# ------------------------------------------------------------------ lift types


class StateAxes:
    """Per-filter axes for one object in ``vmap``'s ``in_axes``/``out_axes``.

    ``StateAxes({Param: 1, BatchStat: None})``: params mapped on axis 1, batch stats
    broadcast. Filters are tried in order; every variable must match one (end with
    ``...: axis`` for the rest).
    """

    def __init__(self, filter_axes: Mapping[Any, Any] | Any):
        items = filter_axes.items() if isinstance(filter_axes, Mapping) else filter_axes
        self.items = tuple(items)
        self._preds = tuple(to_predicate(f) for f, _ in self.items)

    def axis(self, path: tuple, x: Any) -> Any:
        for pred, (_, ax) in zip(self._preds, self.items, strict=True):
            if pred(path, x):
                return ax
        raise ValueError(
            f"StateAxes {self!r}: no filter matches {path_str(path)} "
            f"({type(x).__name__}); add ...: <axis> for the rest."
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateAxes) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return tuple((repr(f), ax) for f, ax in self.items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{_filter_name(f)}: {ax}" for f, ax in self.items)
        return f"StateAxes({{{inner}}})"


def _filter_name(f: Any) -> str:
    if f is Ellipsis:
        return "..."
    return f.__name__ if isinstance(f, type) else repr(f)


@dataclasses.dataclass(frozen=True)
class DiffState:
    """``argnums`` entry: differentiate argument ``argnum``'s ``filter`` variables."""

    argnum: int
    filter: Any


# -------------------------------------------------------------------- plumbing


class _Graph:
    """An object argument, as a placeholder leaf while the pytree is flattened."""

    __slots__ = ("node",)

    def __init__(self, node: Any):
        self.node = node


def _wrap(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: _Graph(x) if is_graph_node(x) else x, tree, is_leaf=is_graph_node
    )


@dataclasses.dataclass(frozen=True)
class _Skeleton:
    """The static half of the arguments: pytree structure, graph defs, statics."""

    treedef: Any
    slots: tuple[Any, ...]  # per leaf: ("graph", def) | ("leaf",) | ("static", v)


class _Carrier:
    """A pytree of values whose static skeleton rides in the aux data, so jit caches
    on it and vmap/grad hand it back."""

    __slots__ = ("values", "aux", "axes")

    def __init__(self, values: list[Any], aux: Any, axes: Any = None):
        self.values = values
        self.aux = aux
        self.axes = axes  # per value, the out axis to move it to (vmap)


jax.tree_util.register_pytree_node(
    _Carrier,
    lambda c: (c.values, (c.aux, c.axes)),
    lambda aux, values: _Carrier(list(values), *aux),
)


@dataclasses.dataclass
class _Entry:
    """One value of the flattened arguments: its spec, and where it came from."""

    value: Any
    spec: Any
    slot: int  # index into the skeleton's slots
    leaf: Leaf | None  # the walked graph leaf (None: a plain pytree leaf)
    arg: int = 0  # the argument it belongs to


def _split_inputs(
    args: tuple[Any, ...],
    specs: tuple[Any, ...],
    walker: Walker,
    static: frozenset[int] = frozenset(),
) -> tuple[_Skeleton, list[_Entry]]:
    """Walks ``args`` (each with its spec prefix): the static skeleton, and one entry
    per value (graph leaves in walk order, plain leaves in pytree order)."""
    wrapped = _wrap(args)
    is_graph = lambda x: isinstance(x, _Graph)  # noqa: E731
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=is_graph)
    leaf_specs: list[Any] = []
    arg_of_leaf: list[int] = []
    for i, (arg, spec) in enumerate(zip(wrapped, specs, strict=True)):
        n = len(jax.tree.leaves(arg, is_leaf=is_graph))
        leaf_specs += [None] * n if i in static else _broadcast(spec, arg, i)
        arg_of_leaf += [i] * n
    slots: list[Any] = []
    entries: list[_Entry] = []
    counter = [0] * len(args)
    for leaf, spec, i in zip(leaves, leaf_specs, arg_of_leaf, strict=True):
        j = counter[i]
        counter[i] += 1
        if i in static:
            raw = leaf.node if isinstance(leaf, _Graph) else leaf
            slots.append(("static", _Static(raw)))
        elif isinstance(leaf, _Graph):
            start = len(walker.leaves)
            root = ("args", i) if j == 0 else ("args", i, j)
            d = walker.node(leaf.node, root, spec)
            slots.append(("graph", d, root))
            entries += [
                _Entry(lf.value, lf.spec, len(slots) - 1, lf, i)
                for lf in walker.leaves[start:]
            ]
        else:
            if isinstance(spec, StateAxes):
                raise TypeError(
                    f"StateAxes applies to objects only; argument {i} has a "
                    f"{type(leaf).__name__} there."
                )
            slots.append(("leaf",))
            entries.append(_Entry(leaf, spec, len(slots) - 1, None, i))
    return _Skeleton(treedef, tuple(slots)), entries


def _broadcast(prefix: Any, tree: Any, i: int) -> list[Any]:
    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, StateAxes | _Diff | _Graph)

    out: list[Any] = []

    def expand(p: Any, sub: Any) -> None:
        n = len(jax.tree.leaves(sub, is_leaf=lambda x: isinstance(x, _Graph)))
        out.extend([p] * n)

    try:
        jax.tree.map(expand, prefix, tree, is_leaf=is_leaf)
        return out
    except ValueError as e:
        raise ValueError(
            f"The spec {prefix!r} for argument {i} is not a prefix of it: {e}"
        ) from None


def _rebuild(
    skel: _Skeleton, values: list[Any], table: dict[int, Any] | None = None
) -> tuple[Any, ...]:
    """The arguments rebuilt from ``skel`` and ``values``; ``table``, when given,
    receives node index -> rebuilt object."""
    it = iter(values)
    builder = Builder(it)
    if table is not None:
        builder.nodes = table
    leaves = []
    for slot in skel.slots:
        if slot[0] == "graph":
            leaves.append(builder.build(slot[1]))
        elif slot[0] == "static":
            leaves.append(slot[1].value)
        else:
            leaves.append(next(it))
    return jax.tree.unflatten(skel.treedef, leaves)


def _split_outputs(out: Any, out_spec: Any, walker: Walker) -> Any:
    """The outputs with each object replaced by a carrier of its new leaves."""
    walker.role = "output"
    wrapped = _wrap(out)
    specs = _broadcast(out_spec, wrapped, 0)
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=lambda x: isinstance(x, _Graph))
    new = []
    for j, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        if isinstance(leaf, _Graph):
            start = len(walker.leaves)
            path = ("output",) if len(leaves) == 1 else ("output", j)
            d = walker.node(leaf.node, path, spec)
            fresh = walker.leaves[start:]
            if fresh and isinstance(spec, StateAxes):
                # a new object with per-filter axes: every leaf leaves the
                # transform on axis 0, and is moved to its own axis after
                axes = tuple(lf.spec for lf in fresh)
                new.append(_Carrier([lf.value for lf in fresh], _Static(d), axes))
                continue
            new.append(_Carrier([lf.value for lf in fresh], _Static(d)))
        else:
            new.append(leaf)
    return jax.tree.unflatten(treedef, new)


def _merge_outputs(out: Any, nodes: list[Any]) -> Any:
    table = dict(enumerate(nodes))

    def build(x: Any) -> Any:
        if isinstance(x, _Carrier):
            b = Builder(iter(x.values), table)
            obj = b.build(x.aux.value)
            table.update(b.nodes)
            return obj
        return x

    return jax.tree.map(build, out, is_leaf=lambda x: isinstance(x, _Carrier))


def _check_structure(before: _Skeleton, after: _Skeleton, name: str) -> None:
    if before != after:
        raise errors.GraphStructureError(
            f"An argument of nnx.{name} changed structure inside the function (a "
            "variable or submodule was added, removed or replaced, or a static "
            "attribute changed).\nTransforms carry values, not structure: create "
            "submodules and variables before the transform (e.g. in __init__) and "
            "only update their values inside."
        )


def _graph_only(entries: list[_Entry], values: list[Any]) -> list[Any]:
    return [v for e, v in zip(entries, values, strict=True) if e.leaf is not None]


def _write_back(entries: list[_Entry], new_graph_values: list[Any]) -> None:
    graph = [e for e in entries if e.leaf is not None]
    for e, v in zip(graph, new_graph_values, strict=True):
        e.leaf.write(v)


def _axes_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, StateAxes):
        return spec.axis(path, x)
    return spec


# ------------------------------------------------------------------------- jit


def _argnums(x: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
    out = () if x is None else (x,) if isinstance(x, int) else tuple(x)
    if not all(isinstance(i, int) for i in out):
        raise TypeError(f"nnx.jit: {what} must be ints, got {x!r}.")
    return out


def _argnames(x: str | Sequence[str] | None) -> tuple[str, ...]:
    return () if x is None else (x,) if isinstance(x, str) else tuple(x)


def _check_static(value: Any, where: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {where} is a "
            f"{type(value).__name__}, and a static argument is part of the cache "
            "key (a mutable one would give stale results).\nPass it as a normal "
            "argument, or as a hashable value (a tuple instead of a list or array)."
        ) from None


def jit(
    f: Callable[..., Any] | None = None,
    *,
    in_shardings: Any = None,
    out_shardings: Any = None,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    device: Any = None,
    backend: Any = None,
    inline: bool = False,
    abstracted_axes: Any = None,
    **jit_kwargs: Any,
) -> Any:
    """``jax.jit`` for functions of objects: updates to argument objects come back.

    Takes ``jax.jit``'s options: ``static_argnums``/``static_argnames`` (hashable
    values, part of the cache key), ``donate_argnums``/``donate_argnames`` (the
    argument's arrays, objects' variables included, may be reused for the
    outputs). Keyword arguments are passed through. The compiled function is
    cached on the objects' graph structure, so calling it again with the same
    model does not retrace.
    """
    options = dict(
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        donate_argnames=donate_argnames,
        keep_unused=keep_unused,
        device=device,
        backend=backend,
        inline=inline,
        abstracted_axes=abstracted_axes,
        **jit_kwargs,
    )
    if f is None:
        return functools.partial(jit, **options)
    static = frozenset(_argnums(static_argnums, "static_argnums"))
    static_names = frozenset(_argnames(static_argnames))
    donate = frozenset(_argnums(donate_argnums, "donate_argnums"))
    donate_names = frozenset(_argnames(donate_argnames))
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        params = list(sig.parameters.values())
        positional = [
            p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if not any(p.kind is p.VAR_POSITIONAL for p in params):
            for i in static | donate:
                if i >= len(positional) or i < -len(positional):
                    what = "static_argnums" if i in static else "donate_argnums"
                    raise ValueError(
                        f"jitted function has {what}={tuple(sorted(static if i in static else donate))}, "
                        f"but only accepts {len(positional)} positional arguments "
                        f"({getattr(f, '__qualname__', f)!r})."
                    )
        names = {p.name for p in params}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            for n in static_names | donate_names:
                if n not in names:
                    raise ValueError(
                        f"jitted function has static_argnames/donate_argnames "
                        f"{n!r}, but {getattr(f, '__qualname__', f)!r} has no "
                        "such parameter."
                    )
        # an argument named in static_argnames and passed positionally is static
        static = static | {
            i for i, p in enumerate(positional) if p.name in static_names
        }
        donate = donate | {
            i for i, p in enumerate(positional) if p.name in donate_names
        }
    pass_through = {
        k: v
        for k, v in options.items()
        if k
        not in (
            "static_argnums",
            "static_argnames",
            "donate_argnums",
            "donate_argnames",
        )
        and v not in (None, False)
    }

    def pure(
        statics: _Static, donated: list[_Carrier], kept: list[_Carrier]
    ) -> _Carrier:
        skel, static_kw, kw_names, donated_args = statics.value
        by_arg = dict(zip(donated_args, donated, strict=True))
        rest = iter(kept)
        values = []
        for i in range(skel.n_args):
            values += (by_arg[i] if i in by_arg else next(rest)).values
        table: dict[int, Any] = {}
        with frame("jit") as fr:
            args = _rebuild(skel.skeleton, values, table)
            n_pos = len(args) - len(kw_names)
            kw = dict(zip(kw_names, args[n_pos:], strict=True))
            out = f(*args[:n_pos], **kw, **dict(static_kw))
            walker = Walker(transform="jit")
            after, entries = _split_inputs(
                args, (None,) * len(args), walker, skel.static
            )
            # A changed structure (a new attribute or submodule) is applied
            # outside: it goes out as static data, with which old node each new
            # node is, so the caller's objects are updated in place.
            changed = None
            if after != skel.skeleton:
                index_of = {id(o): i for i, o in table.items()}
                origin = tuple(index_of.get(id(o)) for o in walker.nodes)
                changed = _Static((after, origin))
            walker.frame = fr
            outs = _split_outputs(out, None, walker)
        if changed is not None:
            graph_values = [e.value for e in entries if e.leaf is not None]
            return _Carrier([graph_values, outs], changed)
        # Only the state the function changed leaves the compiled program: an
        # unchanged variable would be copied to a new buffer on every call.
        same = tuple(
            e.value is v for e, v in zip(entries, values, strict=True) if e.leaf
        )
        graph_values = [
            e.value
            for e, v in zip(entries, values, strict=True)
            if e.leaf is not None and e.value is not v
        ]
        return _Carrier([graph_values, outs], _Unchanged(same))

    jitted = jax.jit(pure, static_argnums=0, donate_argnums=1, **pass_through)
    # The last call's graph walk, reused while nothing changed structure.
    cache: dict[str, _CachedWalk] = {}

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        for i in static:
            if i >= n or i < -n:
                raise ValueError(
                    f"jitted function has static_argnums={tuple(sorted(static))}, but "
                    f"was called with only {n} positional arguments."
                )
            _check_static(args[i], f"positional argument {i}")
        static_kw = []
        dyn_kw = {}
        for k, v in kwargs.items():
            if k in static_names:
                _check_static(v, f"keyword argument {k!r}")
                static_kw.append((k, v))
            else:
                dyn_kw[k] = v
        kw_names = tuple(dyn_kw)
        all_args = (*args, *dyn_kw.values())
        total = len(all_args)
        stat = frozenset(i % n for i in static) if n else frozenset()
        signature = (kw_names, tuple(static_kw))
        hit = _cached_walk(cache, all_args, stat, signature)
        if hit is not None:
            return _call_cached(hit, all_args, jitted)
        epoch = structure_epoch()
        walker = Walker(transform="jit")
        skel, entries = _split_inputs(all_args, (None,) * total, walker, stat)
        per_arg: list[list[Any]] = [[] for _ in range(total)]
        for e in entries:
            per_arg[e.arg].append(e.value)
        donated_args = tuple(
            sorted(
                {i % n for i in donate if n}
                | {n + j for j, k in enumerate(kw_names) if k in donate_names}
            )
        )
        donated = [_Carrier(per_arg[i], None) for i in donated_args]
        kept = [
            _Carrier(per_arg[i], None) for i in range(total) if i not in donated_args
        ]
        key = _Static(
            (
                _JitSkeleton(skel, stat, total),
                tuple(static_kw),
                kw_names,
                donated_args,
            )
        )
        result = jitted(key, donated, kept)
        new_values, outs = result.values
        if isinstance(result.aux, _Unchanged):
            _write_changed(entries, result.aux.same, new_values)
            _store_walk(
                cache,
                epoch,
                all_args,
                stat,
                signature,
                entries,
                walker,
                key,
                donated_args,
            )
            return _merge_outputs(outs, walker.nodes)
        after, origin = result.aux.value
        reuse = {j: walker.nodes[i] for j, i in enumerate(origin) if i is not None}
        builder = InPlaceBuilder(iter(new_values), reuse)
        for slot in after.slots:
            if slot[0] == "graph":
                builder.build(slot[1])
        nodes = [builder.nodes[j] for j in range(len(builder.nodes))]
        return _merge_outputs(outs, nodes)

    return wrapper


@dataclasses.dataclass(frozen=True)
class _Unchanged:
    """The aux of a jit result whose structure did not change: per graph leaf,
    whether the function left it as it was (it is then not returned)."""

    same: tuple[bool, ...]


def _write_changed(
    entries: list[_Entry], same: tuple[bool, ...], new_values: list[Any]
) -> None:
    graph = [e for e in entries if e.leaf is not None]
    it = iter(new_values)
    for e, unchanged in zip(graph, same, strict=True):
        if not unchanged:
            e.leaf.write(next(it))


@dataclasses.dataclass
class _CachedWalk:
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
    entries: list[_Entry]
    nodes: list[Any]
    key: _Static
    donated_args: tuple[int, ...]


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
            kinds.append(("static", _Static(a)))
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


def _store_walk(
    cache: dict[str, _CachedWalk],
    epoch: int,
    args: tuple[Any, ...],
    static: frozenset[int],
    signature: Any,
    entries: list[_Entry],
    walker: Walker,
    key: _Static,
    donated_args: tuple[int, ...],
) -> None:
    kinds = _arg_kinds(args, static)
    if kinds is None or structure_epoch() != epoch:
        cache.pop("last", None)  # the call changed structure: walk again next time
        return
    cache["last"] = _CachedWalk(
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


def _cached_walk(
    cache: dict[str, _CachedWalk],
    args: tuple[Any, ...],
    static: frozenset[int],
    signature: Any,
) -> _CachedWalk | None:
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


def _call_cached(hit: _CachedWalk, args: tuple[Any, ...], jitted: Any) -> Any:
    per_arg: list[list[Any]] = [[] for _ in args]
    for e in hit.entries:
        per_arg[e.arg].append(e.leaf.read() if e.leaf is not None else args[e.arg])
    donated = [_Carrier(per_arg[i], None) for i in hit.donated_args]
    kept = [
        _Carrier(per_arg[i], None)
        for i in range(len(args))
        if i not in hit.donated_args
    ]
    result = jitted(hit.key, donated, kept)
    new_values, outs = result.values
    if not isinstance(result.aux, _Unchanged):  # pragma: no cover - cached unchanged
        raise errors.GraphStructureError(
            "nnx.jit: the structure changed on a cached call; please report this."
        )
    _write_changed(hit.entries, result.aux.same, new_values)
    return _merge_outputs(outs, hit.nodes)


@dataclasses.dataclass(frozen=True)
class _JitSkeleton:
    skeleton: _Skeleton
    static: frozenset[int]
    n_args: int


# ------------------------------------------------------------------------ grad


class _Diff:
    """The grad spec of an argument: differentiate its ``filter`` variables."""

    __slots__ = ("filter",)

    def __init__(self, filter: Any):
        self.filter = filter

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Diff) and _Static(self.filter) == _Static(
            other.filter
        )

    def __hash__(self) -> int:
        return hash(_Static(self.filter))

    def __repr__(self) -> str:
        return f"a gradient (filter {_filter_name(self.filter)})"


def _normalize_argnums(argnums: Any) -> tuple[list[tuple[int, Any]], bool]:
    single = isinstance(argnums, int | DiffState)
    items = [argnums] if single else list(argnums)
    out = []
    for a in items:
        if isinstance(a, DiffState):
            out.append((a.argnum, a.filter))
        elif isinstance(a, int):
            out.append((a, Param))
        else:
            raise TypeError(f"argnums entries are ints or DiffState, got {a!r}.")
    return out, single


def _diff_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, _Diff) and isinstance(x, Variable):
        if not to_predicate(spec.filter)(path[2:], x):
            return None
    return spec


def _describe_grad(spec: Any) -> str:
    return "no gradient" if spec is None else repr(spec)


def value_and_grad(
    f: Callable[..., Any] | None = None,
    *,
    argnums: Any = 0,
    has_aux: bool = False,
    **grad_kwargs: Any,
) -> Any:
    """``jax.value_and_grad`` for functions of objects.

    An object argument is differentiated with respect to its ``Param`` variables (or
    ``DiffState(argnum, filter)``'s); its gradient is a :class:`State` of them.
    Other updates the function makes to argument objects (batch statistics, RNG
    counters) come back into them.
    """
    if f is None:
        return functools.partial(
            value_and_grad, argnums=argnums, has_aux=has_aux, **grad_kwargs
        )
    diff, single = _normalize_argnums(argnums)
    diff_of = dict(diff)

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        if diff_of and max(diff_of) >= len(args):
            n = max(diff_of)
            raise TypeError(  # JAX's class and first sentence
                f"differentiating with respect to argnums={n} requires at least "
                f"{n + 1} positional arguments to be passed by the caller, but got "
                f"only {len(args)} positional arguments.\nnnx.grad: argnums count "
                "from 0; pass the missing arguments or a smaller argnums."
            )
        specs = tuple(
            _Diff(diff_of[i]) if i in diff_of else None for i in range(len(args))
        )
        walker = Walker(_diff_resolver, describe=_describe_grad, transform="grad")
        skel, entries = _split_inputs(args, specs, walker)
        is_diff = [e.spec is not None for e in entries]
        diff_vals = [e.value for e in entries if e.spec is not None]
        rest_vals = [e.value for e in entries if e.spec is None]

        def pure(diff_vals: list[Any], rest: _Carrier) -> Any:
            it_d, it_r = iter(diff_vals), iter(rest.values)
            merged = [next(it_d) if d else next(it_r) for d in is_diff]
            with frame("grad") as fr:
                args2 = _rebuild(skel, merged)
                out = f(*args2)
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise TypeError(
                            "nnx.grad(has_aux=True): the function must return "
                            "(value, aux)."
                        )
                    value, aux = out
                else:
                    value, aux = out, None
                w2 = Walker(_diff_resolver, describe=_describe_grad, transform="grad")
                after, new_entries = _split_inputs(args2, specs, w2)
                _check_structure(skel, after, "grad")
                w2.frame = fr
                aux_out = _split_outputs(aux, None, w2)
            new_graph = [e.value for e in new_entries if e.leaf is not None]
            return value, (new_graph, aux_out)

        (value, (new_graph, aux_out)), grads = jax.value_and_grad(
            pure, argnums=0, has_aux=True, **grad_kwargs
        )(diff_vals, _Carrier(rest_vals, None))
        _write_back(entries, new_graph)
        aux = _merge_outputs(aux_out, walker.nodes)
        g_it = iter(grads)
        grad_of = [next(g_it) if d else None for d in is_diff]
        g = [_arg_grads(args, skel, entries, grad_of, i) for i, _ in diff]
        g = g[0] if single else tuple(g)
        return ((value, aux), g) if has_aux else (value, g)

    return wrapper


def _arg_grads(
    args: tuple, skel: _Skeleton, entries: list[_Entry], grad_of: list[Any], i: int
) -> Any:
    """Argument ``i``'s gradient: its pytree, each object replaced by a State."""
    n_before = len(
        jax.tree.leaves(_wrap(args[:i]), is_leaf=lambda x: isinstance(x, _Graph))
    )
    wrapped = _wrap(args[i])
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=lambda x: isinstance(x, _Graph))
    out = []
    for j, leaf in enumerate(leaves):
        slot = n_before + j
        mine = [(e, g) for e, g in zip(entries, grad_of, strict=True) if e.slot == slot]
        if isinstance(leaf, _Graph):
            root = skel.slots[slot][2]
            flat = {
                e.leaf.path[len(root) :]: (
                    e.leaf.variable.replace(g) if e.leaf.variable is not None else g
                )
                for e, g in mine
                if g is not None
            }
            out.append(State.from_flat_state(flat))
        else:
            out.append(mine[0][1] if mine else None)
    return jax.tree.unflatten(treedef, out)


def grad(
    f: Callable[..., Any] | None = None,
    *,
    argnums: Any = 0,
    has_aux: bool = False,
    **grad_kwargs: Any,
) -> Any:
    """``jax.grad`` for functions of objects (see :func:`value_and_grad`)."""
    if f is None:
        return functools.partial(grad, argnums=argnums, has_aux=has_aux, **grad_kwargs)
    vg = value_and_grad(f, argnums=argnums, has_aux=has_aux, **grad_kwargs)

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        value_aux, g = vg(*args)
        return (g, value_aux[1]) if has_aux else g

    return wrapper


# ------------------------------------------------------------------------ vmap


def vmap(
    f: Callable[..., Any] | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    **vmap_kwargs: Any,
) -> Any:
    """``jax.vmap`` for functions of objects, with JAX's ``in_axes`` conventions.

    An object argument is mapped as a pytree would be: ``in_axes=(1, 0)`` maps the
    first object's variables on axis 1 and the second's on axis 0;
    ``StateAxes({filter: axis, ...})`` gives per-filter axes. Argument objects'
    updates come back on their input axes; objects created inside are returned
    stacked on ``out_axes``. Aliases must be consistent
    (:class:`~lens.errors.InconsistentAliasingError`).
    """
    if f is None:
        return functools.partial(
            vmap,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            **vmap_kwargs,
        )

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        specs = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if len(specs) != len(args):
            raise ValueError(
                f"nnx.vmap: in_axes has {len(specs)} entries for {len(args)} arguments."
            )
        walker = Walker(_axes_resolver, describe=_describe_axes, transform="vmap")
        skel, entries = _split_inputs(args, specs, walker)
        graph_axes = [e.spec for e in entries if e.leaf is not None]
        _check_ranks(entries)
        if axis_size is None:
            _check_sizes(entries)

        def pure(carrier: _Carrier) -> Any:
            with frame("vmap") as fr:
                args2 = _rebuild(skel, carrier.values)
                out = f(*args2)
                w2 = Walker(_axes_resolver, describe=_describe_axes, transform="vmap")
                after, new_entries = _split_inputs(args2, specs, w2)
                _check_structure(skel, after, "vmap")
                w2.frame = fr
                outs = _split_outputs(out, out_axes, w2)
            return [e.value for e in new_entries if e.leaf is not None], outs

        new_values, outs = jax.vmap(
            pure,
            in_axes=(_Carrier([e.spec for e in entries], None),),
            out_axes=(graph_axes, _strip_state_axes(out_axes)),
            axis_name=axis_name,
            axis_size=axis_size,
            **vmap_kwargs,
        )(_Carrier([e.value for e in entries], None))
        _write_back(entries, new_values)
        return _merge_outputs(_place_state_axes(outs), walker.nodes)

    return wrapper


def _check_ranks(entries: list[_Entry]) -> None:
    for e in entries:
        if e.leaf is None or not isinstance(e.spec, int):
            continue
        ndim = len(getattr(e.value, "shape", ()))
        if not -ndim <= e.spec < max(ndim, 1) or ndim == 0:
            kind = (
                type(e.leaf.variable).__name__
                if e.leaf.variable is not None
                else "array"
            )
            raise ValueError(
                f"nnx.vmap cannot map {path_str(e.leaf.path)} ({kind}, shape "
                f"{tuple(getattr(e.value, 'shape', ()))}) on axis {e.spec}.\nGive "
                f"that module a StateAxes, e.g. StateAxes({{{kind}: None, ...: "
                f"{e.spec}}}) to broadcast it."
            )


def _entry_name(e: _Entry) -> str:
    if e.leaf is not None:
        kind = (
            type(e.leaf.variable).__name__ if e.leaf.variable is not None else "array"
        )
        return f"{path_str(e.leaf.path)} ({kind})"
    return f"an array in args[{e.arg}]"


def _check_sizes(entries: list[_Entry]) -> None:
    """All mapped values must agree on the mapped size; name two that do not."""
    first: tuple[int, _Entry] | None = None
    for e in entries:
        if not isinstance(e.spec, int) or not hasattr(e.value, "shape"):
            continue
        shape = e.value.shape
        if not -len(shape) <= e.spec < len(shape):
            continue  # jax.vmap reports it
        size = shape[e.spec]
        if first is None:
            first = (size, e)
        elif size != first[0]:
            a = first[1]
            raise ValueError(
                "nnx.vmap got inconsistent sizes for the mapped axes: "
                f"{_entry_name(a)} has size {first[0]} on axis {a.spec}, "
                f"{_entry_name(e)} has size {size} on axis {e.spec}.\nMap values "
                "of one size; give broadcast ones the axis None (in_axes, or a "
                "StateAxes for a module's variables)."
            )


def _describe_axes(spec: Any) -> str:
    return f"axis {spec!r}"


def _place_state_axes(out: Any) -> Any:
    """Moves the values of new objects returned under a StateAxes to their axes
    (they left ``jax.vmap`` on axis 0; a ``None`` axis keeps one copy)."""

    def place(c: Any) -> Any:
        if not isinstance(c, _Carrier) or c.axes is None:
            return c
        values = [
            v[0] if ax is None else jnp.moveaxis(v, 0, ax)
            for v, ax in zip(c.values, c.axes, strict=True)
        ]
        return _Carrier(values, c.aux)

    return jax.tree.map(place, out, is_leaf=lambda x: isinstance(x, _Carrier))


def _strip_state_axes(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: 0 if isinstance(x, StateAxes) else x,
        tree,
        is_leaf=lambda x: x is None or isinstance(x, StateAxes),
    )


__all__ = ["DiffState", "StateAxes", "grad", "jit", "value_and_grad", "vmap"]
