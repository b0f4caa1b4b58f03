"""``nnx.custom_vjp``, ``nnx.vjp`` and ``nnx.jvp``: JAX's autodiff entry points
for functions of objects.

An object argument is differentiated through its variables (all of them, or a
``DiffState`` filter's); its tangent or cotangent is a State with the variables'
paths. Updates the function makes to its arguments come back out, as with the
other lens.nnx transforms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._argnums import combine, partition
from lens.nnx._graph import Object, Walker, check_graph_modes, frame, path_str
from lens.nnx._picture import Picture
from lens.nnx._state import State
from lens.nnx._transforms import (
    DiffState,
    _check_structure,
    _Diff,
    _diff_resolver,
    _Entry,
    _merge_outputs,
    _rebuild,
    _Skeleton,
    _split_inputs,
    _split_outputs,
    _write_back,
)
from lens.traceback_util import api_boundary


def _aval(x: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def _zero_cotangent(a: jax.ShapeDtypeStruct) -> Any:
    if jnp.issubdtype(a.dtype, jnp.inexact):
        return jnp.zeros(a.shape, a.dtype)
    return np.zeros(a.shape, jax.dtypes.float0)


def _cotangent_like(a: jax.ShapeDtypeStruct, ct: Any) -> Any:
    """``ct`` as the (co)tangent of a value of shape/dtype ``a`` (zero if None;
    float0 for an integer value, as JAX wants)."""
    if ct is None or not jnp.issubdtype(a.dtype, jnp.inexact):
        return _zero_cotangent(a)
    return jnp.asarray(getattr(ct, "value", ct), a.dtype)


def _rel(entry: _Entry, skel: _Skeleton) -> tuple:
    assert entry.leaf is not None
    root = skel.slots[entry.slot][2]
    return entry.leaf.path[len(root) :]


def _per_arg_states(
    args: tuple, skel: _Skeleton, entries: list[_Entry], values: list[Any]
) -> list[Any]:
    """Per argument: a State of ``values`` (one per entry) for an object, its
    pytree of them otherwise."""
    out: list[Any] = []
    for i, arg in enumerate(args):
        mine = [(e, v) for e, v in zip(entries, values, strict=True) if e.arg == i]
        if isinstance(arg, Object):
            flat = {
                _rel(e, skel): e.leaf.variable.replace(v)
                if e.leaf is not None and e.leaf.variable is not None
                else v
                for e, v in mine
                if e.leaf is not None
            }
            out.append(State.from_flat_state(flat))
        else:
            leaves, treedef = jax.tree.flatten(arg)
            if len(leaves) == len(mine) and not any(e.leaf for e, _ in mine):
                out.append(jax.tree.unflatten(treedef, [v for _, v in mine]))
            else:
                out.append(None)
    return out


def _values_from(
    arg: Any, tangent: Any, skel: _Skeleton, mine: list[_Entry], what: str
) -> list[Any]:
    """The per-entry values an argument's tangent (a State for an object) gives."""
    if isinstance(arg, Object):
        if tangent is None:
            return [None] * len(mine)
        if not hasattr(tangent, "flat_state"):
            raise TypeError(
                f"{what}: the tangent of an object argument must be a State (as "
                f"nnx.state(model) gives), got {type(tangent).__name__}."
            )
        flat = dict(tangent.flat_state())
        return [flat.get(_rel(e, skel)) for e in mine]
    if tangent is None:
        return [None] * len(mine)
    leaves = jax.tree.leaves(tangent)
    if len(leaves) != len(mine):
        raise ValueError(
            f"{what}: a tangent has {len(leaves)} leaves where its argument has "
            f"{len(mine)}."
        )
    return leaves


