"""flax.nnx's ``helpers``: graph containers (``nnx.List``, ``nnx.Dict``),
``Sequential`` and the optax ``TrainState``.
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    MutableMapping,
    MutableSequence,
)
from typing import Any, Generic, TypeVar

import jax.numpy as jnp

from lens import struct
from lens.nnx.module import Module
from lens.nnx.proxy_caller import ApplyCaller
from lens.nnx.pytreelib import Object, unmark
from lens.nnx.statelib import State
from lens.nnx.tracers import check_mutable

A = TypeVar("A")
K = TypeVar("K")
V = TypeVar("V")


class List(Object, MutableSequence[A], Generic[A]):
    """A list whose items (modules, variables, arrays) are part of the graph."""

    def __init__(self, it: Iterable[Any] | None = None, /):
        object.__setattr__(self, "_items", [unmark(x) for x in it or ()])

    def _list(self) -> list[Any]:
        d = self.__dict__
        if "_items" not in d:
            object.__setattr__(self, "_items", [])
        return d["_items"]

    def _graph_items(self) -> list[tuple[Any, Any]]:
        return list(enumerate(self._list()))

    def _graph_set(self, key: Any, value: Any) -> None:
        items = self._list()
        if key == len(items):
            items.append(value)
        else:
            items[key] = value

    def _graph_clear(self) -> None:
        self._list().clear()

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __setitem__(self, i: Any, value: Any) -> None:
        check_mutable(self, "set an item")
        self._list()[i] = unmark(value)

    def __delitem__(self, i: Any) -> None:
        check_mutable(self, "delete an item")
        del self._list()[i]

    def __len__(self) -> int:
        return len(self._list())

    def insert(self, i: int, value: Any) -> None:
        check_mutable(self, "insert an item")
        self._list().insert(i, unmark(value))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:  # identity, like any object (Mapping sets None)
        return object.__hash__(self)


class Dict(Object, MutableMapping[Any, Any], Generic[K, V]):
    """A mapping of string keys to graph members, also reachable as attributes."""

    def __init__(self, *args: Any, **kwargs: Any):
        for k, v in dict(*args, **kwargs).items():
            setattr(self, k, v)

    def _keys(self) -> list[str]:
        return [k for k, _ in self._graph_items()]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or key.startswith("_"):
            raise KeyError(
                f"nnx.Dict keys are public attribute names (strings without a "
                f"leading underscore); got {key!r}."
            )
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:  # identity, like any object (Mapping sets None)
        return object.__hash__(self)


class Sequential(Module):
    """Calls ``layers`` in order, each on the previous one's output."""

    def __init__(self, *layers: Callable[..., Any]):
        self.layers = list(layers)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.layers:  # the identity, as flax.nnx's empty Sequential
            if args:
                return args[0] if len(args) == 1 else args
            return kwargs or None
        out = args
        for i, layer in enumerate(self.layers):
            out = layer(*out, **kwargs) if i == 0 else layer(*out)
            out = out if isinstance(out, tuple) else (out,)
        return out[0] if len(out) == 1 else out


M = TypeVar("M")


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
