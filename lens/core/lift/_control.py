"""Control flow through scopes: ``while_loop``, ``cond`` and ``switch``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens.core._filters import Filter, intersect_filters, is_filter_empty
from lens.core._trace import flatten_vars
from lens.core._tree import merged
from lens.core.lift._loop import created_in, first_run, record_created
from lens.core.lift._pack import pack
from lens.core.lift._util import _unzip2, filter_hint, tree_map_rngs


def while_loop(
    cond_fn: Callable[..., Any],
    body_fn: Callable[..., Any],
    scope: Any,
    init: Any,
    carry_variables: Filter = False,
    broadcast_variables: Filter = True,
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006 - read only
) -> Any:
    """A lifted ``jax.lax.while_loop``.

    Args:
      cond_fn: ``cond_fn(scope, carry) -> bool``; variables are read-only in it.
      body_fn: ``body_fn(scope, carry) -> carry``.
      scope: the scope to lift.
      init: the initial carry.
      carry_variables: collections updated from one iteration to the next; they
        may be created inside the body (initialised before the loop).
      broadcast_variables: collections visible, read-only, in every iteration.
      split_rngs: rng filter -> whether each iteration gets its own key (the key
        is folded with the iteration number).

    Returns the final carry.
    """
    rng_filters, rng_splits = _unzip2(split_rngs.items())

    def inner(scope_fn, repack_fn, variable_groups, rng_groups):
        carry_vars, bcast_vars = variable_groups

        def loop_rngs(i: Any) -> tuple:
            # As Flax: a split stream is folded with the iteration (-i in cond_fn).
            return tuple(
                tree_map_rngs(lambda k: jax.random.fold_in(k, i), g) if s else g
                for g, s in zip(rng_groups, rng_splits)
            )

        if _may_create(scope_fn, carry_variables):
            # lens: carry variables may be created in the body; initialise them
            # before the loop from one dry run of the body.
            def body0(init, i):
                s = scope_fn((carry_vars, bcast_vars), loop_rngs(i))
                shared = record_created(scope_fn)
                body_fn(s, init)
                return tuple(created_in(shared, scope_fn, carry_variables))

            created = first_run(
                body0,
                (init, jnp.zeros((), jnp.int32)),
                "while_loop",
                roots=scope_fn.roots,
            )
            carry_vars = tuple(merged(o, c) for o, c in zip(carry_vars, created))

        def cond_wrapper(c):
            i, carry_c, carry = c
            s = scope_fn((carry_c, bcast_vars), loop_rngs(-i), mutable_filter=False)
            return cond_fn(s, carry)

        def body_wrapper(c):
            i, carry_c, carry = c
            s = scope_fn((carry_c, bcast_vars), loop_rngs(i))
            carry = body_fn(s, carry)
            (carry_c,) = repack_fn(s)
            return i + 1, carry_c, carry

        _, carry_out, carry = jax.lax.while_loop(
            cond_wrapper, body_wrapper, (jnp.zeros((), jnp.int32), carry_vars, init)
        )
        return carry, (carry_out,)

    return pack(
        inner,
        (carry_variables, broadcast_variables),
        (carry_variables,),
        rng_filters,
        name="while_loop",
        hint=_loop_hint,
        trace_options=dict(
            carry_variables=carry_variables,
            broadcast_variables=broadcast_variables,
            split_rngs=split_rngs,
        ),
        group_labels=["carry", "broadcast"],
        rng_labels=["split" if s else "shared" for s in rng_splits],
    )(scope)


def _may_create(scope_fn: Any, carry_variables: Filter) -> bool:
    """Whether a carry collection is mutable, so the body may create variables."""
    return any(
        not is_filter_empty(intersect_filters(m, carry_variables))
        for m in scope_fn.mutable
    )


def _loop_hint(kind: str, name: str) -> str:
    if kind == "rng":
        return f'Add it to split_rngs, e.g. split_rngs={{"{name}": True}}.'
    return (
        f"Add it to carry_variables (updated each iteration) or broadcast_variables "
        f'(read-only), e.g. carry_variables=["{name}"].'
    )


def _structure_error(
    transform: str, outs: Sequence[Any]
) -> errors.BranchStructureMismatchError | None:
    """The variables the branches create or update differently, or None when
    they agree (the outputs differ: JAX's own error says where)."""

    def paths(groups: Any) -> set[str]:
        found = set()
        for group in groups:
            for root in group:
                for col, tree in root.items():
                    for p, leaf in flatten_vars(tree):
                        found.add(f"{col}:/{'/'.join(p)} {getattr(leaf, 'shape', '')}")
        return found

    base = paths(outs[0])
    lines = []
    for i, o in enumerate(outs[1:], start=1):
        p = paths(o)
        if p != base:
            only0 = sorted(base - p)[:3]
            only_i = sorted(p - base)[:3]
            lines.append(f"branch 0 only: {only0}; branch {i} only: {only_i}")
    if not lines:
        return None
    detail = "\n".join(lines)
    return errors.BranchStructureMismatchError(
        f"{transform} branches must have equal output types but they differ.\n"
        f"The branches of {transform} create or update different variables:\n{detail}\n"
        "Every branch must create and update the same variables; create them in each "
        "branch (or before the branch)."
    )


def _branches(
    transform: str,
    branches: Sequence[Callable[..., Any]],
    select: Callable[..., Any],
    variables: Filter,
    rngs: Filter,
) -> Callable[..., Any]:
    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *operands):
        def wrap(branch: Callable[..., Any]) -> Callable[..., Any]:
            def f(*ops):
                s = scope_fn(variable_groups, rng_groups)
                y = branch(s, *ops)
                return y, repack_fn(s)

            return f

        wrapped = [wrap(b) for b in branches]
        try:
            return select(wrapped, *operands)
        except TypeError as e:
            if (
                "branch" not in str(e)
                and "true_fun" not in str(e)
                and "output" not in str(e)
            ):
                raise
            outs = [jax.eval_shape(w, *operands)[1] for w in wrapped]
            error = _structure_error(transform, outs)
            if error is None:
                raise
            raise error from e

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name=transform,
        hint=filter_hint("variables"),
        trace_options=dict(variables=variables, rngs=rngs, branches=len(branches)),
        group_labels=["all"],
        rng_labels=["shared"],
    )


def cond(
    pred: Any,
    true_fun: Callable[..., Any],
    false_fun: Callable[..., Any],
    scope: Any,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.lax.cond``: ``true_fun(scope, *operands)`` or ``false_fun(...)``.

    Both branches are traced; they must create and update the same variables.

    Raises:
      BranchStructureMismatchError: if the branches' variables differ.
    """
    select = lambda ws, *ops: jax.lax.cond(pred, ws[0], ws[1], *ops)  # noqa: E731
    return _branches("cond", [true_fun, false_fun], select, variables, rngs)(
        scope, *operands
    )


def switch(
    index: Any,
    branches: Sequence[Callable[..., Any]],
    scope: Any,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.lax.switch``: ``branches[index](scope, *operands)``.

    Raises:
      BranchStructureMismatchError: if the branches' variables differ.
    """
    select = lambda ws, *ops: jax.lax.switch(index, ws, *ops)  # noqa: E731
    return _branches("switch", list(branches), select, variables, rngs)(
        scope, *operands
    )
