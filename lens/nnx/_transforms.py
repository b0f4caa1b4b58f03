"""JAX-style transforms over eager objects: ``grad``, ``value_and_grad``, ``vmap``
(``jit`` in :mod:`lens.nnx._jit`, loops and branches in :mod:`lens.nnx._control`).

Arguments follow JAX's conventions: ``in_axes`` / ``argnums`` give one spec per
argument, and an object argument is lifted as one pytree would be. The Lift types
refine a spec inside one object: ``StateAxes({Param: 1, BatchStat: None})`` maps
each filter's variables on its own axis; ``DiffState(0, LoRAParam)`` differentiates
argument 0's ``LoRAParam`` variables only.

Each call runs one recipe:

1. walk every object argument once (aliases numbered as such), giving a static
   graph structure and the variables' values, each resolved to its spec;
2. check *consistent aliasing*: a node met twice must get the same spec;
3. call the JAX transform on a pure function of those values, which rebuilds the
   objects, calls the user function, and walks the arguments again to return their
   new values, plus the outputs (an output that is an input must keep its input
   spec; an object captured from outside cannot be returned);
4. write the new values back into the caller's objects, and rebuild the outputs
   (an input returned comes back as the same Python object).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from lens import errors
from lens._argnums import combine, partition
from lens.nnx._filters import to_predicate
from lens.nnx._graph import (
    Builder,
    InPlaceBuilder,
    Leaf,
    Object,
    Param,
    Variable,
    Walker,
    _Static,
    check_graph_modes,
    frame,
    is_graph_node,
    path_str,
)
from lens.nnx._picture import Picture
from lens.nnx._state import State
from lens.traceback_util import api_boundary

# ------------------------------------------------------------------ lift types


class StateAxes:
    """Per-filter axes for one object in ``vmap``'s ``in_axes``/``out_axes``.

    ``StateAxes({Param: 1, BatchStat: None})``: params mapped on axis 1, batch stats
    broadcast. Filters are tried in order; every variable must match one (end with
    ``...: axis`` for the rest).
    """

    _what = "axis"

    def __init__(self, filter_axes: Mapping[Any, Any] | Any):
        items = filter_axes.items() if isinstance(filter_axes, Mapping) else filter_axes
        self.items = tuple(items)
        self._preds = tuple(to_predicate(f) for f, _ in self.items)

    def axis(self, path: tuple, x: Any) -> Any:
        for pred, (_, ax) in zip(self._preds, self.items, strict=True):
            if pred(path, x):
                return ax
        raise ValueError(
            f"{self!r}: no filter matches {path_str(path)} "
            f"({type(x).__name__}); add ...: <{self._what}> for the rest."
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateAxes) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return tuple((repr(f), ax) for f, ax in self.items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{_filter_name(f)}: {ax}" for f, ax in self.items)
        return f"StateAxes({{{inner}}})"


def _filter_name(f: Any) -> str:
    if f is Ellipsis:
        return "..."
    return f.__name__ if isinstance(f, type) else repr(f)


@dataclasses.dataclass(frozen=True)
class DiffState:
    """``argnums`` entry: differentiate argument ``argnum``'s ``filter`` variables."""

    argnum: int
    filter: Any


# -------------------------------------------------------------------- plumbing


class _Graph:
    """An object argument, as a placeholder leaf while the pytree is flattened."""

    __slots__ = ("node",)

    def __init__(self, node: Any):
        self.node = node


def _wrap(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: _Graph(x) if is_graph_node(x) else x, tree, is_leaf=is_graph_node
    )


@dataclasses.dataclass(frozen=True)
class _Skeleton:
    """The static half of the arguments: pytree structure, graph defs, statics."""

    treedef: Any
    slots: tuple[Any, ...]  # per leaf: ("graph", def) | ("leaf",) | ("static", v)


class _Carrier:
    """A pytree of values whose static skeleton rides in the aux data, so jit caches
    on it and vmap/grad hand it back."""

    __slots__ = ("values", "aux", "axes")

    def __init__(self, values: list[Any], aux: Any, axes: Any = None):
        self.values = values
        self.aux = aux
        self.axes = axes  # per value, the out axis to move it to (vmap)


