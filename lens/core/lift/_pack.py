"""``pack``: the one generic lifting mechanism every lifted transform is built on.

``pack(fn, in_variable_filters, out_variable_filters, rng_filters)`` returns a
function of ``(scope_tree, *args, **kwargs)`` that goes through six stages:

1. scope de-duplication: only root scopes are lifted; the others are rebuilt by path;
2. filter: variables and rng streams are split into groups, one per filter;
3. transform-specific lifting: ``fn(scope_fn, repack_fn, variable_groups,
   rng_groups, *args, **kwargs)`` hands the groups to a JAX transform;
4. scope reconstruction: inside it, ``scope_fn`` rebuilds scopes from the groups;
5. repack: ``repack_fn`` collects the mutable variables of the inner scopes;
6. commit: what ``fn`` returns as the second item is written to the outer scopes.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.core

from lens import errors
from lens.core import _trace
from lens.core._axes import CallAxes
from lens.core._filters import (
    Filter,
    canonical_filter,
    group_collections,
    in_filter,
    intersect_filters,
    union_filters,
)
from lens.core._lift_info import LiftInfo, Shared
from lens.core._scope import Scope
from lens.core._tree import copy_tree, merge_into

Hint = Callable[[str, str], str]


def _union(filters: Sequence[Filter]) -> Filter:
    return functools.reduce(union_filters, filters, False)


def _is_scope(x: Any) -> bool:
    return isinstance(x, Scope)


def _dedup(
    scopes: Sequence[Scope],
) -> tuple[list[int], list[tuple[int, tuple[str, ...]]]]:
    """Stage 1: indices of the root scopes, and (root index, relative path) per scope.

    A scope is a root if none of its ancestors is lifted with it; the same scope
    passed twice is lifted once. Scopes compare by what they point at (the root
    variables, the path and the rng counters), not by identity: two views of one
    module's scope are the same scope.
    """
    roots: list[int] = []
    for i, s in enumerate(scopes):
        if any(o != s and _is_ancestor(o, s) for o in scopes):
            continue
        if not any(scopes[j] == s for j in roots):
            roots.append(i)
    rel: list[tuple[int, tuple[str, ...]]] = []
    for s in scopes:
        for ri, r in enumerate(roots):
            if scopes[r] == s or _is_ancestor(scopes[r], s):
                rel.append((ri, _relpath(scopes[r], s)))
                break
    return roots, rel


def _is_ancestor(a: Scope, b: Scope) -> bool:
    p = b.parent
    while p is not None:
        if p == a:
            return True
        p = p.parent
    return False


def _relpath(root: Scope, s: Scope) -> tuple[str, ...]:
    names: list[str] = []
    p: Scope | None = s
    while p is not None and p != root:
        names.append(p.name)  # type: ignore[arg-type]
        p = p.parent
    return tuple(reversed(names))


class ScopeFn:
    """Stage 4: rebuilds the inner scopes from lifted variable and rng groups.

    Equal (and hashable) when the rebuilt scopes would be the same, so it can be a
    static argument of ``jax.jit``.
    """

    def __init__(
        self,
        treedef: Any,
        roots: Sequence[Scope],
        rel: Sequence[tuple[int, tuple[str, ...]]],
        mutable: Sequence[Filter],
        lifts: Sequence[tuple[LiftInfo, ...]],
        recorder: Any,
        name: str = "",
    ):
        self.treedef = treedef
        self.roots = list(roots)
        self.rel = list(rel)
        self.mutable = list(mutable)
        self.lifts = list(lifts)
        self.recorder = recorder
        self.shared: list[Shared] = []
        # The shared records of the roots made by the latest call, in root order.
        self.last_shared: list[Shared] = []
        self.name = name
        # What the rebuilt scopes look like, without where they are.
        self.structure = (
            treedef,
            len(self.roots),
            tuple(rel),
            tuple(canonical_filter(m) for m in mutable),
            tuple(tuple(sorted(r.flags.items(), key=repr)) for r in roots),
        )
        self.signature = (self.structure, tuple(r.path for r in roots))

    def __hash__(self) -> int:
        return hash(self.signature)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScopeFn) and other.signature == self.signature

    def __call__(
        self,
        variable_groups: Sequence[Sequence[Mapping[str, Any]]],
        rng_groups: Sequence[Sequence[Mapping[str, Any]]],
        mutable_filter: Filter = True,
    ) -> Any:
        n = len(self.roots)
        per_root_vars = [dict[str, Any]() for _ in range(n)]
        per_root_rngs = [dict[str, Any]() for _ in range(n)]
        for group in variable_groups:
            for ri in range(n):
                for col, tree in group[ri].items():
                    per_root_vars[ri][col] = copy_tree(tree)
        for group in rng_groups:
            for ri in range(n):
                per_root_rngs[ri].update(group[ri])
        self.recorder.inner([tuple(g[ri] for g in variable_groups) for ri in range(n)])
        inner_roots = []
        self.last_shared = []
        for ri, root in enumerate(self.roots):
            mutable = intersect_filters(self.mutable[ri], mutable_filter)
            debug = root.debug_path
            debug = (
                debug[:-1] + (f"{self.name}({debug[-1]})",)
                if debug
                else (f"{self.name}()",)
            )
            inner = Scope(
                per_root_vars[ri],
                per_root_rngs[ri],
                name=root.name,
                mutable=mutable,
                path=root.path,
                debug_path=debug,
                flags=root.flags,
            )
            inner._counters = root._counters
            inner._shared.lifts = self.lifts[ri]
            if self.recorder.active:
                inner._shared.track = set()
            self.shared.append(inner._shared)
            self.last_shared.append(inner._shared)
            inner_roots.append(inner)
        scopes = []
        for ri, relpath in self.rel:
            s = inner_roots[ri]
            for name in relpath:
                s = s.push(name, reuse=True)
            scopes.append(s)
        return jax.tree_util.tree_unflatten(self.treedef, scopes)

    def invalidate(self) -> None:
        for shared in self.shared:
            shared.alive = False
            shared.created = shared.track = None
        self.shared = []
        self.last_shared = []


class RepackFn:
    """Stage 5: collects the mutable variables of the inner root scopes, per out filter."""

    def __init__(
        self,
        treedef: Any,
        n_roots: int,
        rel: Sequence[tuple[int, tuple[str, ...]]],
        out_filters: Sequence[Filter],
        recorder: Any,
        root_paths: Sequence[tuple[str, ...]],
    ):
        self.treedef = treedef
        self.n_roots = n_roots
        self.rel = list(rel)
        self.out_filters = list(out_filters)
        self.recorder = recorder
        self.root_paths = list(root_paths)
        self.signature = (
            treedef,
            n_roots,
            tuple(rel),
            tuple(canonical_filter(f) for f in out_filters),
        )

    def __hash__(self) -> int:
        return hash(self.signature)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepackFn) and other.signature == self.signature

    def __call__(self, inner_scope_tree: Any) -> tuple[tuple[dict[str, Any], ...], ...]:
        scopes = jax.tree_util.tree_leaves(inner_scope_tree, is_leaf=_is_scope)
        roots: list[Scope | None] = [None] * self.n_roots
        for s, (ri, _) in zip(scopes, self.rel):
            roots[ri] = s.root
        out = [
            [dict[str, Any]() for _ in range(self.n_roots)] for _ in self.out_filters
        ]
        for ri, root in enumerate(roots):
            if root is None:
                continue
            if not root._shared.alive:
                _raise_invalid(self.root_paths[ri])
            for col, tree in root._variables.items():
                if not root.is_mutable_collection(col):
                    continue  # immutable variables are not returned
                for gi, f in enumerate(self.out_filters):
                    if in_filter(f, col):
                        out[gi][ri][col] = copy_tree(tree)
                        self.recorder.repack(
                            ri, self.root_paths[ri], col, tree, root._shared.track
                        )
                        break
        return tuple(tuple(g) for g in out)


def _raise_invalid(path: tuple[str, ...]) -> None:
    raise errors.InvalidScopeError(path[-1] if path else None, path=path)


def _live_traces() -> set[int] | None:
    """Ids of the current JAX trace and its parents (None if JAX hides them)."""
    try:
        from jax._src import core

        live: set[int] = set()
        with core.take_current_trace() as trace:
            while trace is not None:
                live.add(id(trace))
                trace = getattr(trace, "parent_trace", None)
        return live
    except Exception:  # noqa: BLE001 - private API; the guard is best effort
        return None


def check_no_leaked_tracers(
    tree: Any, transform: str, paths: Sequence[tuple[str, ...]]
) -> None:
    """Raises if ``tree`` holds a tracer of a JAX trace that has ended.

    Variables committed after a transform must be values of the current trace (or
    concrete): a tracer of the transform's own trace would leak out of it.
    """
    tracers = [
        x for x in jax.tree_util.tree_leaves(tree) if isinstance(x, jax.core.Tracer)
    ]
    if not tracers:
        return
    live = _live_traces()
    if live is None:
        return
    for t in tracers:
        if id(getattr(t, "_trace", None)) not in live:
            where = ", ".join(errors.path_text(p) for p in paths)
            raise errors.TracerLeakError(
                f"{transform} at {where} would store a value that is a tracer of a "
                f"finished JAX trace ({type(t).__name__}, shape {t.shape}).\n"
                "A variable was created or written inside the transform in a way that "
                "is not carried out of it. Please report this with the model."
            )


@dataclasses.dataclass(frozen=True)
class _PackSpec:
    """What ``pack``'s arguments say, fixed when a transform is built."""

    fn: Callable[..., Any]
    in_variable_filters: Sequence[Filter]
    out_variable_filters: Sequence[Filter]
    rng_filters: Sequence[Filter]
    label: str
    hint: Hint | None
    trace_options: Mapping[str, Any] | None
    group_labels: Sequence[str]
    rng_labels: Sequence[str]

    @functools.cached_property
    def in_union(self) -> Filter:
        return _union(self.in_variable_filters)

    @functools.cached_property
    def out_union(self) -> Filter:
        return _union(self.out_variable_filters)

    @functools.cached_property
    def rng_union(self) -> Filter:
        return _union(self.rng_filters)


