"""``GraphState`` (flax.nnx's ``graphlib.GraphState``): a State bundled with the
GraphDef it belongs to, what ``nnx.unpack`` returns and ``nnx.merge`` takes back,
so no graphdef has to be carried separately. A pytree of the State's values, the
graphdef static.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Generic, TypeVar

import jax

from lens._facades import show_at_flax_paths
from lens.nnx import reprlib
from lens.nnx._graph.defs import GraphDef
from lens.nnx._variables.state import State, state_flatten

A = TypeVar("A")

Node = TypeVar("Node")
PureState = tuple[GraphDef[Node], State]  # flax.nnx's alias: ``(graphdef, state)``


class GraphState(MutableMapping, Generic[A]):
    """A :class:`State` that knows its :class:`GraphDef`: ``nnx.merge(gs)``
    rebuilds the node; reads and writes go to the State."""

    __slots__ = ("_graphdef", "_state")

    def __init__(self, _graphdef: GraphDef[A], _state: State):
        if not isinstance(_state, State):
            raise ValueError(
                f"Expected a State object, got {type(_state).__name__}\n"
                "Build a GraphState with nnx.unpack(node)."
            )
        object.__setattr__(self, "_graphdef", _graphdef)
        object.__setattr__(self, "_state", _state)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_state"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_state", "_graphdef"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._state, name, value)

    def __getitem__(self, key: Any) -> Any:
        return self._state[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def __contains__(self, key: object) -> bool:
        return key in self._state

    def __repr__(self) -> str:
        return reprlib.node_repr(
            "GraphState",
            [("_graphdef", repr(self._graphdef)), ("_state", repr(self._state))],
        )


def _flatten_with_keys(gs: GraphState) -> Any:
    children, keys = state_flatten(gs._state)  # the State's own keys and order
    return children, (gs._graphdef, keys)


def _unflatten(aux: Any, children: Any) -> GraphState:
    graphdef, keys = aux
    return GraphState(graphdef, State(dict(zip(keys, children, strict=True))))


jax.tree_util.register_pytree_with_keys(GraphState, _flatten_with_keys, _unflatten)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
