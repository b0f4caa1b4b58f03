"""Differentiation over objects (flax.nnx's ``transforms.autodiff``): ``grad``,
``value_and_grad``, ``vjp``, ``jvp`` and ``remat`` (``custom_vjp`` is in
:mod:`lens.nnx._transforms.custom_gradients`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._argnums import argnums, combine, out_of_range, partition
from lens._facades import show_at_flax_paths
from lens.nnx._graph.ops import graphdef, merge
from lens.nnx._graph.walk import Walker, path_str
from lens.nnx._objects.object import Pytree
from lens.nnx._transforms.cotangents import (
    aval,
    cotangent_like,
    per_arg_states,
    values_from,
)
from lens.nnx._transforms.modes import (
    active_mode,
    check_graph_flags,
    check_prefix,
    transform_mode,
    with_calling_conventions,
)
from lens.nnx._transforms.pack_trace import Picture
from lens.nnx._transforms.recipe import (
    apply_graph_updates,
    call_changing,
    changed_structure,
    diff_resolver,
    lift_args,
    merge_outputs,
    pure_of,
    rebuild,
    split_all,
    split_args,
    split_outputs,
    write_back,
)
from lens.nnx._transforms.specs import (
    Carrier,
    DiffSpec,
    DiffState,
    Entry,
    GraphArg,
    Skeleton,
    wrap_objects,
)
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Param, Variable
from lens.nnx.tracers import frame
from lens.traceback_util import api_boundary

# A plain int argnum: an object's Params, but every variable of a pytree argument
# (a State of perturbations, as flax.nnx does).
_PARAMS_OF_OBJECTS = "params of objects"


def _normalize_argnums(argnums: Any) -> tuple[list[tuple[int, Any]], bool]:
    single = isinstance(argnums, int | DiffState)
    items = [argnums] if single else list(argnums)
    out = []
    for a in items:
        if isinstance(a, DiffState):
            out.append((a.argnum, a.filter))
        elif isinstance(a, int):
            out.append((a, _PARAMS_OF_OBJECTS))
        else:
            raise TypeError(f"argnums entries are ints or DiffState, got {a!r}.")
    return out, single


def _filter_for(f: Any, arg: Any) -> Any:
    if f is _PARAMS_OF_OBJECTS:
        return Param if isinstance(arg, Pytree) else ...
    return f


def _describe_grad(spec: Any) -> str:
    return "no gradient" if spec is None else repr(spec)


def value_and_grad(
    f: Callable[..., Any] | None = None,
    *,
    argnums: Any = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence[Any] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.value_and_grad`` for functions of objects.

    An object argument is differentiated with respect to its ``Param`` variables (or
    ``DiffState(argnum, filter)``'s); its gradient is a :class:`State` of them.
    Other updates the function makes to argument objects (batch statistics, RNG
    counters) come back into them.
    """
    mode = transform_mode("value_and_grad", f, graph, graph_updates)
    if f is None:
        return functools.partial(
            value_and_grad,
            argnums=argnums,
            has_aux=has_aux,
            holomorphic=holomorphic,
            allow_int=allow_int,
            reduce_axes=reduce_axes,
            graph=graph,
            graph_updates=graph_updates,
        )
    if reduce_axes:
        raise TypeError(
            f"nnx.value_and_grad(reduce_axes={tuple(reduce_axes)!r}): JAX removed "
            "reduce_axes from its transforms.\nReduce the loss over those axes "
            "yourself (e.g. jax.lax.psum inside shard_map)."
        )
    check_prefix(argnums, "argnums", dataclasses.replace(mode, name="grad"))
    diff, single = _normalize_argnums(argnums)
    diff_of = dict(diff)

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        _check_argnums(diff_of, len(args))
        specs = tuple(
            DiffSpec(... if mode.simple else _filter_for(diff_of[i], args[i]))
            if i in diff_of
            else None
            for i in range(len(args))
        )
        walker = Walker(diff_resolver, describe=_describe_grad, transform="grad")
        skel, entries = split_args(args, specs, walker)
        held = [e.spec is None for e in entries]  # not differentiated
        diff_vals, rest_vals = partition([e.value for e in entries], held)

        pure = _grad_body(f, skel, specs, held, has_aux)

        with Picture("grad", {"argnums": argnums, "has_aux": has_aux}, f) as picture:
            picture.inputs(
                entries,
                ["constant" if h else "differentiated" for h in held],
                lambda e, v: v,
            )
            (value, (new_graph, aux_out, changed)), grads = jax.value_and_grad(
                pure,
                argnums=0,
                has_aux=True,
                holomorphic=holomorphic,
                allow_int=allow_int,
            )(diff_vals, Carrier(rest_vals, None))
        nodes = apply_graph_updates(entries, new_graph, changed.aux, walker.nodes)
        if changed.aux is None:
            picture.outputs(new_graph)
        aux = merge_outputs(aux_out, nodes)
        grad_of = combine(grads, [None] * sum(held), held)
        g = _grads_of(mode.simple, args, skel, entries, grad_of, diff)
        g = g[0] if single else tuple(g)
        return ((value, aux), g) if has_aux else (value, g)

    return with_calling_conventions(mode, f, wrapper)


