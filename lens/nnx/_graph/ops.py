"""The object-graph operations that :mod:`lens.nnx.graphlib` (flax.nnx's
``graphlib``, also importable as ``graph``) exports: ``split``/``merge``/``state``/``update``/``clone``/``graphdef``, ``iter_graph``,
``pop``, ``variables``, ``flatten``/``unflatten``, ``find_duplicates``,
``recursive_map``, ``set_metadata``, ``call`` and ``cached_partial``.

The walk they share (GraphDef, Walker, Builder) is in :mod:`lens.nnx._graph.walk`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp

from lens import _strict, errors
from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import GraphDef, TreeNodeDef
from lens.nnx._graph.graph_state import GraphState
from lens.nnx._graph.mode import set_graph_mode, set_graph_updates
from lens.nnx._graph.tree import tree_flatten, tree_map_nodes, tree_unflatten, walk_tree
from lens.nnx._graph.walk import (
    ArrayDef,
    Builder,
    Path,
    StaticDef,
    VariableDef,
    Walker,
    is_graph_node,
    path_str,
)
from lens.nnx._graph.walk import _key_of as key_of
from lens.nnx._objects.object import Pytree, node_items
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.state import FlatState, State, map_state, partition_flat
from lens.nnx._variables.variable import Variable


def _walk(node: Any) -> tuple[Any, Walker]:
    w = Walker()
    d = w.node(node, ())
    return d, w


def _graph(graph: bool | None) -> bool:
    """The mode a call runs in: its ``graph=`` argument, else the context's
    (``nnx.set_graph_mode``)."""
    return set_graph_mode.current_value() if graph is None else bool(graph)


def _leaf_value(leaf: Any) -> Any:
    return leaf.variable if leaf.variable is not None else leaf.value


def _flat_state(node: Any, graph: bool | None) -> tuple[GraphDef, dict[Path, Any]]:
    """``(graphdef, {path: Variable or value})``: the node's own Variables (not
    copies), as flax.nnx's split and state give them."""
    if not _graph(graph):
        gdef, flat = tree_flatten(node)
        return gdef, dict(flat)
    d, w = _walk(node)
    if isinstance(d, StaticDef):  # a plain leaf (42) is its own state, as in flax
        return GraphDef(node=ArrayDef(), paths=((),)), {(): node}
    gdef = GraphDef(node=d, paths=tuple(leaf.path for leaf in w.leaves))
    flat = {leaf.path: _leaf_value(leaf) for leaf in w.leaves}
    if _strict.enabled():  # what merge checks a state against (case 4)
        object.__setattr__(gdef, "_leaf_shapes", {p: _kind(v) for p, v in flat.items()})
    return gdef, flat


def as_state(flat: dict[Path, Any]) -> Any:
    """A State of ``flat``; the leaf itself when the node is a leaf (path ())."""
    if () in flat:
        return flat[()]
    return State.from_flat_state(flat)


def split(node: Any, *filters: Any, graph: bool | None = None) -> tuple[Any, ...]:
    """``graphdef, state`` (or ``graphdef, state_1, ..., state_n`` with filters).

    Every variable must be selected by one of the filters (the first that matches);
    end with ``...`` to collect the rest. As in flax.nnx the states hold the
    node's own Variables: ``merge`` puts them back, ``nnx.update`` writes values.
    With ``graph=False`` (tree mode) the node is flattened as a pytree and a
    shared Variable is a ``ValueError``.
    """
    gdef, flat = _flat_state(node, graph)
    parts = partition_flat(flat, filters, exhaustive=True)
    return (gdef, *(as_state(p) for p in parts))


def graphdef(node: Any, /, *, graph: bool | None = None) -> GraphDef:
    """The static structure of ``node``'s graph."""
    return _flat_state(node, graph)[0]


