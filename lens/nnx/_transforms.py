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
import jax.numpy as jnp

from lens import errors
from lens.core._freeze import FrozenDict
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
from lens.nnx._spmd import PARTITION_NAME, add_axis, remove_axis
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
        is_diff = [e.spec is not None for e in entries]
        diff_vals = [e.value for e in entries if e.spec is not None]
        rest_vals = [e.value for e in entries if e.spec is None]

        def pure(diff_vals: list[Any], rest: _Carrier) -> Any:
            it_d, it_r = iter(diff_vals), iter(rest.values)
            merged = [next(it_d) if d else next(it_r) for d in is_diff]
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

        (value, (new_graph, aux_out, changed)), grads = jax.value_and_grad(
            pure, argnums=0, has_aux=True, holomorphic=holomorphic, allow_int=allow_int
        )(diff_vals, _Carrier(rest_vals, None))
        nodes = _apply_graph_updates(entries, new_graph, changed.aux, walker.nodes)
        aux = _merge_outputs(aux_out, nodes)
        g_it = iter(grads)
        grad_of = [next(g_it) if d else None for d in is_diff]
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


# ------------------------------------------------------------------------ vmap

_NO_METADATA: Mapping[str, Any] = FrozenDict({})


class _AxisNames:
    """``transform_metadata={nnx.PARTITION_NAME: name}``: inside the transform,
    ``name`` is taken out of the ``out_sharding`` of every variable mapped on an
    axis; on the way out it is put back, and put into new objects' variables at
    their out axis (so a stack built by vmap says which axis is the stack)."""

    def __init__(self, name: str, transform_metadata: Mapping[str, Any]):
        self.name = name
        self.meta = transform_metadata if PARTITION_NAME in transform_metadata else None
        if transform_metadata and self.meta is None:
            raise ValueError(
                f"nnx.{name}(transform_metadata={dict(transform_metadata)!r}) names no "
                "axis.\nGive transform_metadata={nnx.PARTITION_NAME: 'axis name'}."
            )

    def enter(self, args: tuple, specs: tuple) -> list[tuple[Any, int]]:
        if self.meta is None:
            return []
        w = Walker(_axes_resolver, transform=self.name)
        _, entries = _split_inputs(args, specs, w)
        done = []
        for e in entries:
            if e.leaf is None or e.leaf.variable is None or not _is_axis(e.spec):
                continue
            v = e.leaf.variable
            remove_axis(v, e.spec, self.meta, path_str(e.leaf.path))
            done.append((v, e.spec))
        return done

    def exit(
        self, done: list[tuple[Any, int]], out: Any, out_spec: Any, fr: Any
    ) -> None:
        if self.meta is None:
            return
        seen = set()
        for v, axis in done:
            add_axis(v, axis, self.meta)
            seen.add(id(v))
        w = Walker(_axes_resolver, transform=self.name)
        w.frame = fr
        _split_outputs(out, out_spec, w)
        for lf in w.leaves:
            if lf.variable is not None and id(lf.variable) not in seen:
                if _is_axis(lf.spec):
                    add_axis(lf.variable, lf.spec, self.meta)
                seen.add(id(lf.variable))


def _is_axis(spec: Any) -> bool:
    return isinstance(spec, int) and not isinstance(spec, bool)