def _grads_of(
    simple: bool, args: tuple, skel: Any, entries: list, grad_of: list, diff: Any
) -> list[Any]:
    """The gradient of each differentiated argument: shaped as the argument in
    flax.nnx's simple modes, a State of its differentiated Variables otherwise."""
    if not simple:
        return [_arg_grads(args, skel, entries, grad_of, i) for i, _ in diff]
    shaped = rebuild(
        skel, [e.value if g is None else g for e, g in zip(entries, grad_of)]
    )
    return [shaped[i] for i, _ in diff]


def _check_argnums(diff_of: dict[int, Any], n_args: int) -> None:
    if diff_of and max(diff_of) >= n_args:
        n = max(diff_of)
        raise TypeError(  # JAX's class and first sentence
            f"differentiating with respect to argnums={n} requires at least "
            f"{n + 1} positional arguments to be passed by the caller, but got "
            f"only {n_args} positional arguments.\nnnx.grad: argnums count "
            "from 0; pass the missing arguments or a smaller argnums."
        )


def _grad_body(
    f: Callable[..., Any],
    skel: Any,
    specs: tuple[Any, ...],
    held: list[bool],
    has_aux: bool,
) -> Callable[[list[Any], Carrier], Any]:
    """The pure function ``jax.value_and_grad`` differentiates: the differentiated
    values in, ``(value, (new graph values, aux, changed structure))`` out."""

    def pure(diff_vals: list[Any], rest: Carrier) -> Any:
        merged = combine(diff_vals, rest.values, held)
        table: dict[int, Any] = {}
        with frame("grad") as fr:
            args2 = rebuild(skel, merged, table)
            out = f(*args2)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise TypeError(
                        "nnx.grad(has_aux=True): the function must return (value, aux)."
                    )
                value, aux = out
            else:
                value, aux = out, None
            w2 = Walker(diff_resolver, describe=_describe_grad, transform="grad")
            after, new_entries = split_args(args2, specs, w2)
            changed = changed_structure(skel, after, table, w2.nodes)
            w2.frame = fr
            w2.free_outputs = True  # flax.nnx returns an argument in aux as itself
            aux_out = split_outputs(aux, None, w2)
        new_graph = [e.value for e in new_entries if e.leaf is not None]
        return value, (new_graph, aux_out, Carrier([], changed))

    return pure


def _arg_grads(
    args: tuple, skel: Skeleton, entries: list[Entry], grad_of: list[Any], i: int
) -> Any:
    """Argument ``i``'s gradient: its pytree, each object replaced by a State."""
    n_before = len(
        jax.tree.leaves(
            wrap_objects(args[:i]), is_leaf=lambda x: isinstance(x, GraphArg)
        )
    )
    wrapped = wrap_objects(args[i])
    leaves, treedef = jax.tree.flatten(
        wrapped, is_leaf=lambda x: isinstance(x, GraphArg)
    )
    out = []
    for j, leaf in enumerate(leaves):
        slot = n_before + j
        mine = [(e, g) for e, g in zip(entries, grad_of, strict=True) if e.slot == slot]
        if isinstance(leaf, GraphArg):
            root = skel.root_of(slot)
            flat = {
                e.leaf.path[len(root) :]: (
                    e.leaf.variable.replace(g) if e.leaf.variable is not None else g
                )
                for e, g in mine
                if g is not None and e.leaf is not None  # graph slots hold leaves
            }
            if isinstance(leaf.node, Variable) and () in flat:  # in a pytree
                out.append(flat[()])
            elif isinstance(leaf.node, Variable):  # met before: empty, as flax's
                out.append(None if mine else State.from_flat_state({}))
            else:
                out.append(State.from_flat_state(flat))
        else:
            out.append(mine[0][1] if mine else None)
    return jax.tree.unflatten(treedef, out)