def _root_scopes(
    spec: _PackSpec, scope_tree: Any, recorder: Any
) -> tuple[Any, list[Scope], list[tuple[int, tuple[str, ...]]]]:
    """Stage 1: the scopes of ``scope_tree`` de-duplicated to their roots.

    Returns the tree's structure, the root scopes and, per scope, its root's index
    and its path below that root.
    """
    scopes, treedef = jax.tree_util.tree_flatten(scope_tree, is_leaf=_is_scope)
    if not all(_is_scope(s) for s in scopes):
        raise errors.TransformTargetError(
            scope_tree,
            detail=f"{spec.label} lifts scopes: pass the scope (or the module) as "
            "the first argument of the lifted function.",
        )
    for s in scopes:
        s._check_valid()
    root_idx, rel = _dedup(scopes)
    recorder.scopes([s.path for s in scopes], root_idx, rel)
    return treedef, [scopes[i] for i in root_idx], rel


def _filter_groups(
    spec: _PackSpec, roots: Sequence[Scope], recorder: Any
) -> tuple[tuple, tuple]:
    """Stage 2: the roots' variables and rngs split into one group per filter.

    Each group is a tuple with one ``{collection: tree}`` (or ``{stream: key}``)
    dict per root scope.
    """
    groups_xs = []
    hidden_cols: list[str] = []
    for r in roots:
        cols = r.variables()
        groups_xs.append(group_collections(cols, spec.in_variable_filters))
        hidden_cols += [
            c for c in cols if not in_filter(spec.in_union, c) and c not in hidden_cols
        ]
    rng_groups_xs = [group_collections(r.rngs, spec.rng_filters) for r in roots]
    hidden_rngs = sorted(
        {s for r in roots for s in r.rngs if not in_filter(spec.rng_union, s)}
    )
    n_vars, n_rngs = len(spec.in_variable_filters), len(spec.rng_filters)
    variable_groups = tuple(tuple(g[i] for g in groups_xs) for i in range(n_vars))
    rng_groups = tuple(tuple(g[i] for g in rng_groups_xs) for i in range(n_rngs))
    recorder.groups(
        spec.in_variable_filters,
        spec.group_labels,
        spec.out_variable_filters,
        groups_xs,
        [r.path for r in roots],
        hidden_cols,
    )
    recorder.rngs(spec.rng_filters, spec.rng_labels, rng_groups_xs, hidden_rngs)
    return variable_groups, rng_groups


