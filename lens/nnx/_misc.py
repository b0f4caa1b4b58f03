"""flax.nnx's remaining small functions: ``flatten``/``unflatten``, graph-mode
switches, RNG forking and reseeding, ``make_jaxpr``/``checkify`` over objects,
and the ``nnx.dataclass``/``Data``/``Static`` pytree annotations."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp

from lens.nnx._filters import to_predicate
from lens.nnx._graph import GraphDef, Object, Variable, check_graph_modes
from lens.nnx._rngs import RngStream, SplitBackups
from lens.nnx._state import FlatState, State, iter_graph, merge, split
from lens.traceback_util import api_boundary

A = TypeVar("A")


# --------------------------------------------------------------- flatten/merge


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


# ------------------------------------------------------------------------ rngs


def _streams(node: Any, only: Any = ...) -> list[tuple[tuple, RngStream]]:
    pred = to_predicate(only)
    return [
        (p, x) for p, x in iter_graph(node) if isinstance(x, RngStream) and pred(p, x)
    ]


def _scalars_only(path: tuple, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    if shape != ():
        raise ValueError(
            f"Cannot reseed stream at path {path!r} becuase it has a non-scalar key, "
            f"found key with shape {shape}.\nIf every member's key should differ, "
            "pass policy='match_shape' (the new key is split to that shape)."
        )
    return key


def _match_shape(path: tuple, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return key if shape == () else jax.random.split(key, shape)


def reseed(
    node: Any,
    /,
    *,
    graph: bool | None = None,
    policy: Any = "scalars_only",
    **stream_keys: Any,
) -> None:
    """Gives the named streams of ``node`` new keys, counting from 0:
    ``nnx.reseed(model, dropout=42)`` (the key ``nnx.Rngs(dropout=42)`` draws
    first). A vmapped stream (a key per member) needs ``policy='match_shape'``."""
    from lens.nnx._rngs import Rngs

    check_graph_modes("reseed", graph, None)
    if policy == "scalars_only":
        policy = _scalars_only
    elif policy == "match_shape":
        policy = _match_shape
    elif not callable(policy):
        raise ValueError(
            'policy must be "scalars_only", "match_shape" or a callable, got '
            f"{policy!r}"
        )
    rngs = Rngs(**stream_keys)
    for path, stream in _streams(node):
        if stream.tag in stream_keys:
            key: Any = policy(path, rngs[stream.tag](), stream.key.value.shape)
            stream.key.value = key
            stream.count.value = jnp.zeros(key.shape, jnp.uint32)


def fork_rngs(
    node: Any = None,
    /,
    *,
    split: Any = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """Replaces every stream of ``node`` by a fork of it (new keys; ``split``
    gives several, e.g. for a vmap), and returns the backups to restore (also a
    context manager). Without ``node``, a decorator doing so around each call."""
    check_graph_modes("fork_rngs", graph, graph_updates)
    if node is None:

        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with fork_rngs(args, split=split):
                    return f(*args, **kwargs)

            return wrapper

        return decorate
    how = {} if split is None else split if isinstance(split, dict) else {...: split}
    preds = [(to_predicate(f), n) for f, n in how.items()]
    backups = []
    seen: set[int] = set()
    for path, stream in _streams(node):
        if id(stream) in seen:
            continue
        seen.add(id(stream))
        n = next((n for p, n in preds if p(path, stream)), None)
        key = stream()  # the stream advances, and is restored advanced (as Flax)
        backups.append((stream, stream.key.value, stream.count.value))
        if n is not None:
            key = jax.random.split(key, n)
        object.__setattr__(stream.key, "_value", key)
        object.__setattr__(stream.count, "_value", jnp.zeros(key.shape, jnp.uint32))
    return SplitBackups(backups)


def restore_rngs(backups: Any, /) -> None:
    """Puts back the keys ``fork_rngs``/``split_rngs`` replaced."""
    if isinstance(backups, SplitBackups):
        backups.restore()
        return
    for stream, key, *count in backups:
        object.__setattr__(stream.key, "_value", key)
        if count:
            object.__setattr__(stream.count, "_value", count[0])


def with_rngs(
    node: Any = None,
    /,
    *,
    split: Any = None,
    fork: Any = None,
    broadcast: Any = None,
    only: Any = True,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``split`` (or ``fork``) the streams of ``node`` for a transformed call;
    see :func:`fork_rngs` and :func:`split_rngs`."""
    if broadcast is not None:
        raise NotImplementedError(
            "nnx.with_rngs(broadcast=...) is not supported by lens.nnx; use "
            "stream.broadcast(n) on the streams you need."
        )
    return fork_rngs(node, split=split, graph=graph, graph_updates=graph_updates)


