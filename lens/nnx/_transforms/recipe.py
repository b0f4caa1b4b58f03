"""The recipe every lens.nnx transform shares (flax.nnx's ``transforms.general``).

Arguments follow JAX's conventions: ``in_axes`` / ``argnums`` give one spec per
argument, and an object argument is lifted as one pytree would be. The Lift types
refine a spec inside one object: ``StateAxes({Param: 1, BatchStat: None})`` maps
each filter's variables on its own axis; ``DiffState(0, LoRAParam)`` differentiates
argument 0's ``LoRAParam`` variables only.

Each call runs one recipe:

1. walk every object argument once (aliases numbered as such), giving a static
   graph structure and the variables' values, each resolved to its spec
   (:func:`split_args`);
2. check *consistent aliasing*: a node met twice must get the same spec;
3. call the JAX transform on a pure function of those values, which rebuilds the
   objects, calls the user function, and walks the arguments again to return their
   new values, plus the outputs (:func:`split_outputs`; an output that is an input
   must keep its input spec; an object captured from outside cannot be returned);
4. write the new values back into the caller's objects, and rebuild the outputs
   (:func:`write_back`, :func:`merge_outputs`; an input returned comes back as the
   same Python object).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from lens import errors
from lens.nnx._graph.defs import ObjectDef
from lens.nnx._graph.walk import (
    Builder,
    InPlaceBuilder,
    Walker,
    is_graph_node,
    path_str,
)
from lens.nnx._transforms.modes import (
    check_simple_outputs,
    current_mode,
)
from lens.nnx._transforms.prefix_axes import tree_prefix_axes
from lens.nnx._transforms.specs import (
    Carrier,
    DiffSpec,
    Entry,
    GraphArg,
    GraphSlot,
    LeafSlot,
    Skeleton,
    Slot,
    StateAxes,
    StaticSlot,
    wrap_objects,
)
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.static import StaticValue
from lens.nnx._variables.variable import Variable
from lens.nnx.tracers import frame


def split_args(
    args: tuple[Any, ...],
    specs: tuple[Any, ...],
    walker: Walker,
    static: frozenset[int] = frozenset(),
) -> tuple[Skeleton, list[Entry]]:
    """Walks ``args`` (each with its spec prefix): the static skeleton, and one entry
    per value (graph leaves in walk order, plain leaves in pytree order)."""
    wrapped = wrap_objects(args)
    is_graph = lambda x: isinstance(x, GraphArg)  # noqa: E731
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=is_graph)
    leaf_specs: list[Any] = []
    arg_of_leaf: list[int] = []
    for i, (arg, spec) in enumerate(zip(wrapped, specs, strict=True)):
        n = len(jax.tree.leaves(arg, is_leaf=is_graph))
        leaf_specs += [None] * n if i in static else _broadcast(spec, arg, i)
        arg_of_leaf += [i] * n
    slots: list[Slot] = []
    entries: list[Entry] = []
    counter = [0] * len(args)
    for leaf, spec, i in zip(leaves, leaf_specs, arg_of_leaf, strict=True):
        j = counter[i]
        counter[i] += 1
        if i in static:
            raw = leaf.node if isinstance(leaf, GraphArg) else leaf
            slots.append(StaticSlot(StaticValue(raw)))
        elif isinstance(leaf, GraphArg):
            start = len(walker.leaves)
            root = ("args", i) if j == 0 else ("args", i, j)
            walker.root_len = len(root)
            d = walker.node(leaf.node, root, spec)
            slots.append(GraphSlot(d, root))
            entries += [
                Entry(lf.value, lf.spec, len(slots) - 1, lf, i)
                for lf in walker.leaves[start:]
            ]
        else:
            if isinstance(spec, StateAxes):
                raise TypeError(
                    f"StateAxes applies to objects only; argument {i} has a "
                    f"{type(leaf).__name__} there."
                )
            slots.append(LeafSlot())
            entries.append(Entry(leaf, spec, len(slots) - 1, None, i))
    return Skeleton(treedef, tuple(slots)), entries


def _is_object(x: Any) -> bool:
    return is_graph_node(x) and not isinstance(x, Variable)


def _broadcast(prefix: Any, tree: Any, i: int) -> list[Any]:
    def is_leaf(x: Any) -> bool:
        return (
            x is None or isinstance(x, StateAxes | DiffSpec | GraphArg) or _is_object(x)
        )

    out: list[Any] = []

    def expand(p: Any, sub: Any) -> None:
        if _is_object(p):  # a tree-mode nnx.prefix result: read per variable
            p = tree_prefix_axes(p)
        n = len(jax.tree.leaves(sub, is_leaf=lambda x: isinstance(x, GraphArg)))
        out.extend([p] * n)

    try:
        jax.tree.map(expand, prefix, tree, is_leaf=is_leaf)
        return out
    except ValueError as e:
        raise ValueError(
            f"The spec {prefix!r} for argument {i} is not a prefix of it: {e}"
        ) from None


def rebuild(
    skel: Skeleton, values: list[Any], table: dict[int, Any] | None = None
) -> tuple[Any, ...]:
    """The arguments rebuilt from ``skel`` and ``values``; ``table``, when given,
    receives node index -> rebuilt object."""
    it = iter(values)
    builder = Builder(it)
    if table is not None:
        builder.nodes = table
    leaves = []
    for slot in skel.slots:
        if isinstance(slot, GraphSlot):
            leaves.append(builder.build(slot.graphdef))
        elif isinstance(slot, StaticSlot):
            leaves.append(slot.value.value)
        else:
            leaves.append(next(it))
    return jax.tree.unflatten(skel.treedef, leaves)


def _same_transform(mode_name: str, walker_name: str) -> bool:
    """Whether the active mode is the walker's transform's (``grad`` runs as
    ``value_and_grad``)."""
    names = {mode_name, walker_name}
    return len(names) == 1 or names == {"grad", "value_and_grad"}


def split_outputs(out: Any, out_spec: Any, walker: Walker) -> Any:
    """The outputs with each object replaced by a carrier of its new leaves."""
    mode = current_mode()
    if (
        mode is not None
        and mode.simple
        and _same_transform(mode.name, walker.transform)
    ):
        walker.simple = True
        check_simple_outputs(walker.transform, out, walker)
    walker.role = "output"
    wrapped = wrap_objects(out)
    specs = _broadcast(out_spec, wrapped, 0)
    leaves, treedef = jax.tree.flatten(
        wrapped, is_leaf=lambda x: isinstance(x, GraphArg)
    )
    new = []
    for j, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        if isinstance(leaf, GraphArg):
            start = len(walker.leaves)
            path = ("output",) if len(leaves) == 1 else ("output", j)
            walker.root_len = len(path)
            d = walker.node(leaf.node, path, spec)
            fresh = walker.leaves[start:]
            if fresh and isinstance(spec, StateAxes):
                # a new object with per-filter axes: every leaf leaves the
                # transform on axis 0, and is moved to its own axis after
                axes = tuple(lf.spec for lf in fresh)
                new.append(Carrier([lf.value for lf in fresh], StaticValue(d), axes))
                continue
            new.append(Carrier([lf.value for lf in fresh], StaticValue(d)))
        else:
            new.append(leaf)
    return jax.tree.unflatten(treedef, new)


def merge_outputs(out: Any, nodes: list[Any]) -> Any:
    """``out`` with each carrier rebuilt into its object (sharing ``nodes``)."""
    if isinstance(out, jax.Array) or out is None:  # the common case, no walk
        return out
    table = dict(enumerate(nodes))

    def build(x: Any) -> Any:
        if isinstance(x, Carrier):
            b = Builder(iter(x.values), table)
            obj = b.build(x.aux.value)
            table.update(b.nodes)
            return obj
        return x

    return jax.tree.map(build, out, is_leaf=lambda x: isinstance(x, Carrier))


def check_structure(before: Skeleton, after: Skeleton, name: str) -> None:
    if before != after:
        raise errors.GraphStructureError(
            f"An argument of nnx.{name} changed structure inside the function (a "
            "variable or submodule was added, removed or replaced, or a static "
            "attribute changed).\nTransforms carry values, not structure: create "
            "submodules and variables before the transform (e.g. in __init__) and "
            "only update their values inside."
        )


def changed_structure(
    skel: Skeleton, after: Skeleton, table: dict[int, Any], nodes: list[Any]
) -> StaticValue | None:
    """None if the arguments kept their structure; else the new structure and,
    per new node, the index of the old node it is (so the caller's objects are
    updated in place): a new attribute or submodule made inside is applied, and
    references swapped inside (``m.a, m.b = m.b, m.a``) are swapped outside."""
    mode = current_mode()
    same_refs = (mode is not None and mode.simple) or all(
        table.get(i) is o for i, o in enumerate(nodes)
    )  # the simple modes keep the caller's references
    if after == skel and same_refs:
        return None
    index_of = {id(o): i for i, o in table.items()}
    return StaticValue((after, tuple(index_of.get(id(o)) for o in nodes)))


def added_attributes(before: Skeleton, after: Skeleton) -> list[tuple[Any, ...]]:
    """The paths of attributes that objects among the arguments have in
    ``after`` and not in ``before``, each followed by its object's class name
    (``('args', 0, 'cache', 'MLP')``)."""
    added: list[tuple[Any, ...]] = []

    def diff(d0: Any, d1: Any, path: tuple[Any, ...]) -> None:
        if not (isinstance(d0, ObjectDef) and isinstance(d1, ObjectDef)):
            return
        old = dict(d0.attributes)
        for key, sub in d1.attributes:
            if key not in old:
                added.append((*path, key, d1.type.__name__))
            else:
                diff(old[key], sub, (*path, key))

    for s0, s1 in zip(before.slots, after.slots):
        if isinstance(s0, GraphSlot) and isinstance(s1, GraphSlot):
            diff(s0.graphdef, s1.graphdef, tuple(s0.root))
    return added


def check_unmapped_additions(
    name: str, before: Skeleton, after: Skeleton, entries: list[Entry]
) -> None:
    """Strict mode, inside a mapping transform (vmap, pmap): an attribute added
    to an argument that is not mapped (its axis is None) raises. The value made
    inside has no axis to leave on: flax.nnx leaks it as a tracer, or JAX
    rejects the output's axes. (Added to a mapped argument, as by a vmapped
    ``__init__``, it leaves on that argument's axis: no error.)"""
    unmapped = []
    for *path, owner in added_attributes(before, after):
        n = len(path)
        if any(
            e.leaf is not None
            and e.spec is None
            and tuple(e.leaf.path[:n]) == tuple(path)
            for e in entries
        ):
            unmapped.append(f"{path_str(tuple(path))} (on a {owner})")
    if unmapped:
        raise errors.GraphStructureError(
            f"nnx.{name}: the function added {', '.join(unmapped[:5])} to an "
            f"argument that nnx.{name} does not map (its axis is None), so the "
            "value made inside has no axis to leave on.\nCreate it before the "
            "transform (e.g. in __init__) and only update it inside, or map that "
            "argument.\nlens strict mode reports this (Flax leaks it as a tracer "
            "or fails in JAX)."
        )