def _lift_info(spec: _PackSpec, root: Scope) -> LiftInfo:
    """What the inner scopes remember of this lift (for errors that say how to
    lift a hidden collection or stream, and for traces)."""
    n_vars, n_rngs = len(spec.in_variable_filters), len(spec.rng_filters)
    return LiftInfo(
        spec.label,
        root.path,
        spec.in_union,
        spec.out_union,
        spec.rng_union,
        spec.hint,
        groups=tuple(
            zip(spec.in_variable_filters, list(spec.group_labels) + [""] * n_vars)
        ),
        rng_groups=tuple(
            zip(spec.rng_filters, list(spec.rng_labels) + ["shared"] * n_rngs)
        ),
    )


def _scope_and_repack_fns(
    spec: _PackSpec,
    treedef: Any,
    roots: Sequence[Scope],
    rel: Sequence[tuple[int, tuple[str, ...]]],
    recorder: Any,
) -> tuple[ScopeFn, RepackFn]:
    """The functions of stages 4 and 5, which the transform calls inside."""
    mutable = [intersect_filters(r.mutable, spec.out_union) for r in roots]
    lifts = [r._shared.lifts + (_lift_info(spec, r),) for r in roots]
    scope_fn = ScopeFn(treedef, roots, rel, mutable, lifts, recorder, spec.label)
    repack_fn = RepackFn(
        treedef,
        len(roots),
        rel,
        spec.out_variable_filters,
        recorder,
        [r.path for r in roots],
    )
    return scope_fn, repack_fn


