"""``lazy_init``: run an init function on input shapes, computing only what it can.

The function is traced with the ``jax.ShapeDtypeStruct`` arguments as abstract
inputs. Every equation of the trace that does not depend on one of them is
evaluated; the others (the forward pass on the data) are skipped. An output that
depends on an abstract input raises :class:`~lens.errors.LazyInitError`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import jax
from jax.extend import core as jex_core

from lens import errors
from lens._facades import show_at_flax_paths


def _read(env: dict[Any, Any], v: Any) -> Any:
    if isinstance(v, jex_core.Literal):
        return v.val
    return env[v]


def _eval_known(jaxpr: Any, consts: list[Any], unknown: set[Any]) -> dict[Any, Any]:
    """Evaluates the equations that depend on no variable in ``unknown``."""
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
    for eqn in jaxpr.eqns:
        if any(
            not isinstance(v, jex_core.Literal) and v in unknown for v in eqn.invars
        ):
            unknown.update(eqn.outvars)
            continue
        bind = eqn.primitive.get_bind_params(eqn.params)
        # Older JAX returns (subfuns, params), newer the params only.
        subfuns, params = bind if isinstance(bind, tuple) else ((), bind)
        ctx = getattr(getattr(eqn, "ctx", None), "manager", None)
        with ctx if ctx is not None else contextlib.nullcontext():
            out = eqn.primitive.bind(
                *subfuns, *(_read(env, v) for v in eqn.invars), **params
            )
        if not eqn.primitive.multiple_results:
            out = [out]
        env.update(zip(eqn.outvars, out))
    return env


def lazy_init(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps ``fn(*args, **kwargs)`` so ``ShapeDtypeStruct`` arguments cost nothing.

    Raises:
      LazyInitError: an output depends on an argument given only by its shape.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten(args)
        abstract = [
            i for i, x in enumerate(leaves) if isinstance(x, jax.ShapeDtypeStruct)
        ]

        def f(*unknown: Any) -> Any:
            full = list(leaves)
            for i, x in zip(abstract, unknown):
                full[i] = x
            return fn(*jax.tree_util.tree_unflatten(treedef, full), **kwargs)

        closed, out_shape = jax.make_jaxpr(f, return_shape=True)(
            *(leaves[i] for i in abstract)
        )
        jaxpr = closed.jaxpr
        unknown = set(jaxpr.invars)
        env = _eval_known(jaxpr, closed.consts, unknown)
        out_leaves = []
        for v, shape in zip(jaxpr.outvars, jax.tree_util.tree_leaves(out_shape)):
            if not isinstance(v, jex_core.Literal) and v in unknown:
                raise errors.LazyInitError(shape)
            out_leaves.append(_read(env, v))
        return jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(out_shape), out_leaves
        )

    return wrapper


show_at_flax_paths(__name__)
