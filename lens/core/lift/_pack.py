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

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from lens import errors
from lens.core import _trace
from lens.core._filters import (
    Filter,
    canonical_filter,
    group_collections,
    in_filter,
    intersect_filters,
    union_filters,
)
from lens.core._scope import LiftInfo, Scope, _copy_tree, _Frame

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
    passed twice is lifted once.
    """
    roots: list[int] = []
    for i, s in enumerate(scopes):
        if any(o is not s and _is_ancestor(o, s) for o in scopes):
            continue
        if not any(scopes[j] is s for j in roots):
            roots.append(i)
    rel: list[tuple[int, tuple[str, ...]]] = []
    for s in scopes:
        for ri, r in enumerate(roots):
            if scopes[r] is s or _is_ancestor(scopes[r], s):
                rel.append((ri, _relpath(scopes[r], s)))
                break
    return roots, rel


def _is_ancestor(a: Scope, b: Scope) -> bool:
    p = b.parent
    while p is not None:
        if p is a:
            return True
        p = p.parent
    return False


def _relpath(root: Scope, s: Scope) -> tuple[str, ...]:
    names: list[str] = []
    p: Scope | None = s
    while p is not None and p is not root:
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
    ):
        self.treedef = treedef
        self.roots = list(roots)
        self.rel = list(rel)
        self.mutable = list(mutable)
        self.lifts = list(lifts)
        self.recorder = recorder
        self.frames: list[_Frame] = []
        self.signature = (
            treedef,
            tuple(r.path for r in roots),
            tuple(rel),
            tuple(canonical_filter(m) for m in mutable),
            tuple(tuple(sorted(r._frame.flags.items(), key=repr)) for r in roots),
        )

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
                    per_root_vars[ri][col] = _copy_tree(tree)
        for group in rng_groups:
            for ri in range(n):
                per_root_rngs[ri].update(group[ri])
        if self.recorder is not None:
            self.recorder.inner(
                [tuple(g[ri] for g in variable_groups) for ri in range(n)]
            )
        inner_roots = []
        for ri, root in enumerate(self.roots):
            mutable = intersect_filters(self.mutable[ri], mutable_filter)
            frame = _Frame(
                per_root_vars[ri],
                per_root_rngs[ri],
                mutable,
                root._frame.flags,
                self.lifts[ri],
            )
            if self.recorder is not None:
                frame.track = set()
            self.frames.append(frame)
            inner_roots.append(Scope(frame, root.name, None, root.path, root._counters))
        scopes = []
        for ri, relpath in self.rel:
            s = inner_roots[ri]
            for name in relpath:
                s = s.push(name, reuse=True)
            scopes.append(s)
        return jax.tree_util.tree_unflatten(self.treedef, scopes)

    def invalidate(self) -> None:
        for f in self.frames:
            f.alive = False


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
        frames: list[_Frame | None] = [None] * self.n_roots
        for s, (ri, _) in zip(scopes, self.rel):
            frames[ri] = s._frame
        out = [
            [dict[str, Any]() for _ in range(self.n_roots)] for _ in self.out_filters
        ]
        for ri, frame in enumerate(frames):
            if frame is None:
                continue
            frame.alive or _raise_invalid(self.root_paths[ri])
            for col, tree in frame.variables.items():
                if not frame.is_mutable(col):
                    continue  # immutable variables are not returned
                for gi, f in enumerate(self.out_filters):
                    if in_filter(f, col):
                        out[gi][ri][col] = _copy_tree(tree)
                        if self.recorder is not None:
                            self.recorder.repack(
                                ri, self.root_paths[ri], col, tree, frame.track
                            )
                        break
        return tuple(tuple(g) for g in out)


def _raise_invalid(path: tuple[str, ...]) -> None:
    raise errors.InvalidScopeError(path)


def _merge(dest: dict[str, Any], src: Mapping[str, Any]) -> None:
    for k, v in src.items():
        d = dest.get(k)
        if isinstance(v, Mapping) and isinstance(d, dict):
            _merge(d, v)
        else:
            dest[k] = _copy_tree(v)


def pack(
    fn: Callable[..., Any],
    in_variable_filters: Sequence[Filter],
    out_variable_filters: Sequence[Filter],
    rng_filters: Sequence[Filter],
    name: str | None = None,
    *,
    hint: Hint | None = None,
    trace_options: Mapping[str, Any] | None = None,
    group_labels: Sequence[str] = (),
    rng_labels: Sequence[str] = (),
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
      hint: ``hint(kind, name)`` tells the user how to lift a hidden collection
        (``kind='collection'``) or stream (``kind='rng'``).
      trace_options: the transform's options, recorded in pack traces.
      group_labels: a label per variable group for traces (e.g. ``'axis 0'``).
      rng_labels: a label per rng group for traces (``'split'`` or ``'shared'``).

    Returns:
      ``wrapper(scope_tree, *args, **kwargs)`` returning ``y``.
    """
    name = name or getattr(fn, "__name__", "pack")
    in_union = _union(in_variable_filters)
    out_union = _union(out_variable_filters)
    rng_union = _union(rng_filters)

    def wrapper(scope_tree: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = (
            _trace.Recorder(name, trace_options or {}) if _trace._ACTIVE else None
        )
        try:
            return _run(recorder, scope_tree, args, kwargs)
        finally:
            if recorder is not None:
                recorder.close()

    def _run(recorder: Any, scope_tree: Any, args: tuple, kwargs: dict) -> Any:
        # Stage 1: scope de-duplication.
        scopes, treedef = jax.tree_util.tree_flatten(scope_tree, is_leaf=_is_scope)
        if not scopes or not all(_is_scope(s) for s in scopes):
            raise errors.TransformTargetError(
                f"{name} lifts scopes, but got {scope_tree!r}.\nPass the scope (or the "
                "module) as the first argument of the lifted function."
            )
        for s in scopes:
            s._check_valid()
        root_idx, rel = _dedup(scopes)
        roots = [scopes[i] for i in root_idx]
        if recorder is not None:
            recorder.scopes([s.path for s in scopes], root_idx, rel)

        # Stage 2: filter variables and rngs into groups.
        groups_xs = []
        hidden_cols: list[str] = []
        for r in roots:
            cols = r.variables()
            groups_xs.append(group_collections(cols, in_variable_filters))
            hidden_cols += [
                c for c in cols if not in_filter(in_union, c) and c not in hidden_cols
            ]
        rng_groups_xs = [group_collections(r.rngs, rng_filters) for r in roots]
        hidden_rngs = sorted(
            {s for r in roots for s in r.rngs if not in_filter(rng_union, s)}
        )
        variable_groups = tuple(
            tuple(g[i] for g in groups_xs) for i in range(len(in_variable_filters))
        )
        rng_groups = tuple(
            tuple(g[i] for g in rng_groups_xs) for i in range(len(rng_filters))
        )
        if recorder is not None:
            recorder.groups(
                in_variable_filters,
                group_labels,
                out_variable_filters,
                groups_xs,
                [r.path for r in roots],
                hidden_cols,
            )
            recorder.rngs(rng_filters, rng_labels, rng_groups_xs, hidden_rngs)

        mutable = [intersect_filters(r._frame.mutable, out_union) for r in roots]
        lifts = [
            r._frame.lifts
            + (
                LiftInfo(
                    name,
                    r.path,
                    in_union,
                    out_union,
                    rng_union,
                    hint,
                    groups=tuple(
                        zip(
                            in_variable_filters,
                            list(group_labels) + [""] * len(in_variable_filters),
                        )
                    ),
                    rng_groups=tuple(
                        zip(
                            rng_filters,
                            list(rng_labels) + ["shared"] * len(rng_filters),
                        )
                    ),
                ),
            )
            for r in roots
        ]
        scope_fn = ScopeFn(treedef, roots, rel, mutable, lifts, recorder)
        repack_fn = RepackFn(
            treedef,
            len(roots),
            rel,
            out_variable_filters,
            recorder,
            [r.path for r in roots],
        )

        # Stages 3-5 happen inside fn (the transform).
        try:
            y, out_groups = fn(
                scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs
            )
        finally:
            scope_fn.invalidate()

        # Stage 6: commit.
        for group in out_groups:
            for ri, cols in enumerate(group):
                root = roots[ri]
                for col, tree in cols.items():
                    if not tree or not root.is_mutable_collection(col):
                        continue
                    _merge(root._mutable_collection(col), tree)
                    if recorder is not None:
                        recorder.commit(ri, root.path, col, tree)
        return y

    return wrapper
