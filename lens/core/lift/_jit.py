"""``jit`` and ``fold_rngs``: a lifted ``jax.jit`` that does not retrace.

The jitted function is created once per ``lift.jit`` call. Its static argument is a
fingerprint of plain data (the scopes' paths, mutability and flags, and the
caller's hash key, e.g. a hash of the module's fields), so calls with the same
structure and input shapes hit JAX's cache, and the cache holds no scope, module or
variables. As in Flax, the rng streams enter without their path suffix, and the
counter advances made while tracing are replayed on cache hits, so the keys drawn
after the call are the same whether it traced or not.

``fold_rngs`` does the same without compiling: the function sees the streams a
jitted one would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import jax

from lens import _strict, errors
from lens._argnums import argnames, argnums
from lens.core import _trace
from lens.core._filters import Filter, canonical_filter
from lens.core._rng import LazyRng
from lens.core.lift._pack import pack
from lens.core.lift._util import TransformContext, filter_hint


def _clear_suffixes(rng_groups: Any) -> Any:
    return jax.tree_util.tree_map(
        lambda x: x.clear_suffix() if isinstance(x, LazyRng) else x,
        rng_groups,
        is_leaf=lambda x: isinstance(x, LazyRng),
    )


def _static_kwargs(kwargs: dict, named: set[str]) -> tuple[dict, tuple]:
    """Keyword arguments split into (traced, static): non-array values are static."""
    dyn, static = {}, []
    for k, v in sorted(kwargs.items()):
        leaves = jax.tree_util.tree_leaves(v)
        arrays = leaves and all(
            isinstance(x, jax.Array) or hasattr(x, "__array__") for x in leaves
        )
        if k in named or not arrays and _hashable(v):
            static.append((k, v))
        else:
            dyn[k] = v  # arrays, or containers JAX can trace (e.g. a list of floats)
    return dyn, tuple(static)


def _trace_names(fn: Callable[..., Any], n: int) -> list[str]:
    """Names of a module method's ``n`` arguments after ``self``."""
    import inspect

    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ][1:]
    except (TypeError, ValueError):
        params = []
    return (params + [f"args[{i}]" for i in range(len(params), n)])[:n]


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


class _SideEffects:
    """The rng counter advances each traced fingerprint made, replayed on hits."""

    def __init__(self) -> None:
        self.after: dict[Any, tuple[Any, ...]] = {}

    def record(self, key: Any, roots: list[Any]) -> None:
        self.after[key] = tuple(r.rng_counters.snapshot() for r in roots)

    def replay(self, key: Any, roots: list[Any]) -> None:
        snaps = self.after.get(key)
        if snaps is not None:
            for r, snap in zip(roots, snaps):
                r.rng_counters.restore(snap)


def _lifted(
    fn: Callable[..., Any],
    variables: Filter,
    rngs: Filter,
    name: str,
    call: Callable[..., Any],
    trace_options: dict[str, Any],
) -> Callable[..., Any]:
    """The pack shared by ``jit`` and ``fold_rngs``; ``call`` runs the traced body."""
    context: TransformContext[tuple[Any, Any]] = TransformContext()
    effects = _SideEffects()

    def body(
        fingerprint: Any, variable_groups: Any, rng_groups: Any, *args: Any, **kw: Any
    ) -> Any:
        scope_fn, repack_fn = context.get()
        static_kwargs = dict(fingerprint[2])
        scope = scope_fn(variable_groups, rng_groups)
        y = fn(scope, fingerprint[1], *args, **kw, **static_kwargs)
        out = repack_fn(scope)
        effects.record(fingerprint, scope_fn.roots)
        return y, out

    def describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``body``'s arguments as the user wrote the call, for lens.recompiles:
        ("nn.jit", the user's function, {name: value}, names of the static ones)."""
        fingerprint, variable_groups, _, *rest = args
        (structure, mutable, counters), hash_key, static_kwargs = fingerprint
        user_fn = getattr(fn, "__wrapped__", fn)
        named: dict[str, Any] = {"self": getattr(hash_key, "module", hash_key)}
        for group in variable_groups:  # per group, one {collection: tree} per scope
            for j, collections in enumerate(group):
                suffix = f" of scope {j}" if len(group) > 1 else ""
                named.update({f"{c}{suffix}": t for c, t in collections.items()})
        names = _trace_names(user_fn, len(rest))
        named.update(zip(names, rest))
        named.update(kwargs)
        named.update(static_kwargs)
        flags = dict(kv for root in structure[-1] for kv in root)
        named["initializing"] = bool(flags.get("initializing", False))
        named["scope structure"] = structure
        named["mutable collections"] = mutable
        named["rng counters"] = counters
        statics = {k for k, _ in static_kwargs} | {
            "initializing",
            "scope structure",
            "mutable collections",
            "rng counters",
        }
        return "nn.jit", user_fn, named, statics

    body.__lens_describe_trace__ = describe  # type: ignore[attr-defined]

    def inner(
        scope_fn,
        repack_fn,
        variable_groups,
        rng_groups,
        module_hash_key,
        *args,
        **kwargs,
    ):
        roots = scope_fn.roots
        before = tuple(r.rng_counters.snapshot() for r in roots)
        dyn_kwargs, static_kwargs = _static_kwargs(
            kwargs, set(trace_options["static_argnames"])
        )
        # Paths are left out: inside, keys do not depend on them (the streams
        # enter without suffix), so one trace serves a module at any path.
        fingerprint = (
            (
                scope_fn.structure,
                tuple(canonical_filter(m) for m in scope_fn.mutable),
                before,
            ),
            module_hash_key,
            static_kwargs,
        )
        traced_before = fingerprint in effects.after
        with context.push((scope_fn, repack_fn)):
            y, out = call(
                body,
                fingerprint,
                variable_groups,
                _clear_suffixes(rng_groups),
                *args,
                **dyn_kwargs,
            )
        if traced_before and not _trace.active():
            effects.replay(fingerprint, roots)
        return y, out

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name=name,
        enable_kwargs=True,
        hint=filter_hint("variables"),
        trace_options=trace_options,
        group_labels=["all"],
        rng_labels=["shared"],
    )


