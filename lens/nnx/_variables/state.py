"""Variables as data (flax.nnx's ``statelib``): :class:`State`, a nested mapping of a
graph's variables (a pytree whose leaves are the values), :class:`FlatState`, and
the helpers that filter, split, merge and convert States (``to_pure_dict``,
``replace_by_pure_dict``, ``to_flat_state``/``from_flat_state``).
"""

from __future__ import annotations

import warnings
from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from typing import Any, Generic, TypeVar

import jax

from lens import errors
from lens._facades import show_at_flax_paths
from lens._views import Displayable
from lens.nnx import reprlib
from lens.nnx._graph.walk import Path, path_str
from lens.nnx._variables.filters import PathIn, filters_to_predicates, to_predicate
from lens.nnx._variables.variable import Variable

V = TypeVar("V")

ExtractValueFn = Callable[[Any], Any]  # to_pure_dict's extract_fn: variable -> value
SetValueFn = Callable[
    [Any, Any], Any
]  # replace_by_pure_dict's: (variable, value) -> new


def _path_key(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


class FlatState(reprlib.SequenceReprMixin, list, Generic[V]):
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

    def to_nested_state(self) -> State:
        """This FlatState as a nested :class:`State`."""
        return State.from_flat_state(self)

    @staticmethod
    def from_sorted_keys_values(keys: Any, values: Any) -> FlatState:
        return FlatState(zip(keys, values, strict=True), sort=False)

    def __getitem__(self, index: Any) -> Any:  # a slice is a FlatState, as flax's
        got = list.__getitem__(self, index)
        return FlatState(got, sort=False) if isinstance(index, slice) else got

    def split(self, first: Any, /, *filters: Any) -> Any:
        """One FlatState per filter; every entry must match one of them (a last
        ``...`` takes the rest)."""
        return self._partition((first, *filters), exhaustive=True)

    def filter(self, first: Any, /, *filters: Any) -> Any:
        """The entries each filter selects (one FlatState per filter); the rest
        is dropped."""
        return self._partition((first, *filters), exhaustive=False)

    def _partition(self, filters: tuple[Any, ...], exhaustive: bool) -> Any:
        parts = partition_flat(dict(self), filters, exhaustive)
        out = tuple(FlatState(p.items(), sort=False) for p in parts)
        return out[0] if len(out) == 1 else out

    @staticmethod
    def merge(flat_state: Iterable[Any], /, *flat_states: Iterable[Any]) -> FlatState:
        """The entries of all the flat states, in path order."""
        if not flat_states and isinstance(flat_state, FlatState):
            return flat_state
        return FlatState(
            (kv for fs in (flat_state, *flat_states) for kv in fs), sort=True
        )


# A pytree of its values (the paths static), as flax.nnx's: jax.tree.leaves of
# a split's FlatState are the arrays in it.
jax.tree_util.register_pytree_node(
    FlatState,
    lambda fs: (fs.leaves, fs.paths),
    FlatState.from_sorted_keys_values,
)


class NestedStateRepr(reprlib.Representable):
    """A State nested in another, shown as ``{key: value, ...}`` (the outer one
    shows as ``State({...})``)."""

    def __init__(self, state: State):
        self.state = state

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        yield reprlib.Object("", kv_sep=": ", start="{", end="}")
        for item in self.state.__nnx_repr__():
            if not isinstance(item, reprlib.Object):
                yield item

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        children = {
            k: NestedStateRepr(v) if isinstance(v, State) else v
            for k, v in self.state.items()
        }
        return subtree_renderer(children, path=path)


class State(Displayable, reprlib.Representable, MutableMapping):
    """Variables as a nested mapping: ``state['encoder']['kernel']`` or
    ``state.encoder.kernel``. A pytree whose leaves are the variables' values.

    Built from a mapping or, like ``dict``, from ``(key, value)`` pairs (what
    orbax's partial restore rebuilds it from: ``type(template)(pairs)``).
    Subclasses are pytrees too."""

    __lens_view__ = "nnx state"  # drawn by lens.display

    def __init__(
        self,
        mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]] | None = None,
        /,
        *,
        _copy: bool = True,
    ):
        if _copy:
            target: dict[Any, Any] = {}
            items = dict(mapping if mapping is not None else {})
        elif isinstance(mapping, dict):
            target = items = mapping  # flax.nnx's ``_copy=False``: the storage
        else:
            raise ValueError(
                f"Expected a dictionary when `_copy=False`, got {type(mapping)} "
                "instead.\nPass a dict, or leave _copy at its default (True)."
            )
        object.__setattr__(self, "_mapping", target)
        for k, v in list(items.items()):
            self._mapping[k] = (
                State(v) if isinstance(v, Mapping) and not isinstance(v, State) else v
            )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # flax.nnx: every State subclass is a pytree, rebuilt as its own class
        super().__init_subclass__(**kwargs)
        _register_state_pytree(cls)

    @property
    def raw_mapping(self) -> dict[Any, Any]:
        """The dict this State stores its items in."""
        return self._mapping

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
            raise AttributeError(self._no_attribute(name)) from None

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_mapping")[name]
        except KeyError:
            raise AttributeError(self._no_attribute(name)) from None

    def _no_attribute(self, name: str) -> str:
        """flax.nnx's message for a missing key read as an attribute, then the
        keys there are."""
        keys = list(object.__getattribute__(self, "_mapping"))
        return f"No attribute '{name}' in State\nIts keys: {keys[:8]}" + (
            " ..." if len(keys) > 8 else ""
        )

    def __iter__(self) -> Iterator[Any]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        """flax.nnx's layout: ``State({`` at the top, nested States as ``{``,
        every Variable with its values."""
        yield reprlib.Object(type(self), kv_sep=": ", start="({", end="})")
        for k, v in self.items():
            shown = NestedStateRepr(v) if isinstance(v, State) else v
            yield reprlib.Attr(repr(k), shown)

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
    def from_flat_path(cls, flat_state: Mapping[Path, Any] | Any, /) -> State:
        """flax.nnx's older name of :meth:`from_flat_state` (deprecated there too)."""
        warnings.warn(
            "`flax.nnx.State` will be deprecated and be replaced by the built-in "
            "Python dict. Please use the equivalent `nnx.from_flat_state` instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls.from_flat_state(flat_state)

    @classmethod
    def from_flat_state(cls, flat_state: Mapping[Path, Any] | Any) -> State:
        root: dict[Any, Any] = {}
        items = flat_state.items() if isinstance(flat_state, Mapping) else flat_state
        for path, v in items:
            d = root
            for k in path[:-1]:
                d = d.setdefault(k, {})
            d[path[-1]] = v
        return cls(root)

    def filter(self, *filters: Any) -> Any:
        """The sub-state each filter selects (one State per filter)."""
        parts = partition_flat(self._flat_dict(), filters, exhaustive=False)
        states = tuple(State.from_flat_state(p) for p in parts)
        return states[0] if len(states) == 1 else states

    def split(self, *filters: Any) -> Any:
        """Like ``filter``, but every variable must be selected by some filter."""
        parts = partition_flat(self._flat_dict(), filters, exhaustive=True)
        states = tuple(State.from_flat_state(p) for p in parts)
        return states[0] if len(states) == 1 else states

    @staticmethod
    def merge(state: State, *states: State) -> State:
        flat = state._flat_dict()
        for s in states:
            flat.update(s._flat_dict())
        return State.from_flat_state(flat)

    def map(self, f: Callable[[tuple, Any], Any]) -> State:
        """This State with each variable replaced by ``f(path, variable)``
        (:func:`map_state`)."""
        return map_state(f, self)

    def __or__(self, other: Mapping[Any, Any]) -> State:
        """The variables of both (``other``'s win): :func:`merge_state`."""
        return self if not other else merge_state(self, other)

    def __sub__(self, other: State) -> State:
        """The variables at paths ``other`` does not have: :func:`diff`."""
        return diff(self, other)

    def to_pure_dict(self, extract_fn: ExtractValueFn | None = None) -> dict[Any, Any]:
        """Nested plain dicts of raw values (no Variable boxes)."""
        return to_pure_dict(self, extract_fn)

    def replace_by_pure_dict(
        self, pure_dict: Mapping[Any, Any], replace_fn: SetValueFn | None = None
    ) -> None:
        """Writes ``pure_dict``'s values into this State's variables."""
        replace_by_pure_dict(self, pure_dict, replace_fn)


def partition_flat(
    flat: Mapping[Path, Any], filters: tuple[Any, ...], exhaustive: bool
) -> list[dict[Path, Any]]:
    # flax: `...`/True only at the end (anything after it would get nothing)
    preds = list(filters_to_predicates(filters)) or [to_predicate(...)]
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
            "Non-exhaustive filters, got a non-empty remainder: "
            + ", ".join(path_str(p) for p in left[:5])
            + (" ..." if len(left) > 5 else "")
            + f".\nThe filters {filters!r} do not select every variable; add a "
            "last filter ... to collect the rest."
        )
    return parts


