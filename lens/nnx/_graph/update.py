"""Changing a graph in place, and looking one level into it: ``nnx.update``,
``nnx.pop`` (``graph_pop``), ``nnx.iter_children`` and
``nnx.iter_module_children``, as flax.nnx's ``graphlib`` has them.

All of them go through each node's impl (:mod:`lens.nnx._graph.registry`), so a
type given to ``register_graph_node_type`` is updated and popped like a Module.
``update`` checks everything first and writes after, so a bad state leaves the
node untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jax

from lens import _strict, errors
from lens._facades import show_at_flax_paths
from lens.nnx._graph.graph_state import GraphState
from lens.nnx._graph.mode import set_graph_mode
from lens.nnx._graph.registry import (
    GraphNodeImpl,
    get_node_impl,
    is_graph_node,
    is_node,
    is_node_leaf,
    is_node_module,
    is_pytree_node,
    jax_to_nnx_path,
)
from lens.nnx._graph.tree import check_valid_pytree
from lens.nnx._graph.walk import Path, path_str
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.hijax import get_state, hijax_var_type, set_state
from lens.nnx._variables.state import FlatState, State, merge_state
from lens.nnx._variables.variable import Variable
from lens.nnx.tracers import check_mutable, structure_changed
from lens.typing import Key

Write = Callable[[], None]


def update(node: Any, state: Any, /, *states: Any) -> None:
    """Writes the states into ``node`` in place: Variables take the new values
    (and, from Variables, their metadata), keys ``node`` lacks are added, other
    values are replaced.

    Every value is checked before anything is written (a key an immutable node
    cannot take, a shape that differs from the variable's), so a bad state
    leaves ``node`` untouched.

    In strict mode (``lens.strict``) a key ``node`` lacks raises
    ``GraphStructureError`` instead of being added.

    Raises:
        ValueError: several non-empty states for a Variable, a leaf where
            ``node`` has a subgraph, a key an immutable node (a tuple) cannot
            take.
        GraphStructureError: a value whose shape differs from its variable's
            (other than added leading axes).
    """
    if states:
        if isinstance(node, Variable):
            non_empty = [s for s in (state, *states) if not isinstance(s, Mapping) or s]
            if len(non_empty) != 1:
                raise ValueError(
                    f"Expected exactly one non-empty state, got: {(state, *states)!r}\n"
                    "A Variable takes one value: pass the one state that holds it."
                )
            state = non_empty[0]
        else:
            state = merge_state(*(_nested(s) for s in (state, *states)))
    writes: list[Write] = []
    _plan(node, _nested(state), (), writes)
    for write in writes:
        write()


class _UnsupportedNodeError(ValueError, RuntimeError):
    """``update`` into what is not a graph node: flax.nnx's RuntimeError (and
    the ValueError lens raised before)."""


def _nested(s: Any) -> Any:
    if isinstance(s, GraphState):
        return s._state
    if isinstance(s, FlatState):
        return State.from_flat_state(dict(s))
    return s


def _plan(node: Any, state: Any, path: Path, writes: list[Write]) -> None:
    """Checks one node's part of ``state`` and queues its writes."""
    if isinstance(node, Variable):
        _plan_variable(node, state, path, writes)
        return
    impl = get_node_impl(node)
    if impl is None or not is_node(node):
        raise _UnsupportedNodeError(
            f"Unsupported type: {type(node)}\nupdate: {path_str(path)} is a "
            f"{type(node).__name__}, not a graph node, so the state cannot be "
            "written into it. Pass a Module, a Variable, or a list/dict/pytree "
            "holding them."
        )
    if not isinstance(state, Mapping):
        raise ValueError(
            f"Expected a subgraph for {path_str(path)!r}, but got: {state!r}\n"
            "Pass the state of this node (nnx.state(node))."
        )
    node_dict = impl.node_dict(node)
    for key, value in state.items():
        here = (*path, key)
        if key not in node_dict:
            if _strict.enabled():
                _unknown_key(node, key, here)
            _queue_set(node, impl, key, _fresh(value), here, writes)
            continue
        current = node_dict[key]
        if isinstance(current, Variable):
            _plan_variable(current, value, here, writes)
        elif is_node(current):
            if is_node_leaf(value):
                raise ValueError(
                    f"Expected a subgraph for {key!r}, but got: {value!r}\n"
                    f"{path_str(here)} is a {type(current).__name__}: pass its "
                    "state (a mapping), not a leaf."
                )
            _plan(current, value, here, writes)
        else:
            _check_shape(current, value, here)
            _queue_set(node, impl, key, value, here, writes)