def apply_graph_updates(
    entries: list[Entry], new_values: list[Any], changed: Any, outer: list[Any]
) -> list[Any]:
    """Writes the transform's new graph values back to the caller's objects (and
    its new structure, if it changed one); returns the nodes by index."""
    if changed is None:
        write_back(entries, new_values)
        return outer
    after, origin = changed.value
    reuse = {j: outer[i] for j, i in enumerate(origin) if i is not None}
    builder = InPlaceBuilder(iter(new_values), reuse)
    for slot in after.slots:
        if isinstance(slot, GraphSlot):
            builder.build(slot.graphdef)
    return [builder.nodes[j] for j in range(len(builder.nodes))]


def write_back(entries: list[Entry], new_graph_values: list[Any]) -> None:
    leaves = [e.leaf for e in entries if e.leaf is not None]
    for leaf, v in zip(leaves, new_graph_values, strict=True):
        leaf.write(v)


def split_all(args: tuple, name: str) -> tuple[Skeleton, list[Entry], Walker]:
    walker = Walker(diff_resolver, transform=name)
    skel, entries = split_args(args, tuple(DiffSpec(...) for _ in args), walker)
    return skel, entries, walker


def pure_of(
    f: Callable[..., Any], skel: Skeleton, entries: list[Entry], n: int, name: str
) -> Callable[[list[Any]], Any]:
    def pure(values: list[Any]) -> Any:
        with frame(name) as fr:
            args2 = rebuild(skel, values)
            out = f(*args2)
            w2 = Walker(transform=name)
            after, new_entries = split_args(args2, (None,) * n, w2)
            check_structure(skel, after, name)
            w2.frame = fr
            out_c = split_outputs(out, None, w2)
        return out_c, [e.value for e in new_entries if e.leaf is not None]

    return pure


