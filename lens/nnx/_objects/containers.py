"""flax.nnx's ``helpers``: graph containers (``nnx.List``, ``nnx.Dict``),
``Sequential`` and the optax ``TrainState``.
"""

from __future__ import annotations

import inspect
from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    MutableMapping,
    MutableSequence,
)
from typing import Any, Generic, Protocol, TypeVar, cast

import jax.numpy as jnp

from lens import struct
from lens._facades import show_at_flax_paths
from lens.nnx import reprlib
from lens.nnx._objects.module import Module
from lens.nnx._objects.object import (
    _check_no_nested_marks,
    _check_static,
    _Marked,
    _marks,
    check_trace,
    has_data,
    private_attributes,
    unmark,
)
from lens.nnx._variables.state import State
from lens.nnx.proxy_caller import ApplyCaller
from lens.nnx.tracers import check_mutable

A = TypeVar("A")
K = TypeVar("K")
V = TypeVar("V")
M_co = TypeVar("M_co", covariant=True)


def has_keyword_arg(func: Callable[..., Any], name: str) -> bool:
    """Whether ``func`` takes an argument ``name`` by keyword (a keyword-only or
    positional-or-keyword parameter of that name)."""
    return any(
        p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in inspect.signature(func).parameters.values()
    )


def _kind(value: Any) -> str | None:
    return value.kind if isinstance(value, _Marked) else None


class List(reprlib.SequenceReprMixin, Module, MutableSequence[A], Generic[A]):
    """A list whose items (modules, variables, arrays) are part of the graph.

    An item given as ``nnx.data(x)`` / ``nnx.static(x)`` is data / static (a
    pytree child or not) whatever its value; other items are data when they hold
    arrays, Variables or objects."""

    def __init__(self, it: Iterable[Any] | None = None, /):
        object.__setattr__(self, "_items", [])
        for value in it or ():
            self.append(value)

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "_length" in state and "_items" not in state:
            # a flax.nnx pickle: items as attributes "0", "1", ... and _length
            state = dict(state)
            n = state.pop("_length")
            state["_items"] = [state.pop(str(i)) for i in range(n)]
        super().__setstate__(state)

    def _list(self) -> list[Any]:
        d = self.__dict__
        if "_items" not in d:
            object.__setattr__(self, "_items", [])
        return d["_items"]

    def _edit(self, what: str, edit: Callable[[list[Any]], None]) -> None:
        """Applies ``edit`` to the ``(value, kind)`` pairs of the items, then
        stores the values and their data/static declarations."""
        check_mutable(self, what)
        check_trace(self)
        items, marks = self._list(), cast(dict[Any, str], _marks(self))
        pairs = [(v, marks.get(i)) for i, v in enumerate(items)]
        edit(pairs)
        for i, (value, kind) in enumerate(pairs):
            if isinstance(value, list | tuple | dict):
                _check_no_nested_marks(self, str(i), value)
            if kind == "static" and has_data(value):
                _check_static(self, str(i), value, explicit=True)
        items[:] = [v for v, _ in pairs]
        for key in [k for k in marks if isinstance(k, int)]:
            del marks[key]
        marks.update({i: k for i, (_, k) in enumerate(pairs) if k is not None})

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
        marks = cast(dict[Any, str], _marks(self))
        for key in [k for k in marks if isinstance(k, int)]:
            del marks[key]

    def _index(self, i: Any) -> None:
        """flax.nnx's IndexError for an int index past either end."""
        n = len(self._list())
        if isinstance(i, int) and not -n <= i < n:
            raise IndexError(
                f"Index out of bounds: index {i} of an nnx.List of {n} items."
            )

    def __getitem__(self, i: Any) -> Any:
        self._index(i)
        return self._list()[i]

    def __setitem__(self, i: Any, value: Any) -> None:
        self._index(i)

        def edit(pairs: list[Any]) -> None:
            if isinstance(i, slice):
                pairs[i] = [(unmark(v), _kind(v)) for v in value]
            else:  # an unmarked value keeps the item's declaration, as flax's
                pairs[i] = (unmark(value), _kind(value) or pairs[i][1])

        self._edit("set an item", edit)

    def __delitem__(self, i: Any) -> None:
        self._index(i)

        def edit(pairs: list[Any]) -> None:
            del pairs[i]

        self._edit("delete an item", edit)

    def __len__(self) -> int:
        return len(self._list())

    def insert(self, index: int, value: Any) -> None:
        self._edit(
            "insert an item",
            lambda pairs: pairs.insert(index, (unmark(value), _kind(value))),
        )

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:  # identity, like any object (Mapping sets None)
        return object.__hash__(self)


class Dict(reprlib.MappingReprMixin, Module, MutableMapping[Any, Any], Generic[K, V]):
    """A mapping of string keys to graph members, also reachable as attributes;
    it iterates in insertion order."""

    def __init__(self, *args: Any, **kwargs: Any):
        for k, v in dict(*args, **kwargs).items():
            setattr(self, k, v)

    def _keys(self) -> list[str]:
        hidden = private_attributes()  # and lens's own marks (nnx.tabulate's)
        return [k for k in vars(self) if k not in hidden and k[:6] != "_lens_"]

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
        if key not in self._keys():
            raise KeyError(key)
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
    """Calls ``layers`` in order: the first with the call's arguments, each next
    one with the previous one's output (a tuple as positional arguments, a dict
    as keyword arguments, anything else as one argument). ``rngs`` goes to every
    layer that takes an ``rngs`` keyword. With no layers it is the identity."""

    def __init__(self, *fns: Callable[..., Any]):
        self.layers = List(fns)

    def __call__(self, *args: Any, rngs: Any = None, **kwargs: Any) -> Any:
        if not len(self.layers):
            if args:
                return args[0] if len(args) == 1 else args
            return kwargs or None
        output: Any = None
        for i, f in enumerate(self.layers):
            if not callable(f):
                raise TypeError(
                    f"Sequence[{i}] is not callable: {f}\nnnx.Sequential calls each "
                    "of its layers; pass modules or functions."
                )
            if i > 0:
                if isinstance(output, tuple):
                    args, kwargs = output, {}
                elif isinstance(output, dict):
                    args, kwargs = (), output
                else:
                    args, kwargs = (output,), {}
            if rngs is not None and has_keyword_arg(f, "rngs"):
                kwargs = {**kwargs, "rngs": rngs}
            output = f(*args, **kwargs)
        return output


class ModuleDefApply(Protocol, Generic[M_co]):
    """What :meth:`TrainState.apply` returns: called with the states it merges
    with the graphdef, it gives an :class:`ApplyCaller` whose method calls return
    ``(output, (state, graphdef))``."""

    def __call__(self, state: State, *states: State) -> ApplyCaller: ...


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


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
