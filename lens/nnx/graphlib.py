"""The object-graph API (flax.nnx's ``graphlib``, also importable as ``graph``):
``split``/``merge``/``state``/``update``/``clone``/``graphdef``, ``iter_graph``,
``pop``, ``variables``, ``flatten``/``unflatten``, ``find_duplicates``,
``recursive_map``, ``set_metadata``, ``call`` and ``cached_partial``.

The walk they share (GraphDef, Walker, Builder) is in :mod:`lens.nnx.graphwalk`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import jax.numpy as jnp

from lens import errors
from lens.nnx.filterlib import to_predicate
from lens.nnx.graphwalk import (
    Builder,
    GraphDef,
    Path,
    VariableDef,
    Walker,
    check_graph_modes,
    path_str,
    pytree_children,
)
from lens.nnx.pytreelib import Object, node_items
from lens.nnx.statelib import FlatState, State, partition_flat
from lens.nnx.tracers import check_mutable, structure_changed
from lens.nnx.variablelib import Variable


def _walk(node: Any) -> tuple[Any, Walker]:
    w = Walker()
    d = w.node(node, ())
    return d, w


def split(node: Any, *filters: Any, graph: bool | None = None) -> tuple[Any, ...]:
    """``graphdef, state`` (or ``graphdef, state_1, ..., state_n`` with filters).

    Every variable must be selected by one of the filters (the first that matches);
    end with ``...`` to collect the rest. The states hold copies: changing them does
    not change ``node`` (see ``update``).
    """
    check_graph_modes("split", graph, None)
    d, w = _walk(node)
    graphdef = GraphDef(d, tuple(leaf.path for leaf in w.leaves))
    flat = {
        leaf.path: (leaf.variable.copy() if leaf.variable is not None else leaf.value)
        for leaf in w.leaves
    }
    parts = partition_flat(flat, filters, exhaustive=True)
    return (graphdef, *(State.from_flat_state(p) for p in parts))


def graphdef(node: Any, /, *, graph: bool | None = None) -> GraphDef:
    """The static structure of ``node``'s graph."""
    check_graph_modes("graphdef", graph, None)
    return split(node)[0]


