"""``nnx.jit``'s ``in_shardings`` and ``out_shardings`` over objects.

flax.nnx takes them as prefixes of the arguments and outputs, where an object's
entry is one sharding for all its variables or per-filter shardings
(``StateSharding``, or what ``nnx.prefix`` makes). lens places the values with
``jax.device_put``: the arguments' before the call (an object's variables are
resharded in place, as flax.nnx's jit hands them back), the outputs' after it,
and an argument's variables the function updated back onto their input
sharding, so the state keeps the layout it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.recipe import split_args
from lens.nnx._transforms.specs import Entry, GraphArg, axes_resolver, wrap_objects


def _describe(spec: Any) -> str:
    return f"sharding {spec!r}"


def _put(value: Any, spec: Any) -> Any:
    if isinstance(spec, jax.sharding.PartitionSpec):
        mesh = jax.sharding.get_abstract_mesh()
        if mesh.empty:
            raise ValueError(
                f"nnx.jit: the sharding {spec!r} is a PartitionSpec but no mesh "
                "is set.\nCall it under `with jax.set_mesh(mesh):`, or pass a "
                "NamedSharding."
            )
    return jax.device_put(value, spec)


def _arg_specs(
    in_shardings: Any, n_args: int, dynamic: Sequence[int]
) -> tuple[Any, ...]:
    """One spec per argument: ``in_shardings`` covers the dynamic positional
    arguments (a tuple, one each; anything else, the same for all)."""
    specs: list[Any] = [None] * n_args
    if isinstance(in_shardings, tuple | list):
        if len(in_shardings) != len(dynamic):
            raise ValueError(
                f"nnx.jit: in_shardings has {len(in_shardings)} entries for "
                f"{len(dynamic)} dynamic positional arguments.\nGive one per "
                "argument (None for unsharded), or one sharding for all."
            )
        for i, s in zip(dynamic, in_shardings, strict=True):
            specs[i] = s
    else:
        for i in dynamic:
            specs[i] = in_shardings
    return tuple(specs)


def _place(
    tree: tuple[Any, ...], specs: tuple[Any, ...], static: frozenset[int]
) -> tuple[tuple[Any, ...], list[Entry]]:
    """``tree``'s values device_put to their specs: an object's in place, the
    rest in the returned copy of ``tree``; also the placed object entries."""
    walker = Walker(axes_resolver, describe=_describe, transform="jit")
    _, entries = split_args(tree, specs, walker, static)
    leaves, treedef = jax.tree.flatten(
        wrap_objects(tree), is_leaf=lambda x: isinstance(x, GraphArg)
    )
    leaves = [x.node if isinstance(x, GraphArg) else x for x in leaves]
    placed = []
    for e in entries:
        if e.spec is None:
            continue
        value = _put(e.value, e.spec)
        if e.leaf is not None:
            e.leaf.write(value)
            e.value = value
            placed.append(e)
        else:
            leaves[e.slot] = value
    return jax.tree.unflatten(treedef, leaves), placed


def place_inputs(
    in_shardings: Any, args: tuple[Any, ...], static: frozenset[int]
) -> tuple[tuple[Any, ...], list[Entry]]:
    """The arguments placed on ``in_shardings``, and the placed object state."""
    n = len(args)
    dynamic = [i for i in range(n) if i not in static]
    return _place(args, _arg_specs(in_shardings, n, dynamic), static)


def replace_updates(
    in_shardings: Any, args: tuple[Any, ...], static: frozenset[int]
) -> None:
    """The arguments' object state back on ``in_shardings`` after the call: what
    the function updated (or replaced) keeps the layout it was given."""
    place_inputs(in_shardings, args, static)


def place_outputs(out_shardings: Any, out: Any) -> Any:
    """The outputs placed on ``out_shardings`` (a prefix of them)."""
    (placed,), _ = _place((out,), (out_shardings,), frozenset())
    return placed