def vmap(
    f: Callable[..., Any] | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
    transform_metadata: Mapping[str, Any] = _NO_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.vmap`` for functions of objects, with JAX's ``in_axes`` conventions.

    An object argument is mapped as a pytree would be: ``in_axes=(1, 0)`` maps the
    first object's variables on axis 1 and the second's on axis 0;
    ``StateAxes({filter: axis, ...})`` gives per-filter axes. Argument objects'
    updates come back on their input axes; objects created inside are returned
    stacked on ``out_axes``. Aliases must be consistent
    (:class:`~lens.errors.InconsistentAliasingError`).
    """
    check_graph_modes("vmap", graph, graph_updates)
    axis_names = _AxisNames("vmap", transform_metadata)
    if f is None:
        return functools.partial(
            vmap,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
            transform_metadata=transform_metadata,
        )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        specs = _per_argument("vmap", "in_axes", in_axes, args)
        walker = Walker(_axes_resolver, describe=_describe_axes, transform="vmap")
        skel, entries = _split_inputs(args, specs, walker)
        graph_axes = [e.spec for e in entries if e.leaf is not None]
        _check_ranks(entries)
        if axis_size is None:
            _check_sizes(entries)

        new_values, outs = jax.vmap(
            _mapped_body("vmap", f, skel, specs, out_axes, _describe_axes, axis_names),
            in_axes=(_Carrier([e.spec for e in entries], None),),
            out_axes=(graph_axes, _strip_state_axes(out_axes)),
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
        )(_Carrier([e.value for e in entries], None))
        _write_back(entries, new_values)
        return _merge_outputs(_place_state_axes(outs), walker.nodes)

    return wrapper


def pmap(
    f: Callable[..., Any] | None = None,
    *,
    axis_name: Any = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence[Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | Sequence[int] = (),
    global_arg_shapes: Any = None,
    transform_metadata: Mapping[str, Any] = _NO_METADATA,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.pmap`` for functions of objects, with ``vmap``'s ``in_axes`` rules:
    each object's variables are split over the devices on their axis (``None``:
    replicated), and updates come back the same way."""
    check_graph_modes("pmap", graph, graph_updates)
    axis_names = _AxisNames("pmap", transform_metadata)
    if global_arg_shapes is not None:
        raise TypeError("nnx.pmap: global_arg_shapes was removed from jax.pmap.")
    if static_broadcasted_argnums or donate_argnums:
        raise NotImplementedError(
            "nnx.pmap(static_broadcasted_argnums=..., donate_argnums=...) is not "
            "supported by lens.nnx.\nClose over static values instead, or use "
            "nnx.shard_map / nnx.jit with shardings."
        )
    if f is None:
        return functools.partial(
            pmap,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
            transform_metadata=transform_metadata,
        )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        specs = _per_argument("pmap", "in_axes", in_axes, args)
        walker = Walker(_axes_resolver, describe=_describe_axes, transform="pmap")
        skel, entries = _split_inputs(args, specs, walker)
        graph_axes = [e.spec for e in entries if e.leaf is not None]
        _check_ranks(entries)
        if any(
            isinstance(s, StateAxes)
            for s in jax.tree.leaves(
                out_axes, is_leaf=lambda x: isinstance(x, StateAxes)
            )
        ):
            raise NotImplementedError(
                "nnx.pmap: StateAxes in out_axes is not supported; use nnx.vmap."
            )
        new_values, outs = jax.pmap(
            _mapped_body("pmap", f, skel, specs, out_axes, _describe_axes, axis_names),
            axis_name=axis_name,
            in_axes=(_Carrier([e.spec for e in entries], None),),
            out_axes=(graph_axes, out_axes),
            devices=devices,
            backend=backend,
            axis_size=axis_size,
        )(_Carrier([e.value for e in entries], None))
        _write_back(entries, new_values)
        return _merge_outputs(outs, walker.nodes)

    return wrapper


def _per_argument(name: str, option: str, spec: Any, args: tuple) -> tuple:
    """One spec per positional argument: a tuple as given, or one spec for all."""
    specs = spec if isinstance(spec, tuple) else (spec,) * len(args)
    if len(specs) != len(args):
        raise ValueError(
            f"nnx.{name}: {option} has {len(specs)} entries for {len(args)} "
            f"arguments.\nGive one {option} entry per positional argument, as a tuple."
        )
    return specs


def _mapped_body(
    name: str,
    f: Callable[..., Any],
    skel: _Skeleton,
    specs: tuple,
    out_spec: Any,
    describe: Callable[[Any], str],
    axis_names: _AxisNames | None = None,
) -> Callable[[_Carrier], Any]:
    """The pure function a transform with per-argument specs (vmap, shard_map)
    maps: it rebuilds the arguments, calls ``f``, and returns the arguments' new
    graph values and the outputs (new objects as carriers)."""

    def pure(carrier: _Carrier) -> Any:
        with frame(name) as fr:
            args = _rebuild(skel, carrier.values)
            done = axis_names.enter(args, specs) if axis_names else []
            out = f(*args)
            if axis_names:
                axis_names.exit(done, out, out_spec, fr)
            w = Walker(_axes_resolver, describe=describe, transform=name)
            after, entries = _split_inputs(args, specs, w)
            _check_structure(skel, after, name)
            w.frame = fr
            outs = _split_outputs(out, out_spec, w)
        return [e.value for e in entries if e.leaf is not None], outs

    return pure


def _check_ranks(entries: list[_Entry]) -> None:
    for e in entries:
        if e.leaf is None or not isinstance(e.spec, int):
            continue
        ndim = len(getattr(e.value, "shape", ()))
        if not -ndim <= e.spec < max(ndim, 1) or ndim == 0:
            kind = (
                type(e.leaf.variable).__name__
                if e.leaf.variable is not None
                else "array"
            )
            raise ValueError(
                f"nnx.vmap cannot map {path_str(e.leaf.path)} ({kind}, shape "
                f"{tuple(getattr(e.value, 'shape', ()))}) on axis {e.spec}.\nGive "
                f"that module a StateAxes, e.g. StateAxes({{{kind}: None, ...: "
                f"{e.spec}}}) to broadcast it."
            )


def _entry_name(e: _Entry) -> str:
    if e.leaf is not None:
        kind = (
            type(e.leaf.variable).__name__ if e.leaf.variable is not None else "array"
        )
        return f"{path_str(e.leaf.path)} ({kind})"
    return f"an array in args[{e.arg}]"


def _check_sizes(entries: list[_Entry]) -> None:
    """All mapped values must agree on the mapped size; name two that do not."""
    first: tuple[int, _Entry] | None = None
    for e in entries:
        if not isinstance(e.spec, int) or not hasattr(e.value, "shape"):
            continue
        shape = e.value.shape
        if not -len(shape) <= e.spec < len(shape):
            continue  # jax.vmap reports it
        size = shape[e.spec]
        if first is None:
            first = (size, e)
        elif size != first[0]:
            a = first[1]
            raise ValueError(
                "nnx.vmap got inconsistent sizes for the mapped axes: "
                f"{_entry_name(a)} has size {first[0]} on axis {a.spec}, "
                f"{_entry_name(e)} has size {size} on axis {e.spec}.\nMap values "
                "of one size; give broadcast ones the axis None (in_axes, or a "
                "StateAxes for a module's variables)."
            )


def _describe_axes(spec: Any) -> str:
    return f"axis {spec!r}"


def _place_state_axes(out: Any) -> Any:
    """Moves the values of new objects returned under a StateAxes to their axes
    (they left ``jax.vmap`` on axis 0; a ``None`` axis keeps one copy)."""

    def place(c: Any) -> Any:
        if not isinstance(c, _Carrier) or c.axes is None:
            return c
        values = [
            v[0] if ax is None else jnp.moveaxis(v, 0, ax)
            for v, ax in zip(c.values, c.axes, strict=True)
        ]
        return _Carrier(values, c.aux)

    return jax.tree.map(place, out, is_leaf=lambda x: isinstance(x, _Carrier))


def _strip_state_axes(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: 0 if isinstance(x, StateAxes) else x,
        tree,
        is_leaf=lambda x: x is None or isinstance(x, StateAxes),
    )


__all__ = ["DiffState", "StateAxes", "grad", "value_and_grad", "vmap"]
