"""Automatic differentiation through scopes: ``jvp``, ``vjp``, ``value_and_grad``.

The differentiated collections (``'params'`` by default) are inputs of the JAX
transform like the function's arguments; other collections are visible but get no
tangent or cotangent. Variables mutated inside are returned as auxiliary outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax

from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def _one_root(group: tuple) -> Any:
    """Tuple over root scopes -> the single root's dict (the common case)."""
    return group[0] if len(group) == 1 else group


def _per_root(value: Any, n: int) -> tuple:
    return (value,) if n == 1 else tuple(value)


def _bwd(bwd: Any, y_t: Any) -> tuple:
    return tuple(bwd(y_t))


def _single_root_bwd(bwd: Any, y_t: Any) -> tuple:
    var_t, *args_t = bwd(y_t)
    return (var_t[0], *args_t)


def jvp(
    fn: Callable[..., Any],
    scope: Any,
    primals: tuple,
    tangents: tuple,
    variable_tangents: Mapping[str, Any],
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.jvp`` of ``fn(scope, *primals)``.

    Args:
      fn: the function; its first argument is a scope.
      scope: the scope (or a tree of scopes) to lift.
      primals, tangents: as in ``jax.jvp``.
      variable_tangents: ``{collection: tangent tree}`` for the variables to push
        tangents through (e.g. ``{"params": params_tangent}``).
      variables, rngs: other collections and streams visible inside.

    Returns:
      ``(y, y_tangent)``.
    """
    tangent_cols = tuple(variable_tangents.keys())

    def inner(scope_fn, repack_fn, variable_groups, rng_groups):
        jvp_vars, other_vars = variable_groups
        n = len(jvp_vars)

        def f(jvp_vars, *primals):
            s = scope_fn((jvp_vars, other_vars), rng_groups)
            y = fn(s, *primals)
            return y, repack_fn(s)

        var_t = (
            _per_root(dict(variable_tangents), n)
            if n == 1
            else tuple(variable_tangents)
        )
        y, y_t, out_vars = jax.jvp(
            f, (jvp_vars, *primals), (var_t, *tangents), has_aux=True
        )
        return (y, y_t), out_vars

    return pack(
        inner,
        (tangent_cols, variables),
        (variables,),
        (rngs,),
        name="jvp",
        hint=filter_hint("variables"),
        trace_options=dict(
            variable_tangents=list(tangent_cols), variables=variables, rngs=rngs
        ),
        group_labels=["tangent", "constant"],
        rng_labels=["shared"],
    )(scope)


def vjp(
    fn: Callable[..., Any],
    scope: Any,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: tuple = (),
    vjp_variables: Filter = "params",
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, ...]:
    """A lifted ``jax.vjp`` of ``fn(scope, *primals)``.

    Args:
      fn: the function; its first argument is a scope.
      scope: the scope to lift.
      *primals: the arguments to differentiate.
      has_aux: ``fn`` returns ``(y, aux)``.
      reduce_axes: unused, kept for Flax compatibility.
      vjp_variables: the collections that receive cotangents.
      variables, rngs: other collections and streams visible inside.

    Returns:
      ``(y, vjp_fn)`` or ``(y, vjp_fn, aux)``; ``vjp_fn(y_cotangent)`` returns
      ``(variables_grad, *primals_grad)`` where ``variables_grad`` is
      ``{collection: tree}``.
    """
    del reduce_axes

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        vjp_vars, other_vars = variable_groups
        n = len(vjp_vars)

        def f(vjp_vars, *args):
            s = scope_fn((vjp_vars, other_vars), rng_groups)
            if has_aux:
                y, aux = fn(s, *args)
            else:
                y, aux = fn(s, *args), None
            return y, (aux, repack_fn(s))

        y, bwd, (aux, out_vars) = jax.vjp(f, vjp_vars, *args, has_aux=True)
        # A pytree (like jax.vjp's own), so it can be a custom_vjp residual.
        wrapped_bwd = jax.tree_util.Partial(_single_root_bwd if n == 1 else _bwd, bwd)

        res = (y, wrapped_bwd, aux) if has_aux else (y, wrapped_bwd)
        return res, out_vars

    return pack(
        inner,
        (vjp_variables, variables),
        (variables,),
        (rngs,),
        name="vjp",
        hint=filter_hint("variables"),
        trace_options=dict(
            vjp_variables=vjp_variables, variables=variables, rngs=rngs, has_aux=has_aux
        ),
        group_labels=["differentiated", "constant"],
        rng_labels=["shared"],
    )(scope, *primals)


def value_and_grad(
    fn: Callable[..., Any],
    scope: Any,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: tuple = (),
    vjp_variables: Filter = "params",
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.value_and_grad`` of ``fn(scope, *primals)`` (scalar output).

    Returns:
      ``(y, grads)`` or ``((y, aux), grads)``, where ``grads`` is
      ``(variables_grad, *primals_grad)`` and ``variables_grad`` is
      ``{collection: tree}`` for ``vjp_variables``.
    """
    del reduce_axes

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        grad_vars, other_vars = variable_groups
        n = len(grad_vars)

        def f(grad_vars, *args):
            s = scope_fn((grad_vars, other_vars), rng_groups)
            if has_aux:
                y, aux = fn(s, *args)
            else:
                y, aux = fn(s, *args), None
            return y, (aux, repack_fn(s))

        argnums = tuple(range(len(args) + 1))
        (y, (aux, out_vars)), grads = jax.value_and_grad(
            f, argnums=argnums, has_aux=True
        )(grad_vars, *args)
        var_g, *args_g = grads
        grads = (_one_root(var_g) if n == 1 else var_g, *args_g)
        res = ((y, aux), grads) if has_aux else (y, grads)
        return res, out_vars

    return pack(
        inner,
        (vjp_variables, variables),
        (variables,),
        (rngs,),
        name="value_and_grad",
        hint=filter_hint("variables"),
        trace_options=dict(
            vjp_variables=vjp_variables, variables=variables, rngs=rngs, has_aux=has_aux
        ),
        group_labels=["differentiated", "constant"],
        rng_labels=["shared"],
    )(scope, *primals)
