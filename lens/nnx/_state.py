"""Variables as data: :class:`State`, and ``split``/``merge``/``state``/``update``.

A :class:`State` is a nested mapping of a graph's variables (a pytree whose leaves
are the values); ``split(node)`` gives a hashable :class:`GraphDef` and States,
``merge`` rebuilds a graph with the same sharing. The displays of objects and
States are attached here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens._views import install as install_views
from lens.nnx._filters import to_predicate
from lens.nnx._graph import (
    Builder,
    GraphDef,
    Object,
    Path,
    Variable,
    VariableDef,
    Walker,
    _check_mutable,
    _node_items,
    check_graph_modes,
    path_str,
    pytree_children,
)

# -------------------------------------------------------------------------- state


def _path_key(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


class FlatState(list):
    """``[(path, variable), ...]`` of a State, in path order (``to_flat_state``,
    ``State.flat_state``). ``paths`` and ``leaves`` give the two halves."""

    def __init__(self, items: Any = (), /, *, sort: bool = True):
        items = list(items)
        if sort:
            items.sort(key=lambda kv: _path_key(kv[0]))
        super().__init__(items)

    @property
    def paths(self) -> tuple[tuple[Any, ...], ...]:
        return tuple(p for p, _ in self)

    @property
    def leaves(self) -> list[Any]:
        return [v for _, v in self]

    @staticmethod
    def from_sorted_keys_values(keys: Any, values: Any) -> FlatState:
        return FlatState(zip(keys, values, strict=True), sort=False)


class State(MutableMapping):
    """Variables as a nested mapping: ``state['encoder']['kernel']`` or
    ``state.encoder.kernel``. A pytree whose leaves are the variables' values."""

    def __init__(self, mapping: Mapping[Any, Any] | None = None):
        object.__setattr__(self, "_mapping", {})
        for k, v in (mapping or {}).items():
            self._mapping[k] = (
                State(v) if isinstance(v, Mapping) and not isinstance(v, State) else v
            )

    def __getitem__(self, key: Any) -> Any:
        return self._mapping[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._mapping[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._mapping[key]

    def __setattr__(self, name: str, value: Any) -> None:
        self._mapping[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self._mapping[name]
        except KeyError:
            raise AttributeError(f"State has no key {name!r}") from None

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_mapping")[name]
        except KeyError:
            raise AttributeError(f"State has no key {name!r}") from None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _repr_state(self, 0)

    # flat views
    def flat_state(self) -> FlatState:
        """``[(path, variable), ...]`` for every leaf, in path order (flax.nnx's
        FlatState; ``dict(state.flat_state())`` gives a mapping)."""
        return FlatState(self._flat_dict().items())

    def _flat_dict(self) -> dict[Path, Any]:
        out: dict[Path, Any] = {}

        def go(m: Mapping, prefix: Path) -> None:
            for k, v in m.items():
                if isinstance(v, State):
                    go(v, prefix + (k,))
                else:
                    out[prefix + (k,)] = v

        go(self, ())
        return out

    @classmethod
    def from_flat_state(cls, flat: Mapping[Path, Any] | Any) -> State:
        root: dict[Any, Any] = {}
        for path, v in flat.items() if isinstance(flat, Mapping) else flat:
            d = root
            for k in path[:-1]:
                d = d.setdefault(k, {})
            d[path[-1]] = v
        return cls(root)

    def filter(self, *filters: Any) -> Any:
        """The sub-state each filter selects (one State per filter)."""
        parts = _partition(self._flat_dict(), filters, exhaustive=False)
        states = tuple(State.from_flat_state(p) for p in parts)
        return states[0] if len(states) == 1 else states

    def split(self, *filters: Any) -> Any:
        """Like ``filter``, but every variable must be selected by some filter."""
        parts = _partition(self._flat_dict(), filters, exhaustive=True)
        states = tuple(State.from_flat_state(p) for p in parts)
        return states[0] if len(states) == 1 else states

    @staticmethod
    def merge(state: State, *states: State) -> State:
        flat = state._flat_dict()
        for s in states:
            flat.update(s._flat_dict())
        return State.from_flat_state(flat)

    def to_pure_dict(self) -> dict[Any, Any]:
        """Nested plain dicts of raw values (no Variable boxes)."""
        return {
            k: v.to_pure_dict()
            if isinstance(v, State)
            else (v.value if isinstance(v, Variable) else v)
            for k, v in self.items()
        }


def _repr_state(s: State, depth: int) -> str:
    if not len(s):
        return "State({})"
    pad = "  " * (depth + 1)
    rows = []
    for k, v in s.items():
        shown = _repr_state(v, depth + 1) if isinstance(v, State) else repr(v)
        rows.append(f"{pad}{k!r}: {shown}")
    return "State({\n" + ",\n".join(rows) + "\n" + "  " * depth + "})"


def _state_flatten(s: State) -> Any:
    keys = tuple(sorted(s._mapping, key=lambda k: (str(type(k)), k)))
    return [(jax.tree_util.DictKey(k), s._mapping[k]) for k in keys], keys


jax.tree_util.register_pytree_with_keys(
    State,
    _state_flatten,
    lambda keys, children: State(dict(zip(keys, children, strict=True))),
)


def _partition(
    flat: Mapping[Path, Any], filters: tuple[Any, ...], exhaustive: bool
) -> list[dict[Path, Any]]:
    preds = [to_predicate(f) for f in filters] or [to_predicate(...)]
    parts: list[dict[Path, Any]] = [{} for _ in preds]
    left = []
    for path, v in flat.items():
        for part, pred in zip(parts, preds, strict=True):
            if pred(path, v):
                part[path] = v
                break
        else:
            left.append(path)
    if exhaustive and left:
        raise errors.GraphStructureError(
            f"The filters {filters!r} do not select every variable; left over: "
            + ", ".join(path_str(p) for p in left[:5])
            + (" ..." if len(left) > 5 else "")
            + ".\nAdd a last filter ... to collect the rest."
        )
    return parts


# ------------------------------------------------------------------- public API


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
    parts = _partition(flat, filters, exhaustive=True)
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
    parts = _partition(flat, filters, exhaustive=False)
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
                _check_mutable(leaf.variable, "update the value", structural=False)
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
                for k, v in _node_items(x):
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


# ----------------------------------------------------------------------- displays


def variables_by_type(s: State) -> dict[str, dict[Any, Any]]:
    """``{variable type name: nested dict of arrays}``: a State shown the way lens
    shows Linen collections (a value that is itself a pytree, like an optimizer
    state, is spread over sub-paths)."""
    out: dict[str, dict[Any, Any]] = {}
    for path, v in s._flat_dict().items():
        kind = type(v).__name__ if isinstance(v, Variable) else "array"
        value = v._value if isinstance(v, Variable) else v
        for sub, leaf in jax.tree_util.tree_leaves_with_path(value):
            full = tuple(str(p) for p in path) + tuple(
                jax.tree_util.keystr((k,)).strip(".[]'") for k in sub
            )
            d = out.setdefault(kind, {})
            for k in full[:-1]:
                d = d.setdefault(k, {})
            d[full[-1]] = leaf
    return out


def view_title(x: Any) -> tuple[dict[str, Any], str]:
    """What an nnx object or State displays: its variables by type, and a title."""
    s = x if isinstance(x, State) else state(x)
    return variables_by_type(s), "State" if isinstance(x, State) else type(x).__name__


# Objects and States display through lens.display (registered there).
for _cls in (Object, State):
    install_views(_cls)