jax.tree_util.register_pytree_node(
    _Carrier,
    lambda c: (c.values, (c.aux, c.axes)),
    lambda aux, values: _Carrier(list(values), *aux),
)


@dataclasses.dataclass
class _Entry:
    """One value of the flattened arguments: its spec, and where it came from."""

    value: Any
    spec: Any
    slot: int  # index into the skeleton's slots
    leaf: Leaf | None  # the walked graph leaf (None: a plain pytree leaf)
    arg: int = 0  # the argument it belongs to


def _split_inputs(
    args: tuple[Any, ...],
    specs: tuple[Any, ...],
    walker: Walker,
    static: frozenset[int] = frozenset(),
) -> tuple[_Skeleton, list[_Entry]]:
    """Walks ``args`` (each with its spec prefix): the static skeleton, and one entry
    per value (graph leaves in walk order, plain leaves in pytree order)."""
    wrapped = _wrap(args)
    is_graph = lambda x: isinstance(x, _Graph)  # noqa: E731
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=is_graph)
    leaf_specs: list[Any] = []
    arg_of_leaf: list[int] = []
    for i, (arg, spec) in enumerate(zip(wrapped, specs, strict=True)):
        n = len(jax.tree.leaves(arg, is_leaf=is_graph))
        leaf_specs += [None] * n if i in static else _broadcast(spec, arg, i)
        arg_of_leaf += [i] * n
    slots: list[Any] = []
    entries: list[_Entry] = []
    counter = [0] * len(args)
    for leaf, spec, i in zip(leaves, leaf_specs, arg_of_leaf, strict=True):
        j = counter[i]
        counter[i] += 1
        if i in static:
            raw = leaf.node if isinstance(leaf, _Graph) else leaf
            slots.append(("static", _Static(raw)))
        elif isinstance(leaf, _Graph):
            start = len(walker.leaves)
            root = ("args", i) if j == 0 else ("args", i, j)
            walker.root_len = len(root)
            d = walker.node(leaf.node, root, spec)
            slots.append(("graph", d, root))
            entries += [
                _Entry(lf.value, lf.spec, len(slots) - 1, lf, i)
                for lf in walker.leaves[start:]
            ]
        else:
            if isinstance(spec, StateAxes):
                raise TypeError(
                    f"StateAxes applies to objects only; argument {i} has a "
                    f"{type(leaf).__name__} there."
                )
            slots.append(("leaf",))
            entries.append(_Entry(leaf, spec, len(slots) - 1, None, i))
    return _Skeleton(treedef, tuple(slots)), entries


def _broadcast(prefix: Any, tree: Any, i: int) -> list[Any]:
    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, StateAxes | _Diff | _Graph)

    out: list[Any] = []

    def expand(p: Any, sub: Any) -> None:
        n = len(jax.tree.leaves(sub, is_leaf=lambda x: isinstance(x, _Graph)))
        out.extend([p] * n)

    try:
        jax.tree.map(expand, prefix, tree, is_leaf=is_leaf)
        return out
    except ValueError as e:
        raise ValueError(
            f"The spec {prefix!r} for argument {i} is not a prefix of it: {e}"
        ) from None


def _rebuild(
    skel: _Skeleton, values: list[Any], table: dict[int, Any] | None = None
) -> tuple[Any, ...]:
    """The arguments rebuilt from ``skel`` and ``values``; ``table``, when given,
    receives node index -> rebuilt object."""
    it = iter(values)
    builder = Builder(it)
    if table is not None:
        builder.nodes = table
    leaves = []
    for slot in skel.slots:
        if slot[0] == "graph":
            leaves.append(builder.build(slot[1]))
        elif slot[0] == "static":
            leaves.append(slot[1].value)
        else:
            leaves.append(next(it))
    return jax.tree.unflatten(skel.treedef, leaves)


