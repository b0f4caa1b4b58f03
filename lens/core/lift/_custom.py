"""``custom_vjp`` and ``custom_jvp``: user-defined derivatives for scoped functions.

The differentiated collections (``grad_vars``, ``'params'`` by default) are explicit
arguments of the JAX custom-derivative function; the other collections and the rng
keys are passed explicitly too (never closed over), with zero cotangents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._argnums import combine, held_mask, partition
from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def _float0_like(tree: Any) -> Any:
    import numpy as np

    def z(x: Any) -> Any:
        dtype = getattr(x, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.inexact):
            return jnp.zeros_like(x)
        return np.zeros(
            np.shape(x) if not hasattr(x, "shape") else x.shape, dtype=jax.dtypes.float0
        )

    return jax.tree_util.tree_map(z, tree)


def custom_vjp(
    fn: Callable[..., Any],
    forward_fn: Callable[..., Any],
    backward_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_vjp``.

    Args:
      fn: ``fn(scope, *args) -> y``.
      forward_fn: ``forward_fn(scope, *args) -> (y, residuals)``.
      backward_fn: ``backward_fn(*nondiff_args, residuals, y_cotangent) ->
        (variables_cotangent, *args_cotangent)`` where ``variables_cotangent`` is
        ``{collection: tree}`` for ``grad_vars`` (what ``vjp``'s ``vjp_fn`` gives).
      grad_vars: the collections that receive cotangents.
      nondiff_argnums: positions (counting the scope as 0) of non-differentiable
        arguments; they are passed first to ``backward_fn``.

    Returns:
      ``wrapper(scope, *args) -> y``.
    """
    nondiff = tuple(nondiff_argnums)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        grad_variables, other_variables = variable_groups
        n = len(grad_variables)
        mask = held_mask(len(args), (i - 1 for i in nondiff))
        diff_args, nd_args = partition(args, mask)
        diff_args = tuple(diff_args)

        def full_args(dargs: tuple) -> list:
            return combine(dargs, nd_args, mask)

        @jax.custom_vjp
        def f(grad_variables, other_variables, rng_groups, dargs):
            s = scope_fn((grad_variables, other_variables), rng_groups)
            y = fn(s, *full_args(dargs))
            return y, repack_fn(s)

        def f_fwd(grad_variables, other_variables, rng_groups, dargs):
            s = scope_fn((grad_variables, other_variables), rng_groups)
            y, res = forward_fn(s, *full_args(dargs))
            out = repack_fn(s)
            return (y, out), (res, other_variables, rng_groups)

        def f_bwd(residuals, g):
            res, other_variables, rng_groups = residuals
            y_t, _ = g
            nd = [args[i - 1] for i in nondiff]
            var_t, *args_t = backward_fn(*nd, res, y_t)
            var_t = (var_t,) if n == 1 else tuple(var_t)
            return (
                var_t,
                _float0_like(other_variables),
                _float0_like(rng_groups),
                tuple(args_t),
            )

        f.defvjp(f_fwd, f_bwd)
        return f(grad_variables, other_variables, rng_groups, diff_args)

    return pack(
        inner,
        (grad_vars, True),
        (True,),
        (True,),
        name="custom_vjp",
        hint=filter_hint("grad_vars"),
        trace_options=dict(grad_vars=grad_vars, nondiff_argnums=nondiff),
        group_labels=["differentiated", "constant"],
        rng_labels=["shared"],
    )


def custom_jvp(
    fn: Callable[..., Any],
    jvp_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_jvp`` (Flax has none).

    Args:
      fn: ``fn(scope, *args) -> y``.
      jvp_fn: ``jvp_fn(scope, primals, tangents, variable_tangents) -> (y, y_dot)``
        where ``primals``/``tangents`` are tuples of the differentiable arguments
        and ``variable_tangents`` is ``{collection: tree}`` for ``grad_vars``.
      grad_vars: the collections that carry tangents.
      nondiff_argnums: positions (scope = 0) of non-differentiable arguments.

    Returns:
      ``wrapper(scope, *args) -> y``.
    """
    nondiff = tuple(nondiff_argnums)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        grad_variables, other_variables = variable_groups
        n = len(grad_variables)
        mask = held_mask(len(args), (i - 1 for i in nondiff))
        diff_args, nd_args = partition(args, mask)
        diff_args = tuple(diff_args)

        def full_args(dargs: tuple) -> list:
            return combine(dargs, nd_args, mask)

        @jax.custom_jvp
        def f(grad_variables, dargs):
            s = scope_fn((grad_variables, other_variables), rng_groups)
            y = fn(s, *full_args(dargs))
            return y, repack_fn(s)

        @f.defjvp
        def f_jvp(primals, tangents):
            gv, dargs = primals
            gv_t, dargs_t = tangents
            s = scope_fn((gv, other_variables), rng_groups)
            var_t = gv_t[0] if n == 1 else gv_t
            y, y_dot = jvp_fn(s, tuple(full_args(dargs)), tuple(dargs_t), var_t)
            out = repack_fn(s)
            return (y, out), (y_dot, _zeros_tangent(out))

        return f(grad_variables, diff_args)

    return pack(
        inner,
        (grad_vars, True),
        (True,),
        (True,),
        name="custom_jvp",
        hint=filter_hint("grad_vars"),
        trace_options=dict(grad_vars=grad_vars, nondiff_argnums=nondiff),
        group_labels=["differentiated", "constant"],
        rng_labels=["shared"],
    )


def _zeros_tangent(tree: Any) -> Any:
    return _float0_like(tree)
