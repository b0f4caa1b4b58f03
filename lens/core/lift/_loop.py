"""Helpers for loops (``scan``, ``while_loop``): initialising state before the loop.

A loop's carry has a fixed structure, so variables that the body creates in a
broadcast or carry collection must exist before the loop starts. ``first_run``
traces the body once on the first iteration's inputs, checks that the values it
initialises do not depend on the loop, and evaluates them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.core
import jax.numpy as jnp

from lens import errors
from lens.core import _trace
from lens.core._filters import Filter, in_filter


def _is_literal(v: Any) -> bool:
    return type(v).__name__ == "Literal"


def dependent_outputs(jaxpr: Any) -> list[bool]:
    """For each output of ``jaxpr``, whether it depends on any of its inputs."""
    dep = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(not _is_literal(v) and v in dep for v in eqn.invars):
            dep.update(eqn.outvars)
    return [not _is_literal(v) and v in dep for v in jaxpr.outvars]


def live_part(jaxpr: Any) -> Any:
    """``jaxpr`` without the equations its outputs do not need (effects kept).

    ``first_run`` traces the whole body but returns only what it created in a
    broadcast or carry collection and the broadcast outputs: usually nothing. Run
    in full, the body's forward pass (a scanned layer's matmuls) would be evaluated
    into the enclosing trace only to be dropped when it is lowered, costing trace
    and lower time there on every call.
    """
    live = {v for v in jaxpr.outvars if not _is_literal(v)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.effects or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if not _is_literal(v))
    if len(kept) == len(jaxpr.eqns):
        return jaxpr
    kept.reverse()
    return jaxpr.replace(eqns=kept)


def first_run(
    body: Callable[..., Any],
    inputs: Sequence[Any],
    transform: str,
    check: bool = True,
    roots: Sequence[Any] = (),
) -> Any:
    """Runs ``body(*inputs)`` once and returns its outputs.

    Every input counts as depending on the loop (carry, the iteration's slice, its
    rngs): with ``check``, an output that depends on one raises
    :class:`LoopBroadcastDependenceError`. The variables of the trees of the
    scopes ``roots`` are left as they were (see :func:`outer_variables_kept`).
    """
    with _trace.rehearsal(), outer_variables_kept(roots):
        closed, shapes = jax.make_jaxpr(body, return_shape=True)(*inputs)
    deps = dependent_outputs(closed.jaxpr) if check else []
    if any(deps):
        paths = [
            "".join(str(k) for k in path)
            for (path, _), d in zip(
                jax.tree_util.tree_flatten_with_path(shapes)[0], deps
            )
            if d
        ]
        raise errors.LoopBroadcastDependenceError(
            f"broadcasted variable has a data dependency on the {transform} body.\n"
            f"The initial value of {len(paths)} broadcast or carry variable(s) (or "
            "broadcast outputs) depends on the loop (carry, scanned inputs or split "
            f"rngs): {', '.join(paths[:4])}.\nInitialise them from shapes and "
            "unsplit rngs only, or scan the collection with variable_axes instead."
        )
    flat = jax.tree_util.tree_leaves(inputs)
    out = [
        jnp.asarray(x)
        for x in jax.core.eval_jaxpr(live_part(closed.jaxpr), closed.consts, *flat)
    ]
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), out)


@contextlib.contextmanager
def outer_variables_kept(roots: Sequence[Any]) -> Iterator[None]:
    """Leaves the mutable variables of the trees of ``roots`` as they were.

    The body works on the transform's own inner scopes, so this is a no-op for
    a body that does. A body that closes over an outer module's variable
    (``c = self.variable(...)``, then ``c.value = ...`` in the body) writes the
    outer tree while it is traced; flax's loops trace the body once and write
    the carried collections back over such a write. Kept, a write of this
    rehearsal would leave a tracer of a finished trace in the outer tree. The
    nested dicts are restored in place, as scopes hold references into them.
    """
    saved: list[tuple[dict[str, Any], dict[str, Any]]] = []
    seen: set[int] = set()

    def keep(d: dict[str, Any]) -> None:
        if id(d) in seen:
            return
        seen.add(id(d))
        saved.append((d, dict(d)))
        for v in d.values():
            if type(v) is dict:
                keep(v)

    for r in roots:
        keep(r.root._variables)
    try:
        yield
    finally:
        for d, items in saved:
            if d.keys() != items.keys() or any(d[k] is not v for k, v in items.items()):
                d.clear()
                d.update(items)


def nest_created(
    created: Sequence[tuple[str, tuple[str, ...], Any]],
    col_filter: Filter,
    root_path: tuple[str, ...],
) -> dict[str, Any]:
    """Nests ``(collection, path, value)`` creations that match ``col_filter``.

    Paths are made relative to ``root_path``; the value is the one the variable was
    created with (its initial value), not what the body later wrote.
    """
    out: dict[str, Any] = {}
    for col, path, value in created:
        if not in_filter(col_filter, col):
            continue
        rel = path[len(root_path) :]
        d = out.setdefault(col, {})
        for p in rel[:-1]:
            d = d.setdefault(p, {})
        d.setdefault(rel[-1], value)
    return out


def record_created(scope_fn: Any) -> list[Any]:
    """Starts recording the variables created in the scopes ``scope_fn`` just made."""
    shared = list(scope_fn.last_shared)
    for sh in shared:
        sh.created = []
    return shared


def created_in(
    shared: Sequence[Any], scope_fn: Any, col_filter: Filter
) -> list[dict[str, Any]]:
    """Per root, the nested initial values of the variables created (see above)."""
    out = [
        nest_created(sh.created or [], col_filter, root.path)
        for sh, root in zip(shared, scope_fn.roots)
    ]
    for sh in shared:
        sh.created = None  # the values are tracers of this run: do not keep them
    return out