def _split_outputs(out: Any, out_spec: Any, walker: Walker) -> Any:
    """The outputs with each object replaced by a carrier of its new leaves."""
    walker.role = "output"
    wrapped = _wrap(out)
    specs = _broadcast(out_spec, wrapped, 0)
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=lambda x: isinstance(x, _Graph))
    new = []
    for j, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        if isinstance(leaf, _Graph):
            start = len(walker.leaves)
            path = ("output",) if len(leaves) == 1 else ("output", j)
            walker.root_len = len(path)
            d = walker.node(leaf.node, path, spec)
            fresh = walker.leaves[start:]
            if fresh and isinstance(spec, StateAxes):
                # a new object with per-filter axes: every leaf leaves the
                # transform on axis 0, and is moved to its own axis after
                axes = tuple(lf.spec for lf in fresh)
                new.append(_Carrier([lf.value for lf in fresh], _Static(d), axes))
                continue
            new.append(_Carrier([lf.value for lf in fresh], _Static(d)))
        else:
            new.append(leaf)
    return jax.tree.unflatten(treedef, new)


def _merge_outputs(out: Any, nodes: list[Any]) -> Any:
    """``out`` with each carrier rebuilt into its object (sharing ``nodes``)."""
    if isinstance(out, jax.Array) or out is None:  # the common case, no walk
        return out
    table = dict(enumerate(nodes))

    def build(x: Any) -> Any:
        if isinstance(x, _Carrier):
            b = Builder(iter(x.values), table)
            obj = b.build(x.aux.value)
            table.update(b.nodes)
            return obj
        return x

    return jax.tree.map(build, out, is_leaf=lambda x: isinstance(x, _Carrier))


def _check_structure(before: _Skeleton, after: _Skeleton, name: str) -> None:
    if before != after:
        raise errors.GraphStructureError(
            f"An argument of nnx.{name} changed structure inside the function (a "
            "variable or submodule was added, removed or replaced, or a static "
            "attribute changed).\nTransforms carry values, not structure: create "
            "submodules and variables before the transform (e.g. in __init__) and "
            "only update their values inside."
        )


def _changed_structure(
    skel: _Skeleton, after: _Skeleton, table: dict[int, Any], nodes: list[Any]
) -> _Static | None:
    """None if the arguments kept their structure; else the new structure and,
    per new node, the index of the old node it is (so the caller's objects are
    updated in place): a new attribute or submodule made inside is applied."""
    if after == skel:
        return None
    index_of = {id(o): i for i, o in table.items()}
    return _Static((after, tuple(index_of.get(id(o)) for o in nodes)))


def _apply_graph_updates(
    entries: list[_Entry], new_values: list[Any], changed: Any, outer: list[Any]
) -> list[Any]:
    """Writes the transform's new graph values back to the caller's objects (and
    its new structure, if it changed one); returns the nodes by index."""
    if changed is None:
        _write_back(entries, new_values)
        return outer
    after, origin = changed.value
    reuse = {j: outer[i] for j, i in enumerate(origin) if i is not None}
    builder = InPlaceBuilder(iter(new_values), reuse)
    for slot in after.slots:
        if slot[0] == "graph":
            builder.build(slot[1])
    return [builder.nodes[j] for j in range(len(builder.nodes))]


def _write_back(entries: list[_Entry], new_graph_values: list[Any]) -> None:
    leaves = [e.leaf for e in entries if e.leaf is not None]
    for leaf, v in zip(leaves, new_graph_values, strict=True):
        leaf.write(v)


def _axes_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, StateAxes):
        return spec.axis(path, x)
    return spec


# ------------------------------------------------------------------------ grad


class _Diff:
    """The grad spec of an argument: differentiate its ``filter`` variables."""

    __slots__ = ("filter",)

    def __init__(self, filter: Any):
        self.filter = filter

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Diff) and _Static(self.filter) == _Static(
            other.filter
        )

    def __hash__(self) -> int:
        return hash(_Static(self.filter))

    def __repr__(self) -> str:
        return f"a gradient (filter {_filter_name(self.filter)})"


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
        return Param if isinstance(arg, Object) else ...
    return f