def jit(
    fn: Callable[..., Any],
    variables: Filter = True,
    rngs: Filter = True,
    static_argnums: int | Iterable[int] = (),
    static_argnames: str | Iterable[str] = (),
    donate_argnums: int | Iterable[int] = (),
    device: Any = None,
    backend: str | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.jit`` of ``fn(scope, hash_key, *args, **kwargs)``.

    Args:
      fn: the function; its first argument is a scope, its second a hashable key
        that tells calls apart (``nn.jit`` passes a hash of the module).
      variables, rngs: the collections and rng streams visible inside.
      static_argnums: positions of static arguments, counting the scope as 0 (the
        hash key is not counted).
      static_argnames: names of static keyword arguments (keyword arguments whose
        values are not arrays are static anyway).
      donate_argnums: positions (same counting) of arguments whose buffers may be
        reused for outputs.
      device, backend: passed to ``jax.jit``.

    Calls with the same scope structure, hash key, static arguments and input
    shapes do not retrace.
    """
    static_argnums = tuple(i + 2 for i in argnums(static_argnums) if i > 0)
    donate_argnums = tuple(i + 2 for i in argnums(donate_argnums) if i > 0)
    static_argnames = argnames(static_argnames)
    jit_kwargs: dict[str, Any] = dict(
        static_argnums=(0,) + static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
    )
    if device is not None:
        jit_kwargs["device"] = device
    if backend is not None:
        jit_kwargs["backend"] = backend
    cache: dict[str, Any] = {}

    def call(body: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # the body takes (hash key, variables, *the user's arguments after the
        # scope/module): JAX cannot check its *args against the argnums, and
        # Flax ignores argnums past the arguments. Strict mode checks them,
        # counting as the user does (the scope/module is 0); a call with
        # keywords may pass the argument by name
        for what, nums in (
            ("static_argnums", static_argnums),
            ("donate_argnums", donate_argnums),
        ):
            if _strict.enabled() and not kwargs and any(i >= len(args) for i in nums):
                raise errors.JitArgnumsError(
                    what, tuple(i - 2 for i in nums), len(args) - 2
                )
        if _trace.active():  # trace again so that nested packs are recorded
            return jax.jit(body, **jit_kwargs)(*args, **kwargs)
        jitted = cache.get("jitted")
        if jitted is None:
            jitted = cache["jitted"] = jax.jit(body, **jit_kwargs)
        return jitted(*args, **kwargs)

    return _lifted(
        fn,
        variables,
        rngs,
        "jit",
        call,
        dict(
            variables=variables,
            rngs=rngs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
        ),
    )


def fold_rngs(
    fn: Callable[..., Any], variables: Filter = True, rngs: Filter = True
) -> Callable[..., Any]:
    """``fn(scope, hash_key, *args)`` run with the rng streams a ``jit`` would see.

    ``nn.fold_rngs(Module)`` draws the same random numbers as ``nn.jit(Module)``
    without compiling.
    """

    def call(body: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return body(*args, **kwargs)

    return _lifted(
        fn,
        variables,
        rngs,
        "fold_rngs",
        call,
        dict(variables=variables, rngs=rngs, static_argnames=()),
    )