class CustomVjp:
    """A function of objects with a custom backward pass (``defvjp``)."""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: tuple = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self.symbolic_zeros = False
        self.int_nondiff = tuple(a for a in nondiff_argnums if isinstance(a, int))
        self.filters: dict[int, Any] = {}
        seen: set[int] = set()
        for a in nondiff_argnums:
            i = a.argnum if isinstance(a, DiffState) else a
            if i in seen:
                raise ValueError(f"argnum {i} is repeated in nondiff_argnums")
            seen.add(i)
            if isinstance(a, DiffState):
                self.filters[i] = a.filter

    def defvjp(
        self,
        fwd: Callable[..., Any],
        bwd: Callable[..., Any],
        symbolic_zeros: bool = False,
    ) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals,
        (input_updates_g, out_g)) -> tangents`` (a State per object argument)."""
        if symbolic_zeros:
            raise NotImplementedError(
                "nnx.custom_vjp(symbolic_zeros=True) is not supported by lens.nnx."
            )
        self.fwd, self.bwd = fwd, bwd

    @api_boundary
    def __call__(self, *args: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise ValueError(
                f"nnx.custom_vjp function {getattr(self.fun, '__name__', self.fun)!r} "
                "has no backward pass.\nCall f.defvjp(f_fwd, f_bwd) before calling it."
            )
        n = len(args)
        specs = tuple(
            None if i in self.int_nondiff else _Diff(self.filters.get(i, ...))
            for i in range(n)
        )
        walker = Walker(_diff_resolver, transform="custom_vjp")
        skel, entries = _split_inputs(args, specs, walker)
        held = [e.spec is None for e in entries]  # not differentiated
        avals = [_aval(e.value) for e in entries]
        diff_vals, rest_vals = partition([e.value for e in entries], held)
        fun, fwd_fn, bwd_fn = self.fun, self.fwd, self.bwd
        int_nondiff = self.int_nondiff
        diff_args = [i for i in range(n) if i not in int_nondiff]

        def merged(dv: list[Any], rv: list[Any]) -> list[Any]:
            return combine(dv, rv, held)

        def run(f: Callable[..., Any], values: list[Any]) -> Any:
            with frame("custom_vjp") as fr:
                args2 = _rebuild(skel, values)
                result = f(*args2)
                w2 = Walker(transform="custom_vjp")
                after, new_entries = _split_inputs(args2, (None,) * n, w2)
                _check_structure(skel, after, "custom_vjp")
                new_vals = [e.value for e in new_entries]
                w2.frame = fr
            return new_vals, result, w2

        @jax.custom_vjp
        def pure(dv: list[Any], rv: list[Any]) -> Any:
            new_vals, out, _ = run(fun, merged(dv, rv))
            return [v for v, e in zip(new_vals, entries, strict=True) if e.leaf], out

        def pure_fwd(dv: list[Any], rv: list[Any]) -> Any:
            new_vals, (out, res), w2 = run(fwd_fn, merged(dv, rv))
            res_c = _split_outputs(res, None, w2)
            graph = [v for v, e in zip(new_vals, entries, strict=True) if e.leaf]
            return (graph, out), (new_vals, res_c)

        def pure_bwd(residual: Any, g: Any) -> Any:
            new_vals, res_c = residual
            graph_g, out_g = g
            table: dict[int, Any] = {}
            args3 = _rebuild(skel, new_vals, table)
            res = _merge_outputs(res_c, [table[i] for i in range(len(table))])
            it = iter(graph_g)
            updates_g = [next(it) if e.leaf else None for e in entries]
            per_arg = _per_arg_states(args, skel, entries, updates_g)
            input_updates_g = tuple(
                per_arg[i] if isinstance(args[i], Object) else None for i in diff_args
            )
            tangents = bwd_fn(
                *(args3[i] for i in int_nondiff), res, (input_updates_g, out_g)
            )
            if not isinstance(tangents, tuple) or len(tangents) != len(diff_args):
                raise ValueError(
                    f"nnx.custom_vjp: the backward pass must return a tuple of "
                    f"{len(diff_args)} tangents (one per differentiated argument), "
                    f"got {type(tangents).__name__}"
                    + (f" of {len(tangents)}" if isinstance(tangents, tuple) else "")
                    + ".\nReturn a State for each object argument, an array otherwise."
                )
            by_entry: list[Any] = [None] * len(entries)
            for t, i in zip(tangents, diff_args, strict=True):
                idx = [k for k, e in enumerate(entries) if e.arg == i]
                vals = _values_from(
                    args[i], t, skel, [entries[k] for k in idx], "nnx.custom_vjp"
                )
                for k, v in zip(idx, vals, strict=True):
                    by_entry[k] = v
            return partition(
                [
                    _zero_cotangent(a) if h else _cotangent_like(a, by_entry[k])
                    for k, (a, h) in enumerate(zip(avals, held, strict=True))
                ],
                held,
            )

        pure.defvjp(pure_fwd, pure_bwd)
        with Picture("custom_vjp", {"nondiff_argnums": int_nondiff}) as picture:
            picture.inputs(
                entries,
                ["constant" if h else "differentiated" for h in held],
                lambda e, v: v,
            )
            new_graph, out = pure(diff_vals, rest_vals)
        _write_back(entries, new_graph)
        picture.outputs(new_graph)
        return out


def custom_vjp(
    fun: Callable[..., Any] | None = None,
    *,
    nondiff_argnums: tuple = (),
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.custom_vjp`` for functions of objects (flax.nnx's graph-update form).

    ``f.defvjp(fwd, bwd)``: ``bwd(*nondiff, residuals, (input_updates_g, out_g))``
    gets, per differentiated object argument, a State of the cotangents of its
    updated variables, and returns a tangent per differentiated argument (a
    State for an object: copy ``input_updates_g``'s and set its values).
    ``nondiff_argnums`` takes ints (not differentiated) and ``DiffState(i,
    filter)`` (only that part of an object)."""
    check_graph_modes("custom_vjp", graph, graph_updates)
    if fun is None:
        return functools.partial(custom_vjp, nondiff_argnums=nondiff_argnums)
    return CustomVjp(fun, tuple(nondiff_argnums))


