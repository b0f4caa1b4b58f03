"""Cotangents and tangents of object arguments, shared by ``nnx.vjp``, ``nnx.jvp``
and ``nnx.custom_vjp``: an object's cotangent is a State of its variables.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import errors
from lens.nnx._graph.ops import state
from lens.nnx._objects.object import Pytree
from lens.nnx._transforms.specs import Entry, Skeleton
from lens.nnx._variables.state import State


def aval(x: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def zero_cotangent(a: jax.ShapeDtypeStruct) -> Any:
    if jnp.issubdtype(a.dtype, jnp.inexact):
        return jnp.zeros(a.shape, a.dtype)
    return np.zeros(a.shape, jax.dtypes.float0)


def cotangent_like(a: jax.ShapeDtypeStruct, ct: Any) -> Any:
    """``ct`` as the (co)tangent of a value of shape/dtype ``a`` (zero if None;
    float0 for an integer value, as JAX wants)."""
    if ct is None or not jnp.issubdtype(a.dtype, jnp.inexact):
        return zero_cotangent(a)
    return jnp.asarray(getattr(ct, "value", ct), a.dtype)


def _rel(entry: Entry, skel: Skeleton) -> tuple:
    assert entry.leaf is not None
    root = skel.root_of(entry.slot)
    return entry.leaf.path[len(root) :]


def per_arg_states(
    args: tuple, skel: Skeleton, entries: list[Entry], values: list[Any]
) -> list[Any]:
    """Per argument: a State of ``values`` (one per entry) for an object, its
    pytree of them otherwise."""
    out: list[Any] = []
    for i, arg in enumerate(args):
        mine = [(e, v) for e, v in zip(entries, values, strict=True) if e.arg == i]
        if isinstance(arg, Pytree):
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


def values_from(
    arg: Any, tangent: Any, skel: Skeleton, mine: list[Entry], what: str
) -> list[Any]:
    """The per-entry values an argument's tangent (a State for an object) gives."""
    if isinstance(arg, Pytree):
        if tangent is None:
            return [None] * len(mine)
        if isinstance(tangent, Pytree):  # flax's tree mode: an object-shaped tangent
            tangent = state(tangent)
        if not hasattr(tangent, "flat_state"):
            raise errors.TangentStructureError(
                f"{what}: the tangent of an object argument must be a State (as "
                f"nnx.state(model) gives), got {type(tangent).__name__}."
            )
        flat = dict(tangent.flat_state())
        return [flat.get(_rel(e, skel)) for e in mine]
    if tangent is None:
        return [None] * len(mine)
    leaves = jax.tree.leaves(tangent)
    if len(leaves) != len(mine):
        raise errors.TangentStructureError(
            f"{what}: a tangent has {len(leaves)} leaves where its argument has "
            f"{len(mine)}.\nReturn, for an array argument, an array of its shape "
            "(for a pytree, the same pytree); in the full graph mode the "
            "cotangent the backward pass gets is a pair (updates', output's)."
        )
    return leaves