def _sorted_keys(mapping: dict[Any, Any]) -> tuple[Any, ...]:
    """The keys in pytree order: sorted by type name, then value (keys of one
    type, the common case, sort directly)."""
    if len({type(k) for k in mapping}) <= 1:
        return tuple(sorted(mapping))
    return tuple(sorted(mapping, key=lambda k: (str(type(k)), k)))


def state_flatten(s: State) -> Any:
    keys = _sorted_keys(s._mapping)
    return [(jax.tree_util.DictKey(k), s._mapping[k]) for k in keys], keys


def _state_flatten_fast(s: State) -> Any:
    """:func:`state_flatten` without the keys: what ``jit`` calls per argument."""
    mapping = s._mapping
    keys = _sorted_keys(mapping)
    return [mapping[k] for k in keys], keys


# Per type met as a child: whether it is a Mapping other than a State (which
# unflattening makes a State, as ``State.__init__`` does). A cache, like
# functools.cache: the answer for a type never changes.
_PLAIN_MAPPING: dict[type, bool] = {}


def _is_plain_mapping(v: Any) -> bool:
    t = type(v)
    known = _PLAIN_MAPPING.get(t)
    if known is None:
        known = _PLAIN_MAPPING[t] = issubclass(t, Mapping) and not issubclass(t, State)
    return known


