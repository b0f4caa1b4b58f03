"""``checkpoint`` (``remat``): recompute the function's activations on the backward pass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def checkpoint(
    fn: Callable[..., Any],
    variables: Filter = True,
    rngs: Filter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.checkpoint``: ``fn(scope, *args)`` is rematerialised.

    Args:
      fn: the function; its first argument is a scope.
      variables: the collections visible inside.
      rngs: the rng streams visible inside.
      concrete: unused, kept for Flax compatibility.
      prevent_cse, policy: as in ``jax.checkpoint``.
      static_argnums: positions (counting the scope as 0) of arguments that are
        Python values rather than arrays (e.g. a ``train`` flag).
    """
    del concrete
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static = tuple(static_argnums)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        positions = {i - 1 for i in static}
        static_vals = {i: a for i, a in enumerate(args) if i in positions}
        dyn = tuple(a for i, a in enumerate(args) if i not in positions)

        def merge(dyn_args: tuple) -> list:
            it = iter(dyn_args)
            return [
                static_vals[i] if i in positions else next(it) for i in range(len(args))
            ]

        def body(variable_groups, rng_groups, dyn_args):
            scope = scope_fn(variable_groups, rng_groups)
            y = fn(scope, *merge(dyn_args), **kwargs)
            return y, repack_fn(scope)

        rematted = jax.checkpoint(body, prevent_cse=prevent_cse, policy=policy)
        return rematted(variable_groups, rng_groups, dyn)

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name="remat",
        hint=filter_hint("variables"),
        trace_options=dict(
            variables=variables,
            rngs=rngs,
            prevent_cse=prevent_cse,
            static_argnums=static,
            policy=policy,
        ),
        group_labels=["all"],
        rng_labels=["shared"],
    )


remat = checkpoint