def _diff_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, _Diff) and (isinstance(x, Variable) or hasattr(x, "dtype")):
        if not to_predicate(spec.filter)(path, x):
            return None
    return spec


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
    check_graph_modes("value_and_grad", graph, graph_updates)
    if f is None:
        return functools.partial(
            value_and_grad,
            argnums=argnums,
            has_aux=has_aux,
            holomorphic=holomorphic,
            allow_int=allow_int,
            reduce_axes=reduce_axes,
        )
    if reduce_axes:
        raise TypeError(
            f"nnx.value_and_grad(reduce_axes={tuple(reduce_axes)!r}): JAX removed "
            "reduce_axes from its transforms.\nReduce the loss over those axes "
            "yourself (e.g. jax.lax.psum inside shard_map)."
        )
    diff, single = _normalize_argnums(argnums)
    diff_of = dict(diff)

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        if diff_of and max(diff_of) >= len(args):
            n = max(diff_of)
            raise TypeError(  # JAX's class and first sentence
                f"differentiating with respect to argnums={n} requires at least "
                f"{n + 1} positional arguments to be passed by the caller, but got "
                f"only {len(args)} positional arguments.\nnnx.grad: argnums count "
                "from 0; pass the missing arguments or a smaller argnums."
            )
        specs = tuple(
            _Diff(_filter_for(diff_of[i], args[i])) if i in diff_of else None
            for i in range(len(args))
        )
        walker = Walker(_diff_resolver, describe=_describe_grad, transform="grad")
        skel, entries = _split_inputs(args, specs, walker)
        held = [e.spec is None for e in entries]  # not differentiated
        diff_vals, rest_vals = partition([e.value for e in entries], held)

        def pure(diff_vals: list[Any], rest: _Carrier) -> Any:
            merged = combine(diff_vals, rest.values, held)
            table: dict[int, Any] = {}
            with frame("grad") as fr:
                args2 = _rebuild(skel, merged, table)
                out = f(*args2)
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise TypeError(
                            "nnx.grad(has_aux=True): the function must return "
                            "(value, aux)."
                        )
                    value, aux = out
                else:
                    value, aux = out, None
                w2 = Walker(_diff_resolver, describe=_describe_grad, transform="grad")
                after, new_entries = _split_inputs(args2, specs, w2)
                changed = _changed_structure(skel, after, table, w2.nodes)
                w2.frame = fr
                aux_out = _split_outputs(aux, None, w2)
            new_graph = [e.value for e in new_entries if e.leaf is not None]
            return value, (new_graph, aux_out, _Carrier([], changed))

        with Picture("grad", {"argnums": argnums, "has_aux": has_aux}) as picture:
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
            )(diff_vals, _Carrier(rest_vals, None))
        nodes = _apply_graph_updates(entries, new_graph, changed.aux, walker.nodes)
        if changed.aux is None:
            picture.outputs(new_graph)
        aux = _merge_outputs(aux_out, nodes)
        grad_of = combine(grads, [None] * sum(held), held)
        g = [_arg_grads(args, skel, entries, grad_of, i) for i, _ in diff]
        g = g[0] if single else tuple(g)
        return ((value, aux), g) if has_aux else (value, g)

    return wrapper


def _arg_grads(
    args: tuple, skel: _Skeleton, entries: list[_Entry], grad_of: list[Any], i: int
) -> Any:
    """Argument ``i``'s gradient: its pytree, each object replaced by a State."""
    n_before = len(
        jax.tree.leaves(_wrap(args[:i]), is_leaf=lambda x: isinstance(x, _Graph))
    )
    wrapped = _wrap(args[i])
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=lambda x: isinstance(x, _Graph))
    out = []
    for j, leaf in enumerate(leaves):
        slot = n_before + j
        mine = [(e, g) for e, g in zip(entries, grad_of, strict=True) if e.slot == slot]
        if isinstance(leaf, _Graph):
            root = skel.slots[slot][2]
            flat = {
                e.leaf.path[len(root) :]: (
                    e.leaf.variable.replace(g) if e.leaf.variable is not None else g
                )
                for e, g in mine
                if g is not None and e.leaf is not None  # graph slots hold leaves
            }
            if isinstance(leaf.node, Variable):  # a variable in a pytree (a State)
                out.append(flat.get((), None))
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
    check_graph_modes("grad", graph, graph_updates)
    if f is None:
        return functools.partial(
            grad,
            argnums=argnums,
            has_aux=has_aux,
            holomorphic=holomorphic,
            allow_int=allow_int,
            reduce_axes=reduce_axes,
        )
    vg = value_and_grad(
        f,
        argnums=argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
        allow_int=allow_int,
        reduce_axes=reduce_axes,
    )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        value_aux, g = vg(*args)
        return (g, value_aux[1]) if has_aux else g

    return wrapper


__all__ = ["DiffState", "StateAxes", "grad", "value_and_grad"]