def _register_state_pytree(cls: type[State]) -> None:
    if cls is State:

        def unflatten(keys: tuple[Any, ...], children: Any) -> State:
            # State.__init__'s result without its copy and per-item ABC checks
            mapping = dict(zip(keys, children, strict=True))
            for k, v in mapping.items():
                if _is_plain_mapping(v):
                    mapping[k] = State(v)
            obj = object.__new__(State)
            object.__setattr__(obj, "_mapping", mapping)
            return obj

    else:  # a subclass may construct itself its own way

        def unflatten(keys: tuple[Any, ...], children: Any) -> State:
            return cls(dict(zip(keys, children, strict=True)))

    jax.tree_util.register_pytree_with_keys(
        cls, state_flatten, unflatten, _state_flatten_fast
    )


_register_state_pytree(State)
# States display through lens.display (registered there; loaded on first display).


def _value(x: Any) -> Any:
    return x.value if isinstance(x, Variable) else x


def to_pure_dict(
    state: Mapping[Any, Any], extract_fn: ExtractValueFn | None = None
) -> dict[Any, Any]:
    """Nested plain dicts of raw values (no Variable boxes): what checkpointing
    libraries and ``jax.tree`` utilities expect. ``extract_fn(leaf)`` gives each
    value (default: a Variable's value, anything else as it is)."""
    fn = extract_fn or _value
    return {
        k: to_pure_dict(v, extract_fn) if isinstance(v, Mapping) else fn(v)
        for k, v in state.items()
    }


