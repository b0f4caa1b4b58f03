"""flax.nnx's smaller functional helpers: ``pop``, ``variables``, state
partitioning (``split_state``/``filter_state``/``merge_state``/``map_state``),
``set_metadata``, ``find_duplicates``, ``recursive_map``, ``cached_partial``,
``call``/``GraphDef.apply`` and the functional ``TrainState``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import jax.numpy as jnp

from lens import struct
from lens.nnx._filters import to_predicate
from lens.nnx._graph import (
    GraphDef,
    Object,
    Path,
    Variable,
    _node_items,
    structure_changed,
)
from lens.nnx._state import State, iter_graph, merge, split

A = TypeVar("A")
M = TypeVar("M")


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
        for key, value in _node_items(obj):
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


def split_state(state: State, first: Any, /, *filters: Any) -> Any:
    """``state`` split by filters; every variable must match one of them."""
    return state.split(first, *filters)


def filter_state(state: State, first: Any, /, *filters: Any) -> Any:
    """The parts of ``state`` matching each filter (the rest is dropped)."""
    return state.filter(first, *filters)


def merge_state(state: Mapping, /, *states: Mapping, cls: type = State) -> State:
    """One State with the variables of all ``states`` (later ones win)."""
    flat: dict[Path, Any] = {}
    for s in (state, *states):
        flat.update((s if isinstance(s, State) else State(s))._flat_dict())
    return cls.from_flat_state(flat)


def map_state(f: Callable[[tuple, Any], Any], state: State) -> State:
    """``state`` with each variable replaced by ``f(path, variable)``."""
    return State.from_flat_state({p: f(p, v) for p, v in state.flat_state()})


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
                for k, v in _node_items(x):
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
    from lens.nnx._state import clone

    out = clone(node)
    done: dict[int, Any] = {}

    def go(x: Any, path: Path) -> Any:
        if isinstance(x, Object):
            if id(x) in done:
                return done[id(x)]
            for k, v in _node_items(x):
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


GraphDef.apply = _graphdef_apply  # type: ignore[attr-defined]


class TrainState(struct.PyTreeNode, Generic[M]):
    """A functional train state of an nnx model split into ``graphdef`` and
    ``params`` (extra States as fields of a subclass)."""

    graphdef: Any
    params: State
    opt_state: Any
    step: Any
    tx: Any = struct.field(pytree_node=False)

    @classmethod
    def create(
        cls, graphdef: Any, *, params: State, tx: Any, step: int = 0, **kwargs: Any
    ) -> Any:
        return cls(
            graphdef=graphdef,
            params=params,
            opt_state=tx.init(params),
            step=jnp.asarray(step),
            tx=tx,
            **kwargs,
        )

    def apply(self, state: Any, *states: Any) -> ApplyCaller:
        resolved = []
        for s in (state, *states):
            if isinstance(s, str):
                value = getattr(self, s)
                if not isinstance(value, State):
                    raise TypeError(
                        f"Expected {type(self).__name__}.{s} to be a State, got "
                        f"{type(value)}"
                    )
                s = value
            resolved.append(s)
        return ApplyCaller(self.graphdef, tuple(resolved))

    def apply_gradients(self, grads: State, **kwargs: Any) -> Any:
        import optax

        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = optax.apply_updates(self.params, updates)
        return self.replace(
            params=params, opt_state=opt_state, step=self.step + 1, **kwargs
        )