def grad(
    f: Callable[..., Any] | None = None,
    *,
    argnums: Any = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence[Any] = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.grad`` for functions of objects (see :func:`value_and_grad`)."""
    transform_mode("grad", f, graph, graph_updates)
    if f is None:
        return functools.partial(
            grad,
            argnums=argnums,
            has_aux=has_aux,
            holomorphic=holomorphic,
            allow_int=allow_int,
            reduce_axes=reduce_axes,
            graph=graph,
            graph_updates=graph_updates,
        )
    vg = value_and_grad(
        f,
        argnums=argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
        allow_int=allow_int,
        reduce_axes=reduce_axes,
        graph=graph,
        graph_updates=graph_updates,
    )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        value_aux, g = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g

    return wrapper


def remat(
    f: Callable[..., Any] | None = None,
    *,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.checkpoint`` for functions of objects: activations are recomputed in
    the backward pass; updates to argument objects come back."""
    mode = transform_mode("remat", f, graph, graph_updates)
    if f is None:
        return functools.partial(
            remat,
            prevent_cse=prevent_cse,
            static_argnums=static_argnums,
            policy=policy,
            graph=graph,
            graph_updates=graph_updates,
        )
    static = frozenset(argnums(static_argnums, "nnx.remat: static_argnums"))

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        if out_of_range(static, len(args)):
            raise ValueError(  # jax.checkpoint's words, then lens's
                "the `static_argnums` argument to `jax.checkpoint` / `jax.remat` "
                "can only take integer values greater than or equal to `-len(args)` "
                f"and less than `len(args)`, but got {tuple(sorted(static))}, while "
                f"`len(args)` = {len(args)}\nnnx.remat: the function was called "
                f"with {len(args)} positional arguments; count static_argnums "
                "among them."
            )
        stat = frozenset(i % len(args) for i in static)
        skel, entries, walker = lift_args("remat", args, stat)

        def pure(values: list[Any]) -> Any:
            return call_changing("remat", f, skel, values, len(args), stat)

        with Picture("remat", {"static_argnums": tuple(sorted(static))}, f) as picture:
            picture.whole(entries, "all")
            new, outs, changed = jax.checkpoint(
                pure, prevent_cse=prevent_cse, policy=policy
            )([e.value for e in entries])
        nodes = apply_graph_updates(entries, new, changed.aux, walker.nodes)
        picture.outputs(new)
        return merge_outputs(outs, nodes)

    return with_calling_conventions(mode, f, wrapper)


checkpoint = remat


@api_boundary
def vjp(
    f: Callable[..., Any] | None = None,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: Any = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.vjp`` for functions of objects: ``out, vjp_fn = nnx.vjp(f, m, x)``;
    ``vjp_fn(out_ct)`` gives one cotangent per primal (for an object, an object of its
    type whose variables hold the cotangents, as flax.nnx gives it).

    flax.nnx runs vjp in tree mode only (``graph=False``) and returns objects
    there; lens returns States (read them by key or attribute), in either mode."""
    mode = check_graph_flags("vjp", graph, graph_updates)
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    if f is None:
        return functools.partial(vjp, has_aux=has_aux, graph=graph)
    if not primals:  # used as a decorator: nnx.vjp(f)(m, x)
        return functools.partial(vjp, f, has_aux=has_aux, graph=graph)
    with active_mode(mode):
        return _vjp(f, primals, has_aux)


def _object_shaped(primal: Any, cotangent: Any) -> Any:
    """An object argument's cotangent as flax.nnx gives it: an object of the
    argument's type whose variables hold the cotangents."""
    if not isinstance(primal, Pytree) or not isinstance(cotangent, State):
        return cotangent
    try:
        return merge(graphdef(primal), cotangent)
    except Exception:  # noqa: BLE001 - a partial cotangent stays a State
        return cotangent


def _vjp(f: Callable[..., Any], primals: tuple, has_aux: bool) -> Any:
    n = len(primals)
    skel, entries, walker = split_all(primals, "vjp")
    pure = pure_of(f, skel, entries, n, "vjp")

    def split_aux(values: list[Any]) -> Any:
        out_c, new_graph = pure(values)
        if has_aux:
            out, aux = out_c
            return out, (aux, new_graph)
        return out_c, (None, new_graph)

    values = [e.value for e in entries]
    with Picture("vjp", {"has_aux": has_aux}) as picture:
        picture.whole(entries, "differentiated")
        out, vjp_values, (aux, new_graph) = jax.vjp(split_aux, values, has_aux=True)
    write_back(entries, new_graph)
    picture.outputs(new_graph)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        (cts,) = vjp_values(ct)
        states = per_arg_states(primals, skel, entries, cts)
        return tuple(_object_shaped(p, s) for p, s in zip(primals, states))

    out = merge_outputs(out, walker.nodes)
    if has_aux:
        return out, vjp_fn, merge_outputs(aux, walker.nodes)
    return out, vjp_fn


@api_boundary
def jvp(
    f: Callable[..., Any] | None = None,
    primals: tuple | None = None,
    tangents: tuple | None = None,
    *,
    has_aux: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.jvp`` for functions of objects: ``out, out_t = nnx.jvp(f, (m, x),
    (m_t, x_t))`` where an object's tangent is a State of its variables' tangents
    (``jax.tree.map(jnp.ones_like, nnx.state(m))``); a missing entry is zero."""
    mode = check_graph_flags("jvp", graph, graph_updates)
    if f is None:
        return functools.partial(jvp, has_aux=has_aux, graph=graph)
    if primals is None or tangents is None:
        return lambda p, t: jvp(f, p, t, has_aux=has_aux, graph=graph)
    with active_mode(mode):
        return _jvp(f, tuple(primals), tuple(tangents), has_aux)


def _jvp(f: Callable[..., Any], primals: tuple, tangents: tuple, has_aux: bool) -> Any:
    if len(primals) != len(tangents):
        raise ValueError(
            f"nnx.jvp: {len(primals)} primals but {len(tangents)} tangents; give "
            "one tangent per primal."
        )
    n = len(primals)
    skel, entries, walker = split_all(primals, "jvp")
    pure = pure_of(f, skel, entries, n, "jvp")
    tangent_values: list[Any] = []
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        mine = [e for e in entries if e.arg == i]
        vals = values_from(p, t, skel, mine, "nnx.jvp")
        for e, v in zip(mine, vals, strict=True):
            where = path_str(e.leaf.path) if e.leaf is not None else f"argument {i}"
            if v is not None and jnp.shape(getattr(v, "value", v)) != jnp.shape(
                e.value
            ):
                raise ValueError(
                    f"nnx.jvp: the tangent of {where} has shape "
                    f"{jnp.shape(getattr(v, 'value', v))}, its primal "
                    f"{jnp.shape(e.value)}."
                )
            tangent_values.append(cotangent_like(aval(e.value), v))
    values = [e.value for e in entries]

    def main(values: list[Any]) -> Any:
        out_c, new_graph = pure(values)
        out, aux = out_c if has_aux else (out_c, None)
        return out, (aux, new_graph)

    with Picture("jvp", {"has_aux": has_aux}) as picture:
        picture.whole(entries, "tangent")
        out, out_t, (aux, new_graph) = jax.jvp(
            main, (values,), (tangent_values,), has_aux=True
        )
    write_back(entries, new_graph)
    picture.outputs(new_graph)
    out = merge_outputs(out, walker.nodes)
    if has_aux:
        return out, out_t, merge_outputs(aux, walker.nodes)
    return out, out_t


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