def restore_int_paths(pure_dict: Mapping[Any, Any]) -> dict[Any, Any]:
    """``pure_dict`` with keys that spell integers as integers again (a checkpoint
    or JSON round trip turns ``nnx.List`` indices into strings)."""
    return {
        _int_key(k): restore_int_paths(v) if isinstance(v, Mapping) else v
        for k, v in pure_dict.items()
    }


def _int_key(k: Any) -> Any:
    try:
        return int(k)
    except (TypeError, ValueError):
        return k


def replace_by_pure_dict(
    state: State, pure_dict: Mapping[Any, Any], replace_fn: SetValueFn | None = None
) -> None:
    """Writes the values of ``pure_dict`` (as from :func:`to_pure_dict`) into
    ``state``'s variables, in place. Every path must exist in ``state`` (keys that
    were integers may come back as strings, as after a JSON round trip).
    ``replace_fn(leaf, value)`` gives the new leaf (default: the value written into
    the Variable)."""
    flat = dict(to_flat_state(state))

    def go(d: Mapping[Any, Any], prefix: tuple[Any, ...]) -> None:
        for k, v in d.items():
            path = prefix + (k,)
            if isinstance(v, Mapping):
                go(v, path)
                continue
            target = path if path in flat else _int_path(path)
            if target not in flat:
                raise errors.GraphStructureError(
                    f"key in pure_dict not available in state: {path}. The state "
                    f"has no variable at {path_str(path)}; is the dict from a "
                    "different model?"
                )
            if replace_fn is None:
                _set_path(state, target, v)
            else:
                _put_path(state, target, replace_fn(flat[target], v))

    go(pure_dict, ())


def _put_path(state: Any, path: tuple[Any, ...], value: Any) -> None:
    node = state
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _int_path(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(int(p) if isinstance(p, str) and p.isdigit() else p for p in path)


def _set_path(state: Any, path: tuple[Any, ...], value: Any) -> None:
    node = state
    for p in path[:-1]:
        node = node[p]
    cur = node[path[-1]]
    if isinstance(cur, Variable):
        shape = getattr(cur.value, "shape", None)
        if shape is not None and getattr(value, "shape", shape) != shape:
            raise ValueError(
                f"replace_by_pure_dict: {path_str(path)} has shape {shape}, the "
                f"new value {value.shape}."
            )
        object.__setattr__(cur, "_raw_value", value)
    else:
        node[path[-1]] = value


def to_flat_state(state: State) -> FlatState:
    """``state`` as a flat list of ``(path, variable)`` pairs."""
    s = state if isinstance(state, State) else State(state)
    return s.flat_state()


def from_flat_state(flat_state: Any, *, cls: type[State] = State) -> State:
    """The inverse of :func:`to_flat_state` (also takes a ``{path: value}`` dict);
    ``cls`` is the State subclass to build."""
    items = flat_state.items() if isinstance(flat_state, Mapping) else flat_state
    return cls.from_flat_state(dict(items))


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


def diff(state: State, other: State) -> State:
    """The variables of ``state`` at paths ``other`` does not have."""
    if not other:
        return state
    taken = set(to_flat_state(other).paths)
    return from_flat_state({p: v for p, v in to_flat_state(state) if p not in taken})


def create_path_filters(state: State) -> dict[PathIn, Any]:
    """``{PathIn(paths...): value}``: the paths grouped by the (hashable) value at
    them, e.g. the axis of each leaf of a prefix State."""
    groups: dict[Any, set[Path]] = {}
    for path, value in to_flat_state(state):
        value = value.value if isinstance(value, Variable) else value
        groups.setdefault(value, set()).add(path)
    return {PathIn(*paths): value for value, paths in groups.items()}


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
