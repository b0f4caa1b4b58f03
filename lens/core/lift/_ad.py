"""Automatic differentiation through scopes: ``jvp``, ``vjp``, ``value_and_grad``.

As in Flax: ``vjp`` differentiates the ``vjp_variables`` collections and the
primals; ``value_and_grad`` the primals only; ``jvp`` pushes tangents through the
collections given in ``variable_tangents`` and the primals. Other collections are
visible but get no tangent; variables mutated inside come back as auxiliary output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def _bwd_wrapper(treedef: Any, bwd_fn: Any, tangent: Any) -> tuple:
    vars_grad, *inputs_grad = bwd_fn(tangent)
    return (treedef.unflatten(vars_grad), *inputs_grad)


def vjp(
    fn: Callable[..., Any],
    scope: Any,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: Any = (),
    vjp_variables: Filter = "params",
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, ...]:
    """A lifted ``jax.vjp`` of ``fn(scope, *primals)``.

    Args:
      fn: the function; its first argument is a scope.
      scope: the scope (or a tree of scopes) to lift.
      *primals: the arguments to differentiate.
      has_aux: ``fn`` returns ``(y, aux)``.
      reduce_axes: deprecated in JAX; must be empty.
      vjp_variables: the collections that receive cotangents.
      variables, rngs: other collections and streams visible inside.

    Returns:
      ``(y, vjp_fn)`` or ``(y, vjp_fn, aux)``; ``vjp_fn(y_cotangent)`` returns
      ``(variables_grad, *primals_grad)`` where ``variables_grad`` has the
      structure of ``scope`` (``{collection: tree}`` for one scope).

    Example:
        >>> import jax.numpy as jnp
        >>> from lens.core import init, apply
        >>> def learn_scale(scope, x):
        ...     return scope.param("scale", lambda k: jnp.ones(()), ) * x
        >>> def f(scope, x):
        ...     y, bwd = vjp(learn_scale, scope, x)
        ...     return bwd(jnp.ones_like(y))
        >>> _, v = init(f)(jax.random.key(0), jnp.arange(3.0))
        >>> params_grad, x_grad = apply(f)(v, jnp.arange(3.0))
        >>> float(params_grad["params"]["scale"])
        3.0
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        vjp_vars, other_vars = variable_groups

        @functools.wraps(fn)
        def wrapper(vjp_vars, *args):
            s = scope_fn((vjp_vars, other_vars), rng_groups)
            if has_aux:
                y, aux = fn(s, *args)
            else:
                y, aux = fn(s, *args), ()
            return y, (aux, repack_fn(s))

        y, bwd, (aux, out_vars) = jax.vjp(wrapper, vjp_vars, *args, has_aux=True)
        treedef = jax.tree_util.tree_structure(
            scope, is_leaf=lambda x: hasattr(x, "make_rng")
        )
        # A pytree (like jax.vjp's own), so it can be a custom_vjp residual.
        bwd = jax.tree_util.Partial(functools.partial(_bwd_wrapper, treedef), bwd)
        return ((y, bwd, aux) if has_aux else (y, bwd)), out_vars

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
    reduce_axes: Any = (),
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, ...]:
    """A lifted ``jax.value_and_grad`` of ``fn(scope, *primals)`` w.r.t. the primals.

    Returns:
      ``(y, primals_grad)``, or ``(y, aux, primals_grad)`` with ``has_aux``;
      ``primals_grad`` is a tuple, one entry per primal. (For gradients of the
      variables, use :func:`vjp`.)
    """
    if reduce_axes:
        raise NotImplementedError(
            "reduce_axes argument to value_and_grad is deprecated"
        )

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        @functools.wraps(fn)
        def wrapper(*args):
            s = scope_fn(variable_groups, rng_groups)
            if has_aux:
                y, aux = fn(s, *args)
            else:
                y, aux = fn(s, *args), ()
            return y, (aux, repack_fn(s))

        y, bwd, (aux, out_vars) = jax.vjp(wrapper, *args, has_aux=True)
        grads = bwd(jax.numpy.ones_like(y))
        return ((y, aux, grads) if has_aux else (y, grads)), out_vars

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name="value_and_grad",
        hint=filter_hint("variables"),
        trace_options=dict(variables=variables, rngs=rngs, has_aux=has_aux),
        group_labels=["all"],
        rng_labels=["shared"],
    )(scope, *primals)


def jvp(
    fn: Callable[..., Any],
    scope: Any,
    primals: Any,
    tangents: Any,
    variable_tangents: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.jvp`` of ``fn(scope, *primals)``.

    Args:
      fn: the function; its first argument is a scope.
      scope: the scope, or a tree (e.g. a list) of scopes.
      primals, tangents: as in ``jax.jvp`` (tuples).
      variable_tangents: ``{collection: tangent tree}`` for one scope (a tree of
        them, like ``scope``, for several): the collections to push tangents
        through, e.g. ``{"params": params_tangent}``.
      variables, rngs: other collections and streams visible inside.

    Returns:
      ``(y, y_tangent)``.
    """
    is_scope = lambda x: hasattr(x, "make_rng")  # noqa: E731
    treedef = jax.tree_util.tree_structure(scope, is_leaf=is_scope)
    per_scope = treedef.flatten_up_to(variable_tangents)
    # Empty tangent collections are dropped ({"params": {}} is not {}).
    var_t = tuple({k: v for k, v in vt.items() if v} for vt in per_scope)
    target = tuple(var_t[0].keys()) if var_t else ()

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        jvp_vars, other_vars = variable_groups

        @functools.wraps(fn)
        def wrapper(vars_primals, args):
            s = scope_fn((vars_primals, other_vars), rng_groups)
            y = fn(s, *args)
            return y, repack_fn(s)

        (y, out_vars), out_tangents = jax.jvp(
            wrapper, (jvp_vars, tuple(args)), (var_t, tuple(tangents))
        )
        return (y, out_tangents[0]), out_vars

    return pack(
        inner,
        (target, variables),
        (variables,),
        (rngs,),
        name="jvp",
        hint=filter_hint("variables"),
        trace_options=dict(
            variable_tangents=list(target), variables=variables, rngs=rngs
        ),
        group_labels=["tangent", "constant"],
        rng_labels=["shared"],
    )(scope, *primals)
