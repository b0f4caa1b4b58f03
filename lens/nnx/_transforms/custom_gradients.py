"""``nnx.custom_vjp``: ``jax.custom_vjp`` for functions of objects, in Flax's
graph-update form (``DiffState`` / int ``nondiff_argnums``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import jax

from lens import errors
from lens._argnums import combine, partition
from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker
from lens.nnx._objects.object import Pytree
from lens.nnx._transforms.cotangents import (
    aval,
    cotangent_like,
    per_arg_states,
    values_from,
    zero_cotangent,
)
from lens.nnx._transforms.modes import check_prefix, transform_mode
from lens.nnx._transforms.pack_trace import Picture
from lens.nnx._transforms.recipe import (
    apply_graph_updates,
    changed_structure,
    check_structure,
    diff_resolver,
    merge_outputs,
    rebuild,
    split_args,
    split_outputs,
)
from lens.nnx._transforms.simple_vjp import simple_custom_vjp
from lens.nnx._transforms.specs import Carrier, DiffSpec, DiffState
from lens.nnx.tracers import frame
from lens.traceback_util import api_boundary

A = TypeVar("A")


@dataclasses.dataclass(eq=False)
class CustomVjpFnWrapper:
    """The primal function ``jax.custom_vjp`` differentiates in the full mode
    (flax.nnx's ``CustomVjpFnWrapper``): called with the differentiated values
    and the others, it rebuilds the arguments, calls ``f`` and returns the
    arguments' new graph values, the outputs (objects as carriers) and the
    structure change.

    ``nondiff_states`` is what the values do not carry: ``[skeleton, held,
    entries]`` (the arguments' static structure, per value whether it is held
    out of differentiation, the walked entries); ``nodedefs`` receives each
    call's structure change; ``jax_nondiff_argnums`` are the int
    ``nondiff_argnums`` and ``ctxtag`` names the call (flax's context tag).
    """

    f: Callable[..., Any]
    jax_nondiff_argnums: tuple[int, ...]
    ctxtag: str
    nondiff_states: list[Any]
    nodedefs: deque[Any]

    def __post_init__(self) -> None:
        functools.update_wrapper(self, self.f)
        # JAX binds the call to the signature: the values' (dv, rv), not f's
        del self.__dict__["__wrapped__"]

    def __call__(self, *pure_args: Any) -> Any:
        diff_values, rest_values = pure_args
        skel, held, entries = self.nondiff_states
        values = combine(diff_values, rest_values, held)
        new_vals, out, walker, changed = _run_inside(self.f, skel, values, len(entries))
        self.nodedefs.append(changed.aux)
        graph = [v for v, e in zip(new_vals, entries, strict=True) if e.leaf]
        # an input returned comes back as itself (its cotangent is its input
        # update's)
        return graph, split_outputs(out, None, walker), changed


class CustomVjp(Generic[A]):
    """A function of objects with a custom backward pass (``defvjp``)."""

    def __init__(
        self,
        fun: Callable[..., A],
        nondiff_argnums: tuple = (),
        *,
        simple: bool = False,
    ):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums
        # flax.nnx's simple modes: jax.custom_vjp's conventions, objects as the
        # pytrees they are (bwd(*nondiff, residuals, out_g) -> tangents shaped like
        # the arguments); the full mode passes and takes States (see custom_vjp)
        self.simple = simple
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

    def _check_ready(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """The forward and backward passes, once this call can run."""
        if self.fwd is None or self.bwd is None:
            raise ValueError(
                f"nnx.custom_vjp function {getattr(self.fun, '__name__', self.fun)!r} "
                "has no backward pass.\nCall f.defvjp(f_fwd, f_bwd) before calling it."
            )
        if self.simple and self.filters:
            raise ValueError(
                "nnx.custom_vjp with graph_updates=False takes int "
                "nondiff_argnums only, not DiffState.\nUse graph mode with "
                "graph updates for DiffState."
            )
        return self.fwd, self.bwd

    @api_boundary
    def __call__(self, *args: Any) -> Any:
        fwd_fn, bwd_fn = self._check_ready()
        if self.simple:
            return simple_custom_vjp(self.fun, fwd_fn, bwd_fn, self.int_nondiff, args)
        n = len(args)
        specs = tuple(
            None if i in self.int_nondiff else DiffSpec(self.filters.get(i, ...))
            for i in range(n)
        )
        walker = Walker(diff_resolver, transform="custom_vjp")
        skel, entries = split_args(args, specs, walker)
        held = [e.spec is None for e in entries]  # not differentiated
        avals = [aval(e.value) for e in entries]
        diff_vals, rest_vals = partition([e.value for e in entries], held)
        fun = self.fun
        int_nondiff = self.int_nondiff
        diff_args = [i for i in range(n) if i not in int_nondiff]

        def merged(dv: list[Any], rv: list[Any]) -> list[Any]:
            return combine(dv, rv, held)

        def run(f: Callable[..., Any], values: list[Any]) -> Any:
            return _run_inside(f, skel, values, len(entries))

        name = getattr(fun, "__name__", "fun")
        pure = jax.custom_vjp(
            CustomVjpFnWrapper(
                fun,
                int_nondiff,
                f"custom_vjp_{name}_{id(fun)}",
                [skel, held, entries],
                deque(maxlen=1),
            )
        )

        def pure_fwd(dv: list[Any], rv: list[Any]) -> Any:
            new_vals, (out, res), w2, changed = run(fwd_fn, merged(dv, rv))
            out_c = split_outputs(out, None, w2)
            res_c = split_outputs(res, None, w2)
            graph = [v for v, e in zip(new_vals, entries, strict=True) if e.leaf]
            return (graph, out_c, changed), (new_vals, res_c)

        def pure_bwd(residual: Any, g: Any) -> Any:
            new_vals, res_c = residual
            graph_g, out_c_g, _ = g
            out_g = _output_cotangents(out_c_g)
            table: dict[int, Any] = {}
            args3 = rebuild(skel, new_vals, table)
            res = merge_outputs(res_c, [table[i] for i in range(len(table))])
            it = iter(graph_g)
            updates_g = [next(it) if e.leaf else None for e in entries]
            per_arg = per_arg_states(args, skel, entries, updates_g)
            input_updates_g = tuple(
                per_arg[i] if isinstance(args[i], Pytree) else None for i in diff_args
            )
            tangents = bwd_fn(
                *(args3[i] for i in int_nondiff), res, (input_updates_g, out_g)
            )
            return _cotangents(tangents, args, skel, entries, diff_args, avals, held)

        pure.defvjp(pure_fwd, pure_bwd)
        with Picture("custom_vjp", {"nondiff_argnums": int_nondiff}) as picture:
            picture.inputs(
                entries,
                ["constant" if h else "differentiated" for h in held],
                lambda e, v: v,
            )
            new_graph, out_c, changed = pure(diff_vals, rest_vals)
        nodes = apply_graph_updates(entries, new_graph, changed.aux, walker.nodes)
        picture.outputs(new_graph)
        return merge_outputs(out_c, nodes)


def _run_inside(f: Callable[..., Any], skel: Any, values: list[Any], n_entries: int):
    """``f`` on the arguments rebuilt from ``values``; what it left in them."""
    table: dict[int, Any] = {}
    with frame("custom_vjp") as fr:
        args = rebuild(skel, values, table)
        result = f(*args)
        walker = Walker(transform="custom_vjp")
        after, new_entries = split_args(args, (None,) * len(args), walker)
        if len(new_entries) != n_entries:  # only statics may change
            check_structure(skel, after, "custom_vjp")
        changed = changed_structure(skel, after, table, walker.nodes)
        new_vals = [e.value for e in new_entries]
        walker.frame = fr
    return new_vals, result, walker, Carrier([], changed)


def _output_cotangents(out_c_g: Any) -> Any:
    """The outputs' cotangents as the backward pass takes them: an object made
    inside as an object of its cotangents; an input returned as None (its
    cotangent is in the input updates')."""

    def build(x: Any) -> Any:
        if isinstance(x, Carrier):
            return merge_outputs(x, []) if x.values else None
        return x

    return jax.tree.map(build, out_c_g, is_leaf=lambda x: isinstance(x, Carrier))


def _cotangents(
    tangents: Any,
    args: tuple[Any, ...],
    skel: Any,
    entries: list[Any],
    diff_args: list[int],
    avals: list[Any],
    held: list[bool],
) -> Any:
    """The user's backward pass result (a tangent per differentiated argument: a
    State for an object) as JAX's cotangents of the differentiated values."""
    if not isinstance(tangents, tuple) or len(tangents) != len(diff_args):
        raise errors.TangentStructureError(
            f"nnx.custom_vjp: the backward pass must return a tuple of "
            f"{len(diff_args)} tangents (one per differentiated argument), "
            f"got {type(tangents).__name__}"
            + (f" of {len(tangents)}" if isinstance(tangents, tuple) else "")
            + ".\nReturn a State for each object argument, an array otherwise."
        )
    by_entry: list[Any] = [None] * len(entries)
    for t, i in zip(tangents, diff_args, strict=True):
        idx = [k for k, e in enumerate(entries) if e.arg == i]
        vals = values_from(
            args[i], t, skel, [entries[k] for k in idx], "nnx.custom_vjp"
        )
        for k, v in zip(idx, vals, strict=True):
            by_entry[k] = v
    return partition(
        [
            zero_cotangent(a) if h else cotangent_like(a, by_entry[k])
            for k, (a, h) in enumerate(zip(avals, held, strict=True))
        ],
        held,
    )


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
    mode = transform_mode("custom_vjp", fun, graph, graph_updates)
    if fun is None:
        return functools.partial(
            custom_vjp,
            nondiff_argnums=nondiff_argnums,
            graph=graph,
            graph_updates=graph_updates,
        )
    check_prefix(tuple(nondiff_argnums), "nondiff_argnums", mode)
    if mode.simple:
        return SimpleCustomVjp(fun, tuple(nondiff_argnums), mode.graph)
    return CustomVjp(fun, tuple(nondiff_argnums))


class SimpleCustomVjp(CustomVjp[A]):
    """What :func:`custom_vjp` returns in flax's simple modes (flax.nnx's
    ``SimpleCustomVjp(fun, nondiff_argnums, graph)``): ``jax.custom_vjp``'s
    conventions, objects as the pytrees they are; the backward pass may take
    ``updates_g`` (the cotangents of the Variables the function updated)."""

    def __init__(
        self, fun: Callable[..., A], nondiff_argnums: tuple = (), graph: bool = True
    ):
        super().__init__(fun, tuple(nondiff_argnums), simple=True)
        self.graph = graph


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
