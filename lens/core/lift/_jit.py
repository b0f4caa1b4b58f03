"""``jit``: a lifted ``jax.jit`` that does not retrace for the same scope structure.

The jitted function is created once per lifted function. The scope structure (paths,
mutability, rng counter state) is a static argument, so calls with the same structure
and input shapes hit JAX's cache. Rng counters advanced while tracing are replayed on
cache hits, so keys drawn after the call are the same with or without a retrace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from lens.core import _trace
from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


class _Static:
    """Hashable holder of the static call information (compared by ``key``)."""

    __slots__ = ("key", "scope_fn", "repack_fn", "static_args", "kwargs")

    def __init__(
        self, key: Any, scope_fn: Any, repack_fn: Any, static_args: dict, kwargs: dict
    ):
        self.key = key
        self.scope_fn = scope_fn
        self.repack_fn = repack_fn
        self.static_args = static_args
        self.kwargs = kwargs

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and other.key == self.key


def _split_kwargs(kwargs: dict) -> tuple[dict, tuple]:
    dyn, static = {}, []
    for k, v in sorted(kwargs.items()):
        leaves = jax.tree_util.tree_leaves(v)
        if leaves and all(
            isinstance(x, jax.Array | jax.core.Tracer) or hasattr(x, "__array__")
            for x in leaves
        ):
            dyn[k] = v
        else:
            static.append((k, v))
    return dyn, tuple(static)


def jit(
    fn: Callable[..., Any],
    variables: Filter = True,
    rngs: Filter = True,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    device: Any = None,
    backend: str | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.jit`` of ``fn(scope, *args, **kwargs)``.

    Args:
      fn: the function; its first argument is a scope.
      variables, rngs: the collections and rng streams visible inside.
      static_argnums: positions of static arguments, counting the scope as 0.
      static_argnames: names of static keyword arguments (keyword arguments whose
        values are not arrays are always static).
      donate_argnums: positions (scope = 0) of arguments whose buffers may be reused.
      device, backend: unused, kept for Flax compatibility.

    Calls with the same scope structure, static arguments and input shapes do not
    retrace.
    """
    del device, backend
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    static_pos = {i - 1 for i in static_argnums}
    static_names = set(static_argnames)
    # JAX positions of the traced function: (static, variable_groups, rng_groups, *dyn)
    after: dict[Any, tuple] = {}

    def call(static: _Static, variable_groups, rng_groups, dyn_args, dyn_kwargs):
        it = iter(dyn_args)
        n = len(dyn_args) + len(static.static_args)
        args = [
            static.static_args[i] if i in static.static_args else next(it)
            for i in range(n)
        ]
        scope = static.scope_fn(variable_groups, rng_groups)
        y = fn(scope, *args, **dyn_kwargs, **static.kwargs)
        out = static.repack_fn(scope)
        after[static.key] = tuple(r._counters.snapshot() for r in static.scope_fn.roots)
        return y, out

    jitted_cache: dict[tuple, Callable[..., Any]] = {}

    def jitted_for(donate: tuple) -> Callable[..., Any]:
        j = jitted_cache.get(donate)
        if j is None:
            j = jitted_cache[donate] = jax.jit(
                call, static_argnums=(0,), donate_argnums=donate
            )
        return j

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        static_args = {i: a for i, a in enumerate(args) if i in static_pos}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        named_static = {k: v for k, v in kwargs.items() if k in static_names}
        dyn_kwargs, other_static = _split_kwargs(
            {k: v for k, v in kwargs.items() if k not in static_names}
        )
        static_kwargs = dict(named_static, **dict(other_static))
        roots = scope_fn.roots
        before = tuple(r._counters.snapshot() for r in roots)
        key = (
            scope_fn.signature,
            repack_fn.signature,
            before,
            tuple(sorted(static_args.items())),
            tuple(sorted(static_kwargs.items())),
            len(dyn_args),
        )
        static = _Static(key, scope_fn, repack_fn, static_args, static_kwargs)
        donate = tuple(
            2 + sum(1 for j in range(i - 1) if j not in static_pos)
            for i in donate_argnums
            if (i - 1) not in static_pos
        )
        j = jitted_for(donate)
        if _trace._ACTIVE:  # trace again so that nested packs are recorded
            j = jax.jit(call, static_argnums=(0,), donate_argnums=donate)
        y, out = j(static, variable_groups, rng_groups, dyn_args, dyn_kwargs)
        snaps = after.get(key)
        if snaps is not None:
            for r, snap in zip(roots, snaps):
                r._counters.restore(snap)
        return y, out

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name="jit",
        hint=filter_hint("variables"),
        trace_options=dict(
            variables=variables,
            rngs=rngs,
            static_argnums=tuple(static_argnums),
            static_argnames=tuple(static_argnames),
            donate_argnums=tuple(donate_argnums),
        ),
        group_labels=["all"],
        rng_labels=["shared"],
    )