def _unknown_key(node: Any, key: Any, path: Path) -> None:
    """Strict mode: a state key ``node`` lacks (flax.nnx adds it silently)."""
    where = path_str(path[:-1]) if path[:-1] else "the root"
    raise errors.GraphStructureError(
        f"update: the state has {path_str(path)}, but {where} (a "
        f"{type(node).__name__}) has no {key!r}; nothing was updated.\nPass a "
        "state of this model (nnx.state(model)), or rename the key to the "
        "model's; to add an attribute, set it on the object.\nlens strict mode "
        "reports this (Flax adds the key silently)."
    )


def _fresh(value: Any) -> Any:
    return value.copy() if isinstance(value, Variable) else value


def _queue_set(
    node: Any, impl: Any, key: Key, value: Any, path: Path, writes: list[Write]
) -> None:
    if impl.set_key is None:
        raise ValueError(
            f"Cannot set key {key!r} on immutable node of type "
            f"{type(node).__name__}\nupdate: {path_str(path)} is inside an "
            "immutable node; rebuild it with nnx.merge instead."
        )

    def write() -> None:
        impl.set_key(node, key, value)
        if isinstance(impl, GraphNodeImpl):
            structure_changed()

    writes.append(write)


def _plan_variable(var: Variable, value: Any, path: Path, writes: list[Write]) -> None:
    if isinstance(value, State) and not value:
        return  # an empty state: a Variable split as a reference elsewhere
    raw = value._raw_value if isinstance(value, Variable) else value
    _check_shape(var._raw_value, raw, path)
    check_mutable(var, "update the value", structural=False)
    meta = dict(value.metadata) if isinstance(value, Variable) else None
    writes.append(lambda: _write_variable(var, raw, meta))


def _write_variable(var: Variable, raw: Any, meta: dict[str, Any] | None) -> None:
    """Stores ``raw`` (and ``meta``, when given) in ``var``; a hijax Variable
    (or its tracer inside a JAX transform) through its inner Variable."""
    if hijax_var_type(var) is not None:
        inner = get_state(var)
        object.__setattr__(inner, "_raw_value", raw)
        if meta is not None:
            object.__setattr__(inner, "_var_metadata", {**meta, "hijax": True})
        set_state(var, inner)
        return
    object.__setattr__(var, "_raw_value", raw)
    if meta is not None:
        object.__setattr__(var, "_var_metadata", meta)


def _check_shape(old: Any, new: Any, path: Path) -> None:
    old_shape, new_shape = getattr(old, "shape", None), getattr(new, "shape", None)
    if old_shape is None or new_shape is None:
        return
    old_shape, new_shape = tuple(old_shape), tuple(new_shape)
    # Adding or removing leading axes is how flax code stacks and unstacks a
    # model (a vmapped or scanned state written into a template): allowed.
    n = min(len(old_shape), len(new_shape))
    if old_shape[len(old_shape) - n :] != new_shape[len(new_shape) - n :]:
        raise errors.GraphStructureError(
            f"update: the value for {path_str(path)} has shape {tuple(new_shape)}, "
            f"the variable has shape {tuple(old_shape)}; nothing was updated.\n"
            "Pass a state of this model (nnx.state(model)), or rebuild the model "
            "with the new shapes."
        )