def diff_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, DiffSpec) and (isinstance(x, Variable) or hasattr(x, "dtype")):
        if not to_predicate(spec.filter)(path, x):
            return None
    return spec


def call_inside(
    name: str,
    f: Callable[..., Any],
    skel: Any,
    values: Sequence[Any],
    n_args: int,
    static: frozenset[int] = frozenset(),
    out_spec: Any = None,
) -> tuple[list[Any], Any]:
    """Rebuilds the arguments from ``values``, calls ``f``, and returns the new
    values of their graph leaves and the outputs (objects as carriers)."""
    new, outs, changed = call_changing(name, f, skel, values, n_args, static, out_spec)
    if changed.aux is not None:
        check_structure(skel, changed.aux.value[0], name)
    return new, outs


def call_changing(
    name: str,
    f: Callable[..., Any],
    skel: Any,
    values: Sequence[Any],
    n_args: int,
    static: frozenset[int] = frozenset(),
    out_spec: Any = None,
) -> tuple[list[Any], Any, Carrier]:
    """:func:`call_inside` where the function may change the arguments' structure
    (flax.nnx's graph updates): the third result carries the new structure out
    (``Carrier([], None)`` if unchanged), for :func:`apply_graph_updates`."""
    specs = (None,) * n_args
    table: dict[int, Any] = {}
    with frame(name) as fr:
        args = rebuild(skel, list(values), table)
        out = f(*args)
        w = Walker(transform=name)
        after, entries = split_args(args, specs, w, static)
        changed = changed_structure(skel, after, table, w.nodes)
        w.frame = fr
        outs = split_outputs(out, out_spec, w)
    return [e.value for e in entries if e.leaf is not None], outs, Carrier([], changed)


def lift_args(
    name: str, args: tuple[Any, ...], static: frozenset[int] = frozenset()
) -> tuple[Any, list[Entry], Walker]:
    walker = Walker(transform=name)
    skel, entries = split_args(args, (None,) * len(args), walker, static)
    return skel, entries, walker