def _commit(
    spec: _PackSpec, roots: Sequence[Scope], out_groups: Any, recorder: Any
) -> None:
    """Stage 6: the variable groups the transform returned, written to the roots."""
    check_no_leaked_tracers(out_groups, spec.label, [r.path for r in roots])
    for group in out_groups:
        for ri, cols in enumerate(group):
            root = roots[ri]
            for col, tree in cols.items():
                if not tree or not root.is_mutable_collection(col):
                    continue
                merge_into(root._mutable_collection(col), tree)
                recorder.commit(ri, root.path, col, tree)
                track = root._shared.track
                if track is not None:  # an enclosing traced pack: updated there
                    track.update(
                        (col, root.path + p) for p, _ in _trace.flatten_vars(tree)
                    )


def _run(
    spec: _PackSpec, recorder: Any, scope_tree: Any, args: tuple, kwargs: dict
) -> Any:
    """The six stages for one call of the lifted function."""
    treedef, roots, rel = _root_scopes(spec, scope_tree, recorder)
    variable_groups, rng_groups = _filter_groups(spec, roots, recorder)
    scope_fn, repack_fn = _scope_and_repack_fns(spec, treedef, roots, rel, recorder)
    # Stages 3-5 happen inside fn (the transform).
    try:
        y, out_groups = spec.fn(
            scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs
        )
    finally:
        scope_fn.invalidate()
    _commit(spec, roots, out_groups, recorder)
    return y


def pack(
    fn: Callable[..., Any],
    in_variable_filters: Sequence[Filter],
    out_variable_filters: Sequence[Filter],
    rng_filters: Sequence[Filter],
    name: str | None = None,
    enable_kwargs: bool = False,
    *,
    hint: Hint | None = None,
    trace_options: Mapping[str, Any] | None = None,
    group_labels: Sequence[str] = (),
    rng_labels: Sequence[str] = (),
    trace_args: Callable[[tuple, dict], CallAxes] | None = None,
) -> Callable[..., Any]:
    """Lifts ``fn`` over the variables and rngs of one or more scopes.

    Args:
      fn: ``fn(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kw)``
        returning ``(y, out_variable_groups)``. ``variable_groups`` has one entry
        per in-filter, each a tuple with one ``{collection: tree}`` dict per root
        scope; ``rng_groups`` likewise with ``{stream: key}`` dicts.
      in_variable_filters: one filter per variable group; a collection goes to the
        first group that matches it, and is invisible inside if none does.
      out_variable_filters: the groups ``repack_fn`` returns; a collection no
        out-filter matches is immutable inside.
      rng_filters: one filter per rng group; unmatched streams are invisible.
      name: the transform's name, for errors and traces.
      enable_kwargs: pass keyword arguments on to ``fn``. Without it (Flax's
        default) keyword arguments are dropped with a ``RuntimeWarning``.
      hint: ``hint(kind, name)`` tells the user how to lift a hidden collection
        (``kind='collection'``) or stream (``kind='rng'``).
      trace_options: the transform's options, recorded in pack traces.
      group_labels: a label per variable group for traces (e.g. ``'axis 0'``).
      rng_labels: a label per rng group for traces (``'split'`` or ``'shared'``).
      trace_args: ``trace_args(args, kwargs)`` says, for traces, how one call's
        arguments go in and its results come out (a ``CallAxes``, by name: a
        scan's carry is carried, its ``xs`` split along ``in_axes``).

    Returns:
      ``wrapper(scope_tree, *args, **kwargs)`` returning ``y``.
    """
    spec = _PackSpec(
        fn,
        in_variable_filters,
        out_variable_filters,
        rng_filters,
        name or getattr(fn, "__name__", "pack"),
        hint,
        trace_options,
        group_labels,
        rng_labels,
    )

    def wrapper(scope_tree: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs and not enable_kwargs:
            warnings.warn(
                f'kwargs are not supported in {spec.label}, so "{", ".join(kwargs)}" '
                "is(are) ignored\nPass them positionally, or build the lifted "
                "function with pack(..., enable_kwargs=True).",
                RuntimeWarning,
                stacklevel=2,
            )
            kwargs = {}
        recorder = _trace.recorder(spec.label, trace_options)
        if recorder.active and trace_args is not None:
            recorder.arguments(*trace_args(args, kwargs))
        try:
            return _run(spec, recorder, scope_tree, args, kwargs)
        finally:
            recorder.close()

    return wrapper