def _graph_flag_ok(name: str, graph: bool | None, graph_updates: bool | None) -> None:
    """vjp/jvp: flax.nnx runs them in tree mode only (``graph=False``); lens runs
    them on its object graph either way, so both spellings are accepted."""
    if graph_updates is False and graph is not False:
        check_graph_modes(name, graph, graph_updates)


def _split_all(args: tuple, name: str) -> tuple[_Skeleton, list[_Entry], Walker]:
    walker = Walker(_diff_resolver, transform=name)
    skel, entries = _split_inputs(args, tuple(_Diff(...) for _ in args), walker)
    return skel, entries, walker


def _pure_of(
    f: Callable[..., Any], skel: _Skeleton, entries: list[_Entry], n: int, name: str
) -> Callable[[list[Any]], Any]:
    def pure(values: list[Any]) -> Any:
        with frame(name) as fr:
            args2 = _rebuild(skel, values)
            out = f(*args2)
            w2 = Walker(transform=name)
            after, new_entries = _split_inputs(args2, (None,) * n, w2)
            _check_structure(skel, after, name)
            w2.frame = fr
            out_c = _split_outputs(out, None, w2)
        return out_c, [e.value for e in new_entries if e.leaf is not None]

    return pure


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
    ``vjp_fn(out_ct)`` gives one cotangent per primal (a State for an object).

    flax.nnx runs vjp in tree mode only (``graph=False``) and returns objects
    there; lens returns States (read them by key or attribute), in either mode."""
    _graph_flag_ok("vjp", graph, graph_updates)
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    if f is None:
        return functools.partial(vjp, has_aux=has_aux, graph=graph)
    if not primals:  # used as a decorator: nnx.vjp(f)(m, x)
        return functools.partial(vjp, f, has_aux=has_aux, graph=graph)
    return _vjp(f, primals, has_aux)


def _vjp(f: Callable[..., Any], primals: tuple, has_aux: bool) -> Any:
    n = len(primals)
    skel, entries, walker = _split_all(primals, "vjp")
    pure = _pure_of(f, skel, entries, n, "vjp")

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
    _write_back(entries, new_graph)
    picture.outputs(new_graph)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        (cts,) = vjp_values(ct)
        return tuple(_per_arg_states(primals, skel, entries, cts))

    out = _merge_outputs(out, walker.nodes)
    if has_aux:
        return out, vjp_fn, _merge_outputs(aux, walker.nodes)
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
    _graph_flag_ok("jvp", graph, graph_updates)
    if f is None:
        return functools.partial(jvp, has_aux=has_aux, graph=graph)
    if primals is None or tangents is None:
        return lambda p, t: jvp(f, p, t, has_aux=has_aux, graph=graph)
    return _jvp(f, tuple(primals), tuple(tangents), has_aux)


def _jvp(f: Callable[..., Any], primals: tuple, tangents: tuple, has_aux: bool) -> Any:
    if len(primals) != len(tangents):
        raise ValueError(
            f"nnx.jvp: {len(primals)} primals but {len(tangents)} tangents; give "
            "one tangent per primal."
        )
    n = len(primals)
    skel, entries, walker = _split_all(primals, "jvp")
    pure = _pure_of(f, skel, entries, n, "jvp")
    tangent_values: list[Any] = []
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        mine = [e for e in entries if e.arg == i]
        vals = _values_from(p, t, skel, mine, "nnx.jvp")
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
            tangent_values.append(_cotangent_like(_aval(e.value), v))
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
    _write_back(entries, new_graph)
    picture.outputs(new_graph)
    out = _merge_outputs(out, walker.nodes)
    if has_aux:
        return out, out_t, _merge_outputs(aux, walker.nodes)
    return out, out_t


__all__ = ["CustomVjp", "custom_vjp", "jvp", "vjp"]