# ------------------------------------------------------- jaxpr and checkify


def _pure_state_fn(
    f: Callable[..., Any], args: tuple, name: str
) -> tuple[Callable[[list[Any]], Any], list[Any], Any]:
    """``f`` as a pure function of ``args``' state values: it returns the outputs
    (objects as carriers) and the arguments' new graph values."""
    from lens.nnx._autodiff import _pure_of
    from lens.nnx._graph import Walker
    from lens.nnx._transforms import _split_inputs

    walker = Walker(transform=name)
    n = len(args)
    skel, entries = _split_inputs(args, (None,) * n, walker)
    return _pure_of(f, skel, entries, n, name), entries, walker


def make_jaxpr(
    f: Callable[..., Any] | None = None,
    *,
    graph: bool | None = None,
    graph_updates: bool | None = None,
    static_argnums: int | tuple[int, ...] = (),
) -> Any:
    """``jax.make_jaxpr`` of a function of objects (their state as inputs)."""
    check_graph_modes("make_jaxpr", graph, graph_updates)
    if static_argnums:
        raise NotImplementedError(
            "nnx.make_jaxpr(static_argnums=...) is not supported by lens.nnx; close "
            "over static values instead."
        )
    if f is None:
        return functools.partial(make_jaxpr)

    @api_boundary
    def run(*args: Any) -> Any:
        pure, entries, _ = _pure_state_fn(f, args, "make_jaxpr")
        return jax.make_jaxpr(pure)([e.value for e in entries])

    return run


def checkify(
    f: Callable[..., Any],
    errors: Any = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Callable[..., Any]:
    """``jax.experimental.checkify.checkify`` for functions of objects: returns
    ``(error, output)``; the objects' updates come back."""
    from jax.experimental import checkify as ck

    from lens.nnx._transforms import _merge_outputs, _write_back

    check_graph_modes("checkify", graph, graph_updates)
    errors = ck.user_checks if errors is None else errors

    @functools.wraps(f)
    @api_boundary
    def run(*args: Any) -> Any:
        pure, entries, walker = _pure_state_fn(f, args, "checkify")
        err, (out_c, new_graph) = ck.checkify(pure, errors=errors)(
            [e.value for e in entries]
        )
        _write_back(entries, new_graph)
        return err, _merge_outputs(out_c, walker.nodes)

    return run


# ------------------------------------------------------- pytree annotations


class Data(Generic[A]):
    """``x: nnx.Data[T]``: the attribute holds state (a hint; lens finds state
    by value)."""


class Static(Generic[A]):
    """``x: nnx.Static[T]``: the attribute is static (a hint)."""


_DATA_TYPES: set[type] = set()


def register_data_type(type_: type, /) -> None:
    """Treat values of ``type_`` as state (data) in objects."""
    _DATA_TYPES.add(type_)


def is_data(value: Any, /) -> bool:
    """Whether ``value`` itself is state: an array, a Variable, an object."""
    return (
        isinstance(value, jax.Array | Variable | Object) or type(value) in _DATA_TYPES
    )


def has_data(value: Any, /) -> bool:
    """Whether ``value`` holds state anywhere (a list of Variables does)."""
    return any(is_data(x) for x in jax.tree.leaves(value, is_leaf=lambda x: is_data(x)))


def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` for objects (``@nnx.dataclass class P(nnx.Pytree)``):
    fields become attributes, compared by identity as objects are."""
    kwargs.setdefault("eq", False)
    if cls is None:
        return functools.partial(dataclass, **kwargs)
    return dataclasses.dataclass(cls, **kwargs)
