"""Branches and whole-function transforms over objects (flax.nnx's
``transforms.transforms``): ``cond``, ``switch``, ``eval_shape``, ``make_jaxpr`` and
``checkify``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.modes import (
    active_mode,
    check_no_aliases,
    check_simple_outputs,
    transform_mode,
)
from lens.nnx._transforms.pack_trace import Picture
from lens.nnx._transforms.recipe import (
    call_inside,
    lift_args,
    merge_outputs,
    pure_of,
    rebuild,
    split_args,
    split_outputs,
    write_back,
)
from lens.nnx.tracers import frame
from lens.traceback_util import api_boundary


@api_boundary
def cond(
    pred: Any,
    true_fun: Callable[..., Any],
    false_fun: Callable[..., Any],
    *operands: Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.lax.cond`` with objects among the operands: the branch taken updates
    them. Both branches must return the same structure."""
    mode = transform_mode("cond", None, graph, graph_updates)
    mode.check_inputs(operands=operands)
    with active_mode(mode):
        return _switch("cond", jnp.asarray(pred, bool), (false_fun, true_fun), operands)


@api_boundary
def switch(
    index: Any,
    branches: Sequence[Callable[..., Any]],
    *operands: Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.lax.switch`` with objects among the operands (see :func:`cond`)."""
    mode = transform_mode("switch", None, graph, graph_updates)
    mode.check_inputs(operands=operands)
    with active_mode(mode):
        return _switch("switch", index, branches, operands)


def _switch(
    _name: str,
    index: Any,
    branches: Sequence[Callable[..., Any]],
    operands: tuple[Any, ...],
) -> Any:
    branches = tuple(branches)
    if not branches:
        raise ValueError(
            f"Empty branch sequence\nnnx.{_name} needs at least one branch."
        )
    skel, entries, walker = lift_args(_name, operands)
    values = [e.value for e in entries]

    def branch(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
        def run(vals: list[Any]) -> Any:
            return call_inside(_name, fn, skel, vals, len(operands))

        run.__wrapped__ = fn  # type: ignore[attr-defined] # JAX's errors name it
        return run

    fns = [branch(fn) for fn in branches]
    with Picture(_name, {"branches": len(branches)}) as picture:
        picture.whole(entries, "all")
        if _name == "cond":  # jax.lax.cond's checks and messages (true_fun, ...)
            new, outs = jax.lax.cond(index, fns[1], fns[0], values)
        else:
            new, outs = jax.lax.switch(index, fns, values)
    write_back(entries, new)
    picture.outputs(new)
    return merge_outputs(outs, walker.nodes)


@api_boundary
def eval_shape(
    f: Callable[..., Any],
    *args: Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
    **kwargs: Any,
) -> Any:
    """``jax.eval_shape`` for functions of (and returning) objects: every object
    among the outputs comes back as a new, abstract one (``jax.ShapeDtypeStruct``
    values), an argument returned included; nothing is computed, and the
    arguments are not changed. An object the function captured from outside
    comes back as an abstract copy too (``nnx.eval_shape(lambda: model)``)."""
    mode = transform_mode("eval_shape", f, graph, graph_updates)
    if mode.simple:  # flax.nnx checks the arguments as rebuilt inside
        check_no_aliases("eval_shape", args=args, kwargs=kwargs)
    n = len(args) + 1
    skel, entries, _ = lift_args("eval_shape", (*args, kwargs))

    def pure(values: list[Any]) -> Any:
        with frame("eval_shape") as fr:
            *pos, kw = rebuild(skel, values)
            out = f(*pos, **kw)
            if mode.simple:  # no argument's Variable among the outputs
                inputs = Walker(transform="eval_shape")
                split_args((*pos, kw), (None,) * n, inputs)
                inputs.frame = fr
                check_simple_outputs("eval_shape", out, inputs)
            # the outputs walked on their own: an argument returned is a new
            # object, as flax.nnx's eval_shape gives it
            walker = Walker(transform="eval_shape")
            walker.frame = fr
            return split_outputs(out, None, walker)

    pure.__wrapped__ = f  # type: ignore[attr-defined] # JAX's errors name it

    with active_mode(mode):
        outs = jax.eval_shape(pure, [e.value for e in entries])
    return merge_outputs(outs, [])


def _pure_state_fn(
    f: Callable[..., Any], args: tuple, name: str
) -> tuple[Callable[[list[Any]], Any], list[Any], Any]:
    """``f`` as a pure function of ``args``' state values: it returns the outputs
    (objects as carriers) and the arguments' new graph values."""
    walker = Walker(transform=name)
    n = len(args)
    skel, entries = split_args(args, (None,) * n, walker)
    return pure_of(f, skel, entries, n, name), entries, walker


def make_jaxpr(
    f: Callable[..., Any] | None = None,
    *,
    graph: bool | None = None,
    graph_updates: bool | None = None,
    static_argnums: int | tuple[int, ...] = (),
) -> Any:
    """``jax.make_jaxpr`` of a function of objects (their state as inputs)."""
    transform_mode("make_jaxpr", f, graph, graph_updates)
    if graph_updates:  # flax.nnx refuses it (lens's default walk is the same)
        raise ValueError(
            "nnx.make_jaxpr does not support graph_updates=True.\nPass "
            "graph_updates=False, or leave it unset."
        )
    if static_argnums:
        raise NotImplementedError(
            "nnx.make_jaxpr(static_argnums=...) is not supported by lens.nnx; close "
            "over static values instead."
        )
    if f is None:
        return functools.partial(make_jaxpr)

    @api_boundary
    def run(*args: Any) -> Any:
        pure, entries, _ = _pure_state_fn(f, args, "make_jaxpr")
        return jax.make_jaxpr(pure)([e.value for e in entries])

    return run


def checkify(
    f: Callable[..., Any],
    errors: Any = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Callable[..., Any]:
    """``jax.experimental.checkify.checkify`` for functions of objects: returns
    ``(error, output)``; the objects' updates come back."""
    from jax.experimental import checkify as ck  # loaded on first use

    mode = transform_mode("checkify", f, graph, graph_updates)
    errors = ck.user_checks if errors is None else errors

    @functools.wraps(f)
    @api_boundary
    def run(*args: Any) -> Any:
        mode.check_inputs(args=args)  # tree mode: no Variable reached twice
        pure, entries, walker = _pure_state_fn(f, args, "checkify")
        with active_mode(mode):
            err, (out_c, new_graph) = ck.checkify(pure, errors=errors)(
                [e.value for e in entries]
            )
        write_back(entries, new_graph)
        return err, merge_outputs(out_c, walker.nodes)

    return run


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