def pop(node: Any, *filters: Any) -> Any:
    """Removes the state leaves (Variables, arrays) matching ``filters`` from
    ``node`` and returns them as States (one per filter); e.g. sown
    intermediates after a forward pass."""
    if not filters:
        raise ValueError(
            "Expected at least one filter\nnnx.pop(model, nnx.Intermediate) pops the "
            "variables of that type."
        )
    states = graph_pop(node, filters)
    return states[0] if len(states) == 1 else states


def graph_pop(node: Any, filters: tuple[Any, ...]) -> tuple[State, ...]:
    """``nnx.pop``'s work: one State per filter of the leaves taken out of
    ``node`` (each leaf goes to the first filter that matches it)."""
    predicates = tuple(to_predicate(f) for f in filters)
    flats: tuple[dict[Path, Any], ...] = tuple({} for _ in predicates)
    seen: set[int] = set()
    _graph_pop(node, seen, (), flats, predicates)
    return tuple(State.from_flat_state(flat) for flat in flats)


def _graph_pop(
    node: Any,
    seen: set[int],
    path: Path,
    flats: tuple[dict[Path, Any], ...],
    predicates: tuple[Any, ...],
) -> None:
    if id(node) in seen:
        return
    seen.add(id(node))
    impl = get_node_impl(node)
    if impl is None:
        raise TypeError(
            f"Unknown node type: {type(node)}\nnnx.pop walks Modules, Variables "
            "and registered containers."
        )
    for name, value in impl.node_dict(node).items():
        here = (*path, name)
        if is_node(value):
            _graph_pop(value, seen, here, flats, predicates)
            continue
        if not is_node_leaf(value) or id(value) in seen:
            continue
        for flat, predicate in zip(flats, predicates, strict=True):
            if predicate(here, value):
                if impl.pop_key is None:
                    raise ValueError(
                        f"Cannot pop key {name!r} from node of type "
                        f"{type(node).__name__}\n{path_str(here)} is inside an "
                        "immutable node (a tuple): narrow the filter to skip it."
                    )
                seen.add(id(value))
                impl.pop_key(node, name)
                structure_changed()
                flat[here] = value
                break


def iter_children(
    node: Any, /, *, graph: bool | None = None
) -> Iterator[tuple[Key, Any]]:
    """``(key, child)`` for each immediate child of ``node`` that is a graph
    node (an Object or a Variable); no recursion (see ``iter_graph``).

    Raises:
        ValueError: ``node`` is not a graph node (graph mode) or not a pytree
            (``graph=False``; a ``pytree=False`` object included).
    """
    return _children(node, graph, is_graph_node, "iter_children")


def iter_module_children(
    node: Any, /, *, graph: bool | None = None
) -> Iterator[tuple[Key, Any]]:
    """``(key, child)`` for each immediate child of ``node`` that is a graph
    node other than a Variable (a submodule)."""
    return _children(node, graph, is_node_module, "iter_children")


def _children(
    node: Any, graph: bool | None, keep: Callable[[Any], bool], name: str
) -> Iterator[tuple[Key, Any]]:
    if set_graph_mode.current_value() if graph is None else graph:
        impl = get_node_impl(node)
        if impl is None:
            raise ValueError(
                f"Expected a graph node, got {type(node).__name__}. If this is a "
                "regular pytree, use graph=False."
            )
        items = list(impl.node_dict(node).items())
    else:
        check_valid_pytree(node, name)
        if not is_pytree_node(node, check_graph_registry=False):
            raise ValueError(
                f"Expected a pytree node, got {type(node).__name__}. If this is a "
                "graph node, use graph=True."
            )
        flat, _ = jax.tree_util.tree_flatten_with_path(
            node, is_leaf=lambda x: x is not node
        )
        items = [(jax_to_nnx_path(p[:1])[0], child) for p, child in flat]
    return iter([(key, child) for key, child in items if keep(child)])


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
