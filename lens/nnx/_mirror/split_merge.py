"""flax.nnx's ``split_inputs`` / ``merge_inputs``: the two halves of a transform
written by hand around a JAX transform (``split_inputs(jax.jit(merge_inputs(f)))``).

flax.nnx's transforms were once built this way; lens's are built on the recipe in
:mod:`lens.nnx._transforms.recipe`, and these decorators are that recipe's steps
exposed for code that composes them itself: the outer half carries each object
argument as a pytree of its values (its skeleton static), the inner half rebuilds
the objects, calls ``f`` and returns the arguments' new values with the output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.recipe import (
    merge_outputs,
    rebuild,
    split_args,
    split_outputs,
    write_back,
)
from lens.nnx._transforms.specs import Carrier, Entry, GraphSlot
from lens.nnx._variables.static import StaticValue


def _carry_arg(arg: Any) -> tuple[Any, list[Entry]]:
    """An argument holding objects as a Carrier of its values (its skeleton in
    the static aux); other arguments as they are."""
    walker = Walker(transform="split_inputs")
    skel, entries = split_args((arg,), (None,), walker)
    if not any(isinstance(s, GraphSlot) for s in skel.slots):
        return arg, []
    return Carrier([e.value for e in entries], StaticValue(skel)), entries


def _is_carrier(x: Any) -> bool:
    return isinstance(x, Carrier) and isinstance(x.aux, StaticValue)


def _uncarry_arg(arg: Any) -> Any:
    if isinstance(arg, Carrier) and isinstance(arg.aux, StaticValue):
        (obj,) = rebuild(arg.aux.value, arg.values)
        return obj
    return arg


def split_inputs(
    f: Callable[..., Any] | None = None, *, ctxtag: str = "split_merge_inputs"
) -> Any:
    """flax.nnx's ``split_inputs``: calls ``f`` (a JAX transform of a function
    wrapped by :func:`merge_inputs`) with each object argument as a pytree of its
    state, writes the state ``f`` returns for the arguments back into them, and
    returns ``f``'s output (objects rebuilt). Without ``f``, a decorator.

    ``ctxtag`` is accepted as flax's; lens pairs the two halves by the carried
    state itself, so any tag works.
    """
    if f is None:
        return functools.partial(split_inputs, ctxtag=ctxtag)

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        carried = [_carry_arg(a) for a in args]
        args_out, out = f(*(c for c, _ in carried))
        # the state merge_inputs returned, one carrier per object argument
        news = [
            c for c in jax.tree.leaves(args_out, is_leaf=_is_carrier) if _is_carrier(c)
        ]
        olds = [entries for _, entries in carried if entries]
        for entries, new in zip(olds, news, strict=True):
            write_back(entries, [v for e, v in zip(entries, new.values) if e.leaf])
        return merge_outputs(out, [])

    return wrapper


def merge_inputs(
    f: Callable[..., Any] | None = None, *, ctxtag: str = "split_merge_inputs"
) -> Any:
    """flax.nnx's ``merge_inputs``: the inner half of :func:`split_inputs`; it
    rebuilds the objects, calls ``f`` and returns ``(arguments' state, output)``.
    Without ``f``, a decorator; ``ctxtag`` as in :func:`split_inputs`."""
    if f is None:
        return functools.partial(merge_inputs, ctxtag=ctxtag)

    @functools.wraps(f)
    def wrapper(*carried: Any) -> Any:
        args = [_uncarry_arg(c) for c in carried]
        out = f(*args)
        args_out = tuple(
            _carry_arg(a)[0] if isinstance(c, Carrier) else c
            for a, c in zip(args, carried, strict=True)
        )
        return args_out, split_outputs(out, None, Walker(transform="merge_inputs"))

    return wrapper


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
