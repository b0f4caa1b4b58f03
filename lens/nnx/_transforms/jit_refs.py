"""Mutable array references (``jax.Ref``) returned by an ``nnx.jit`` function.

JAX refuses a reference among a jitted program's outputs. As flax.nnx's jit
does, lens returns one anyway: a reference the function got as an argument
comes back as that same outer reference (its writes already happened in place),
and one made inside leaves the program as its value and becomes a new
``jax.Ref`` outside. (References held by returned objects travel with the
objects' state, not here.)
"""

from __future__ import annotations

from typing import Any

import jax

from lens.nnx._graph.walk import is_graph_node
from lens.nnx._variables.refs import is_array_ref


class RefOut:
    """A reference in the outputs: ``index`` of the argument value it is, or
    ``None`` and its ``value`` (a reference made inside)."""

    __slots__ = ("index", "value")

    def __init__(self, index: int | None, value: Any = None):
        self.index = index
        self.value = value


jax.tree_util.register_pytree_node(
    RefOut,
    lambda r: (() if r.index is not None else (r.value,), r.index),
    lambda index, children: RefOut(index, *children),
)


def mark_refs(out: Any, inputs: list[Any]) -> tuple[Any, bool]:
    """``out`` (inside the program) with each reference as a :class:`RefOut`
    (``inputs``: the argument values, in order); and whether it held any."""
    # objects are leaves here (walked by split_outputs; one may hold itself)
    leaves, treedef = jax.tree.flatten(out, is_leaf=is_graph_node)
    if not any(is_array_ref(x) for x in leaves):
        return out, False
    where = {id(x): i for i, x in enumerate(inputs) if is_array_ref(x)}

    def mark(x: Any) -> Any:
        if not is_array_ref(x):
            return x
        i = where.get(id(x))
        return RefOut(i) if i is not None else RefOut(None, x[...])

    return jax.tree.unflatten(treedef, [mark(x) for x in leaves]), True


def unmark_refs(out: Any, inputs: list[Any]) -> Any:
    """``out`` (outside) with each :class:`RefOut` as the outer reference it
    is (``inputs``: the argument values, in order) or a new one."""

    def unmark(x: Any) -> Any:
        if not isinstance(x, RefOut):
            return x
        return inputs[x.index] if x.index is not None else jax.new_ref(x.value)

    return jax.tree.map(unmark, out, is_leaf=lambda x: isinstance(x, RefOut))