def state(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """``node``'s variables as a :class:`State` (one per filter when filters are given).

    Unlike ``split``, the filters need not select every variable.
    """
    _, flat = _flat_state(node, graph)
    if not filters:
        return as_state(flat)
    parts = partition_flat(flat, filters, exhaustive=False)
    states = tuple(as_state(p) for p in parts)
    return states[0] if len(states) == 1 else states


def merge(
    graphdef_or_graphstate: Any,
    /,
    *states: Any,
    copy: bool = False,
    recreate_variables: bool = True,
) -> Any:
    """A new object graph with ``graphdef``'s structure and the states' values.

    As in flax.nnx the states' Variables become the new graph's (``copy=True``
    puts copies in instead). A state may be a :class:`State`, a FlatState, or a
    flat list of leaves in state order (``jax.tree.leaves(state)``).
    """
    if isinstance(graphdef_or_graphstate, tuple):  # (graphdef, state)
        graphdef_or_graphstate, *more = graphdef_or_graphstate
        states = (*more, *states)
    graphdef, states = _graphdef_and_states(graphdef_or_graphstate, states)
    if _strict.enabled():
        _check_merge(graphdef, states, note_sharing=not copy)
    leaves = graphdef_leaves(graphdef, states)
    if isinstance(graphdef.node, TreeNodeDef):
        return tree_unflatten(graphdef, leaves, copy_variables=copy)
    leaves = [v.copy() if copy and isinstance(v, Variable) else v for v in leaves]
    builder = VariableBuilder(iter(leaves))
    builder.recreate = recreate_variables
    return builder.build(graphdef.node)


def _kind(v: Any) -> tuple[type | None, tuple[int, ...] | None]:
    """A leaf's Variable type (None for a plain value) and shape."""
    raw = v._raw_value if isinstance(v, Variable) else v
    shape = getattr(raw, "shape", None)
    return (v.type if isinstance(v, Variable) else None), (
        None if shape is None else tuple(shape)
    )


def _check_merge(
    graphdef: GraphDef, states: tuple[Any, ...], note_sharing: bool
) -> None:
    """Strict mode: a state that is not ``graphdef``'s (another model's: paths
    the graphdef has no place for, Variables of another type, other shapes)
    raises; a State merged a second time, so that two graphs share its
    Variables, warns. flax.nnx merges all of these silently."""
    if not states:
        return
    flat: dict[Path, Any] = {}
    for s in states:
        flat.update(_flat(s, graphdef))
    paths = set(graphdef.paths)
    extra = [p for p in flat if p not in paths]
    fix = (
        "Merge a graphdef with the states split with it (graphdef, state = "
        "nnx.split(model)), or build a model of the state's shapes."
    )
    strict_line = "lens strict mode reports this (Flax merges silently)."
    if extra:
        raise errors.GraphStructureError(
            f"merge: the state has {len(extra)} leaves that the graphdef of a "
            f"{_node_type(graphdef)} has no place for: "
            f"{', '.join(path_str(p) for p in extra[:5])}.\n{fix}\n{strict_line}"
        )
    for p, (vtype, shape) in (graphdef._leaf_shapes or {}).items():
        if p not in flat:
            continue  # merge itself says which leaves are missing
        got_type, got_shape = _kind(flat[p])
        if vtype is not None and got_type is not None and got_type is not vtype:
            raise errors.GraphStructureError(
                f"merge: {path_str(p)} is a {got_type.__name__} in the state, a "
                f"{vtype.__name__} in the graphdef of a {_node_type(graphdef)}."
                f"\n{fix}\n{strict_line}"
            )
        if shape is not None and got_shape is not None:
            n = min(len(shape), len(got_shape))  # stacked states add leading axes
            if shape[len(shape) - n :] != got_shape[len(got_shape) - n :]:
                raise errors.GraphStructureError(
                    f"merge: {path_str(p)} has shape {got_shape} in the state; the "
                    f"graphdef of a {_node_type(graphdef)} was split with "
                    f"{shape}.\n{fix}\n{strict_line}"
                )
    if not note_sharing:
        return
    for s in states:
        if isinstance(s, GraphState):
            s = s._state
        if not isinstance(s, State) or not any(
            isinstance(v, Variable) for v in s._flat_dict().values()
        ):
            continue
        if s.__dict__.get("_lens_merged"):
            _strict.warn(
                errors.StrictModeWarning(
                    f"merge: this State was merged before, so the new "
                    f"{_node_type(graphdef)} shares its Variables with the graph "
                    "merged then (an update to one changes the other).\nPass "
                    "copy=True (nnx.merge(graphdef, state, copy=True)) for an "
                    "independent model, or nnx.clone(model)."
                )
            )
        object.__setattr__(s, "_lens_merged", True)


def _node_type(graphdef: GraphDef) -> str:
    return getattr(getattr(graphdef.node, "type", None), "__name__", "graph")


def graphdef_leaves(graphdef: GraphDef, states: tuple[Any, ...]) -> list[Any]:
    """The leaves ``merge`` puts into ``graphdef``, in its order, from States,
    FlatStates or lists of leaves.

    Raises:
        GraphStructureError: a leaf of ``graphdef`` is in none of the states.
    """
    if not states:
        raise TypeError("merge() missing 1 required positional argument: 'state'")
    flat: dict[Path, Any] = {}
    for s in states:
        flat.update(_flat(s, graphdef))
    missing = [p for p in graphdef.paths if p not in flat]
    if missing:
        raise errors.GraphStructureError(
            f"Incorrect number of leaves, expected {graphdef.num_leaves} leaves, "
            f"but got {len(flat)}.\n"
            "merge: the states have no value for "
            + ", ".join(path_str(p) for p in missing[:5])
            + ".\nPass every state that split returned."
        )
    if len(flat) != len(graphdef.paths):  # values the graph has no place for
        known = set(graphdef.paths)
        extra = [p for p in flat if p not in known]
        raise errors.GraphStructureError(
            f"Incorrect number of leaves, expected {graphdef.num_leaves} leaves, "
            f"but got {len(flat)}.\nmerge: the states have values that the "
            "graphdef has no place for: "
            + ", ".join(path_str(p) for p in extra[:5])
            + ".\nMerge a graphdef with the states split returned with it."
        )
    return [flat[p] for p in graphdef.paths]


def _graphdef_and_states(
    first: Any, states: tuple[Any, ...]
) -> tuple[GraphDef, tuple[Any, ...]]:
    """merge's arguments as ``(graphdef, states)``: a GraphDef then States, or
    GraphStates (``nnx.unpack``'s) that all carry the same GraphDef."""
    if isinstance(first, GraphState):
        graphdef = first._graphdef
        for gs in (first, *states):
            if not isinstance(gs, GraphState):
                raise ValueError(
                    f"Expected GraphState object, got {type(gs)}\nAfter a "
                    "GraphState, pass the other GraphStates nnx.unpack returned."
                )
            if gs._graphdef != graphdef:
                raise ValueError(
                    "GraphDef must be the same for all GraphState objects\n"
                    "Merge GraphStates that came from one nnx.unpack call."
                )
        return graphdef, tuple(gs._state for gs in (first, *states))
    if not isinstance(first, GraphDef):
        raise TypeError(
            f"Expected a GraphDef or GraphState object, got: {first!r}\n"
            "Pass the graphdef that nnx.split returned, or nnx.unpack's GraphState."
        )
    return first, states


def unpack(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """``split`` with the GraphDef bundled into each State: one
    :class:`GraphState` (no or one filter) or a tuple of them; ``nnx.merge``
    takes them back."""
    graphdef, *states = split(node, *filters, graph=graph)
    if len(states) == 1:
        return GraphState(graphdef, states[0])
    return tuple(GraphState(graphdef, st) for st in states)


def map(  # noqa: A001 - Flax's name
    f: Callable[[tuple, Any], Any],
    node: A,
    /,
    *,
    graph: bool | None = None,
    recreate_variables: bool = True,
) -> A:
    """A new node whose state is ``f(path, variable)`` of ``node``'s (split,
    ``map_state``, merge): ``nnx.map(lambda p, v: v.replace(jnp.zeros_like(v)),
    model)``."""
    graphdef, st = split(node, graph=graph)
    st = map_state(f, st) if isinstance(st, State) else f((), st)
    return merge(graphdef, st, recreate_variables=recreate_variables)


class VariableBuilder(Builder):
    """Rebuilds a graph, putting the given Variables in (as flax.nnx's merge
    does) where a leaf is a Variable of the right type, else a new Variable
    (``recreate = False``: the leaf itself, as ``recreate_variables=False``)."""

    recreate = True

    def build(self, d: Any) -> Any:
        if isinstance(d, VariableDef):
            leaf = next(self.values)
            if not self.recreate and not isinstance(leaf, Variable):
                self.variable_built(d, leaf, leaf)
                return leaf
            if isinstance(leaf, Variable) and leaf.type is d.type:
                self.variable_built(d, leaf, leaf._raw_value)
                return leaf
            self.values = itertools.chain([_raw(leaf)], self.values)
        return super().build(d)


def _flat(s: Any, graphdef: GraphDef | None = None) -> dict[Path, Any]:
    if isinstance(s, GraphState):
        s = s._state
    if isinstance(s, FlatState):
        return dict(s)
    if graphdef is not None and graphdef.paths == ((),) and not isinstance(s, State):
        return {(): s}  # the state of a leaf is the leaf
    if isinstance(s, State):
        return s._flat_dict()
    if isinstance(s, list | tuple) and graphdef is not None:
        return _flat_from_leaves(list(s), graphdef)
    if not isinstance(s, Mapping):  # a bare value is one leaf, as flax counts it
        return {(): s}
    return State(s)._flat_dict()


def _raw(v: Any) -> Any:
    return v._raw_value if isinstance(v, Variable) else v


def _flat_from_leaves(leaves: list[Any], graphdef: GraphDef) -> dict[Path, Any]:
    """``jax.tree.leaves(state)`` back to paths: the leaves come in the State's
    pytree order, which the State of the paths itself gives."""
    paths = graphdef.paths
    if len(leaves) != len(paths):
        raise errors.GraphStructureError(
            f"Incorrect number of leaves, expected {len(paths)} leaves, but got "
            f"{len(leaves)}.\nmerge: pass jax.tree.leaves(state) of the state that "
            "split returned."
        )
    order = jax.tree.leaves(State.from_flat_state({p: i for i, p in enumerate(paths)}))
    return {paths[i]: leaf for i, leaf in zip(order, leaves, strict=True)}


def clone(
    node: Any,
    variables: bool = True,
    *,
    arrays: bool = False,
    graph: bool | None = None,
) -> Any:
    """A deep copy of ``node``'s graph (sharing inside it preserved).

    Args:
      node: the object to copy.
      variables: new ``Variable`` objects (default), or ``False`` to share the
        original's variables between both graphs.
      arrays: also copy the array buffers (for ``jit(donate_argnums=...)``;
        otherwise the clone's variables hold the same arrays).
      graph: Flax's graph-mode switch (lens has one mode; see ``check_graph_modes``).
    """
    if arrays and not variables:
        raise ValueError(
            "If arrays is True, variables should be also True\nCopying the buffers "
            "needs new variables to hold them: pass variables=True."
        )
    if not _graph(graph):
        gdef, flat = tree_flatten(node)
        leaves = [leaf for _, leaf in flat]
        if arrays:
            leaves = [jax.tree.map(jnp.copy, leaf) for leaf in leaves]
        return tree_unflatten(gdef, leaves, copy_variables=variables)
    d, w = _walk(node)
    values = [leaf.value for leaf in w.leaves]
    if arrays:
        values = [jnp.copy(v) for v in values]
    if variables:
        return Builder(iter(values)).build(d)
    return _SharingBuilder(iter(values), dict(enumerate(w.nodes))).build(d)


class _SharingBuilder(Builder):
    """Rebuilds the objects but hands back the original ``Variable`` objects."""

    def __init__(self, values: Iterator[Any], originals: dict[int, Any]):
        super().__init__(values)
        self.originals = originals

    def build(self, d: Any) -> Any:
        if isinstance(d, VariableDef):
            value = next(self.values)
            self.variable_built(d, self.originals[d.index], value)
            return self.originals[d.index]
        return super().build(d)


def iter_graph(
    node: Any, /, *, graph: bool | None = None
) -> Iterator[tuple[Path, Any]]:
    """Yields ``(path, x)`` for every object, variable and attribute value of the
    graph, each node once, children before their parent (as flax.nnx does)."""
    if not _graph(graph):
        yield from (
            (p, x) for p, x, _ in walk_tree(node, "iter_graph") if p or x is node
        )
        return
    seen: set[int] = set()

    def go(x: Any, path: Path) -> Iterator[tuple[Path, Any]]:
        # As flax.nnx: every node (an object, a Variable, or a pytree container:
        # a tuple, list, dict, None, a registered dataclass) once, by identity,
        # after its children; every other value (a leaf) wherever it is.
        if isinstance(x, Pytree | Variable):
            if id(x) in seen:
                return
            seen.add(id(x))
            if isinstance(x, Pytree):
                for k, v in node_items(x):
                    yield from go(v, path + (k,))
            yield path, x
            return
        if type(x) in (list, tuple):
            children: Any = enumerate(x)
        elif type(x) is dict:
            children = x.items()
        elif x is None or not jax.tree_util.treedef_is_leaf(
            jax.tree_util.tree_structure(x)
        ):
            flat, _ = jax.tree_util.tree_flatten_with_path(
                x, is_leaf=lambda y: y is not x
            )
            children = [(key_of(p[0]), v) for p, v in flat]
        else:
            yield path, x
            return
        if id(x) in seen:
            return
        seen.add(id(x))
        for k, e in children:
            yield from go(e, path + (k,))
        yield path, x

    yield from go(node, ())


A = TypeVar("A")


def _one_or_many(states: tuple[Any, ...]) -> Any:
    return states[0] if len(states) == 1 else states


def variables(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """The State of ``node``'s variables themselves (not copies): changing a
    value in it changes the model (as flax.nnx's ``variables``)."""
    flat = {p: v for p, v in iter_graph(node, graph=graph) if isinstance(v, Variable)}
    if not filters:
        return State.from_flat_state(flat)
    preds = [to_predicate(f) for f in filters]
    parts: list[dict[Path, Any]] = [{} for _ in preds]
    for p, v in flat.items():
        for part, pred in zip(parts, preds, strict=True):
            if pred(p, v):
                part[p] = v
                break
    return _one_or_many(tuple(State.from_flat_state(part) for part in parts))


def set_metadata(node: Any, /, *, only: Any = Variable, **metadata: Any) -> None:
    """Sets ``metadata`` on every variable of ``node`` matching ``only``."""
    pred = to_predicate(only)
    for path, v in iter_graph(node):
        if isinstance(v, Variable) and pred(path, v):
            v.set_metadata(**metadata)


def find_duplicates(node: Any, /, *, only: Any = ...) -> list[list[Path]]:
    """Groups of paths that reach the same object or variable (shared nodes)."""
    pred = to_predicate(only)
    paths: dict[int, list[Path]] = {}

    def go(x: Any, path: Path) -> None:
        if isinstance(x, Pytree | Variable):
            first = id(x) not in paths
            if pred(path, x):
                paths.setdefault(id(x), []).append(path)
            if first and isinstance(x, Pytree):
                for k, v in node_items(x):
                    go(v, path + (k,))
        elif type(x) in (list, tuple):
            for j, e in enumerate(x):
                go(e, path + (j,))
        elif type(x) is dict:
            for k, e in x.items():
                go(e, path + (k,))

    go(node, ())
    return [p for p in paths.values() if len(p) > 1]


def recursive_map(
    f: Callable[[Path, Any], Any], node: Any, /, *, graph: bool | None = None
) -> Any:
    """A copy of ``node`` in which every object, variable and leaf ``x`` at ``path``
    is replaced by ``f(path, x)`` (children first)."""
    if not _graph(graph):
        return tree_map_nodes(f, node)
    out = clone(node)
    done: dict[int, Any] = {}

    def go(x: Any, path: Path) -> Any:
        if isinstance(x, Pytree):
            if id(x) in done:
                return done[id(x)]
            for k, v in node_items(x):
                new = go(v, path + (k,))
                if new is not v:
                    x._graph_set(k, new)
            result = f(path, x)
            done[id(x)] = result
            return result
        if type(x) in (list, tuple):  # plain containers: walked into, as pytrees
            return f(path, type(x)(go(v, path + (i,)) for i, v in enumerate(x)))
        if type(x) is dict:
            return f(path, {k: go(v, path + (k,)) for k, v in x.items()})
        return f(path, x)

    return go(out, ())


def cached_partial(
    f: Callable[..., Any],
    *cached_args: Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Callable[..., Any]:
    """``f`` with ``cached_args`` bound first, as flax.nnx's: the graph nodes
    among them are cloned once, the clones sharing the originals' Variables
    (sharing between the arguments kept), and every call passes the clones.
    Value updates made by ``f`` reach the originals through those Variables;
    lens.nnx transforms reuse their cached walk of the clones while their
    structure is unchanged.

    Raises:
        ValueError: tree mode or ``graph_updates=False`` (a graph-mode API).
    """
    updates = (
        set_graph_updates.current_value() if graph_updates is None else graph_updates
    )
    if not _graph(graph) or not updates:
        raise ValueError(
            "cached_partial is a graph-mode-only API and requires "
            "graph_updates=True.\nLeave graph and graph_updates unset (or True), "
            "or bind the arguments with functools.partial."
        )
    leaves, treedef = jax.tree.flatten(cached_args, is_leaf=is_graph_node)
    nodes = [x for x in leaves if is_graph_node(x)]
    copies = iter(clone(nodes, variables=False)) if nodes else iter(())
    bound = treedef.unflatten([next(copies) if is_graph_node(x) else x for x in leaves])
    if not callable(f):  # flax's fails when called, as calling ``f`` does
        return lambda *args, **kwargs: f(*bound, *args, **kwargs)
    return functools.partial(f, *bound)


class ApplyCaller(Generic[A]):
    """``graphdef.apply(state)(*args)`` / ``nnx.call((graphdef, state)).method()``:
    runs a method of the merged object and returns ``(output, (graphdef, state))``."""

    def __init__(
        self,
        graphdef: GraphDef,
        states: tuple[Any, ...],
        path: tuple = (),
        graph: bool | None = None,
    ):
        self._graphdef = graphdef
        self._states = states
        self._path = path
        self._graph = graph  # the mode of the split that returns the state

    def __getattr__(self, name: str) -> ApplyCaller:
        return ApplyCaller(
            self._graphdef, self._states, self._path + (name,), self._graph
        )

    def __getitem__(self, key: Any) -> ApplyCaller:
        return ApplyCaller(
            self._graphdef, self._states, self._path + ((key,),), self._graph
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _strict.enabled():  # the merged object is this call's only: no sharing
            _check_merge(self._graphdef, self._states, note_sharing=False)
        with _strict.suspended():
            module = merge(self._graphdef, *self._states)
        fn: Any = module
        for step in self._path:  # an attribute name, or (key,) for [key]
            fn = fn[step[0]] if isinstance(step, tuple) else getattr(fn, step)
        out = fn(*args, **kwargs)
        return out, split(module, graph=self._graph)


def call(graphdef_state: tuple[GraphDef, State], /) -> ApplyCaller:
    """``nnx.call((graphdef, state))(x)``: a pure call of the merged object."""
    graphdef, st = graphdef_state
    return ApplyCaller(graphdef, (st,))


def _graphdef_apply(
    self: GraphDef, state: Any, *states: Any, graph: bool | None = None
) -> ApplyCaller:
    """``graphdef.apply(state)(*args)``: a pure call of the merged object;
    ``graph`` is the mode of the split that returns its state (flax.nnx's)."""
    return ApplyCaller(self, (state, *states), graph=graph)


GraphDef.apply = _graphdef_apply  # type: ignore[attr-defined]


def flatten(
    node: Any,
    /,
    *,
    with_paths: bool = True,
    ref_index: Any = None,
    ref_outer_index: Any = None,
    graph: bool | None = None,
) -> tuple[GraphDef, FlatState | list[Any]]:
    """``(graphdef, flat state)``: ``split`` with the state as ``(path, variable)``
    pairs (or only the variables, ``with_paths=False``)."""
    gdef, flat = _flat_state(node, graph)
    items = FlatState(
        ((p, flat[p]) for p in gdef.paths), sort=isinstance(gdef.node, TreeNodeDef)
    )
    if not isinstance(gdef.node, TreeNodeDef):
        items = FlatState(items)
    return gdef, items if with_paths else items.leaves


def unflatten(
    graphdef: GraphDef,
    state: Any,
    /,
    *,
    index_ref: Any = None,
    outer_index_outer_ref: Any = None,
    copy_variables: bool = False,
    recreate_variables: bool = True,
) -> Any:
    """The object ``graphdef`` describes, from a State, a FlatState or a list
    of leaves in ``graphdef``'s order (``flatten``'s inverse)."""
    if isinstance(state, list) and not isinstance(state, FlatState):
        if len(state) != graphdef.num_leaves:
            raise ValueError(
                f"Incorrect number of leaves, expected {graphdef.num_leaves} leaves, "
                f"but got {len(state)}.\nPass the leaves flatten returned for this "
                "graphdef, in its order."
            )
        state = FlatState(zip(graphdef.paths, state, strict=True), sort=False)
    return merge(
        graphdef, state, copy=copy_variables, recreate_variables=recreate_variables
    )


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