def state(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """``node``'s variables as a :class:`State` (one per filter when filters are given).

    Unlike ``split``, the filters need not select every variable.
    """
    check_graph_modes("state", graph, None)
    d, w = _walk(node)
    flat = {
        leaf.path: (leaf.variable.copy() if leaf.variable is not None else leaf.value)
        for leaf in w.leaves
    }
    if not filters:
        return State.from_flat_state(flat)
    parts = partition_flat(flat, filters, exhaustive=False)
    states = tuple(State.from_flat_state(p) for p in parts)
    return states[0] if len(states) == 1 else states


def merge(
    graphdef_or_graphstate: Any,
    /,
    *states: Any,
    copy: bool = False,
    recreate_variables: bool = True,
) -> Any:
    """A new object graph with ``graphdef``'s structure and the states' values.

    Its variables are always new (lens's ``merge`` never aliases the states'
    Variable objects), so ``copy`` changes nothing; use ``nnx.update`` to write
    a State into an existing object."""
    if isinstance(graphdef_or_graphstate, tuple):  # (graphdef, state)
        graphdef_or_graphstate, *more = graphdef_or_graphstate
        states = (*more, *states)
    graphdef = graphdef_or_graphstate
    if not states:
        raise TypeError("merge() needs at least one State after the graphdef.")
    flat: dict[Path, Any] = {}
    for s in states:
        flat.update(_flat(s))
    missing = [p for p in graphdef.paths if p not in flat]
    if missing:
        raise errors.GraphStructureError(
            "merge: the states have no value for "
            + ", ".join(path_str(p) for p in missing[:5])
            + ".\nPass every state that split returned."
        )
    values = (_raw(flat[p]) for p in graphdef.paths)
    return Builder(values).build(graphdef.node)


def _flat(s: Mapping) -> dict[Path, Any]:
    if isinstance(s, State):
        return s._flat_dict()
    return State(s)._flat_dict()


def _raw(v: Any) -> Any:
    return v._value if isinstance(v, Variable) else v


def update(node: Any, state: Mapping, *states: Mapping) -> None:
    """Writes the states' values into ``node``'s variables, in place."""
    d, w = _walk(node)
    by_path = {leaf.path: leaf for leaf in w.leaves}
    for s in (state, *states):
        for path, v in _flat(s).items():
            leaf = by_path.get(path)
            if leaf is None:
                raise errors.GraphStructureError(
                    f"update: {type(node).__name__} has no variable at "
                    f"{path_str(path)}; a state from a different model?"
                )
            if leaf.variable is not None:
                check_mutable(leaf.variable, "update the value", structural=False)
            leaf.write(_raw(v))


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
    check_graph_modes("clone", graph, None)
    if arrays and not variables:
        raise ValueError(
            "If arrays is True, variables should be also True\nCopying the buffers "
            "needs new variables to hold them: pass variables=True."
        )
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
            next(self.values)
            self.nodes[d.index] = self.originals[d.index]
            return self.originals[d.index]
        return super().build(d)


def iter_graph(
    node: Any, /, *, graph: bool | None = None
) -> Iterator[tuple[Path, Any]]:
    """Yields ``(path, x)`` for every object, variable and attribute value of the
    graph, each node once, children before their parent (as flax.nnx does)."""
    check_graph_modes("iter_graph", graph, None)
    seen: set[int] = set()

    def go(x: Any, path: Path) -> Iterator[tuple[Path, Any]]:
        if isinstance(x, Object | Variable):
            if id(x) in seen:
                return
            seen.add(id(x))
            if isinstance(x, Object):
                for k, v in node_items(x):
                    yield from go(v, path + (k,))
            yield path, x
            return
        if type(x) in (list, tuple):
            for j, e in enumerate(x):
                yield from go(e, path + (j,))
        elif type(x) is dict:
            for k, e in x.items():
                yield from go(e, path + (k,))
        else:
            children = pytree_children(x)
            if children is not None:
                for k, e in zip(children[0], children[1]):
                    yield from go(e, path + (k,))
            elif path:
                yield path, x
            return
        yield path, x

    yield from go(node, ())


A = TypeVar("A")


def _one_or_many(states: tuple[Any, ...]) -> Any:
    return states[0] if len(states) == 1 else states


def pop(node: Any, *filters: Any) -> Any:
    """Removes the variables matching ``filters`` from ``node`` and returns them
    as States (one per filter); e.g. sown losses after a forward pass."""
    if not filters:
        raise ValueError(
            "Expected at least one filter\nnnx.pop(model, nnx.Intermediate) pops the "
            "variables of that type."
        )
    preds = [to_predicate(f) for f in filters]
    flats: list[dict[Path, Any]] = [{} for _ in preds]
    seen: set[int] = set()

    def go(obj: Any, path: Path) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for key, value in node_items(obj):
            here = path + (key,)
            if isinstance(value, Variable):
                for flat, pred in zip(flats, preds, strict=True):
                    if pred(here, value):
                        flat[here] = value
                        _remove(obj, key)
                        break
            elif isinstance(value, Object):
                go(value, here)

    go(node, ())
    return _one_or_many(tuple(State.from_flat_state(f) for f in flats))


def _remove(obj: Any, key: Any) -> None:
    if isinstance(key, str) and key in vars(obj):
        object.__delattr__(obj, key)
    else:  # an nnx.Dict / nnx.List item
        del obj[key]
    structure_changed()


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
        if isinstance(x, Object | Variable):
            first = id(x) not in paths
            if pred(path, x):
                paths.setdefault(id(x), []).append(path)
            if first and isinstance(x, Object):
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
    pass

    out = clone(node)
    done: dict[int, Any] = {}

    def go(x: Any, path: Path) -> Any:
        if isinstance(x, Object):
            if id(x) in done:
                return done[id(x)]
            for k, v in node_items(x):
                new = go(v, path + (k,))
                if new is not v:
                    x._graph_set(k, new)
            result = f(path, x)
            done[id(x)] = result
            return result
        return f(path, x)

    return go(out, ())


def cached_partial(
    f: Callable[..., Any],
    *cached_args: Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Callable[..., Any]:
    """``f`` with ``cached_args`` bound first. lens.nnx transforms already reuse a
    cached graph walk while an object's structure is unchanged, so this is a
    ``functools.partial``; updates still reach the objects."""
    return functools.partial(f, *cached_args)


class ApplyCaller(Generic[A]):
    """``graphdef.apply(state)(*args)`` / ``nnx.call((graphdef, state)).method()``:
    runs a method of the merged object and returns ``(output, (graphdef, state))``."""

    def __init__(self, graphdef: GraphDef, states: tuple[Any, ...], path: tuple = ()):
        self._graphdef = graphdef
        self._states = states
        self._path = path

    def __getattr__(self, name: str) -> ApplyCaller:
        return ApplyCaller(self._graphdef, self._states, self._path + (name,))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = merge(self._graphdef, *self._states)
        fn: Any = module
        for name in self._path:
            fn = getattr(fn, name)
        out = fn(*args, **kwargs)
        return out, split(module)


def call(graphdef_state: tuple[GraphDef, State], /) -> ApplyCaller:
    """``nnx.call((graphdef, state))(x)``: a pure call of the merged object."""
    graphdef, st = graphdef_state
    return ApplyCaller(graphdef, (st,))


def _graphdef_apply(self: GraphDef, state: Any, *states: Any) -> ApplyCaller:
    return ApplyCaller(self, (state, *states))


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
    check_graph_modes("flatten", graph, None)
    gdef, st = split(node)
    flat = st.flat_state()
    return gdef, flat if with_paths else flat.leaves


def unflatten(graphdef: GraphDef, state: Any, /, **kwargs: Any) -> Any:
    """The object ``graphdef`` describes, from a State, a FlatState or a list
    of leaves in ``graphdef``'s order (``flatten``'s inverse)."""
    if isinstance(state, list) and not isinstance(state, FlatState):
        state = State.from_flat_state(dict(zip(graphdef.paths, state, strict=True)))
    elif isinstance(state, FlatState):
        state = State.from_flat_state(state)
    return merge(graphdef, state)


@contextlib.contextmanager
def _only_graph_mode(name: str, value: bool) -> Iterator[None]:
    if not value:
        raise NotImplementedError(
            f"nnx.{name}(False): lens.nnx has one mode, flax.nnx's default (graph "
            "mode with graph updates); tree mode is not implemented.\nLeave the "
            "mode at its default."
        )
    yield


def set_graph_mode(value: bool, /) -> Any:
    """flax.nnx's graph-mode switch; lens.nnx runs in graph mode only."""
    return _only_graph_mode("set_graph_mode", value)


def set_graph_updates(value: bool, /) -> Any:
    """flax.nnx's graph-updates switch; lens.nnx always applies updates."""
    return _only_graph_mode("set_graph_updates", value)
