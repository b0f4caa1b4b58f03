"""Named RNG streams for eager modules, and ``split_rngs``.

``Rngs(0, dropout=1)`` holds one :class:`RngStream` per name (``0`` is the
``default`` stream). Each stream is a key and a counter; calling it returns
``fold_in(key, count)`` and advances the counter, as in Flax NNX, so the same seed
gives the same parameters. A stream that was not given falls back to ``default``.

``split_rngs(splits=n)`` replaces streams' keys by ``n`` keys (and their counters by
``n`` zeros) for the duration of a call, so a ``vmap`` over the Rngs gives each
member its own key; the outer keys are restored after, advanced by one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from lens import errors
from lens._facades import show_at_flax_paths
from lens._hot_jit import hot_jit
from lens.nnx._graph.mode import set_graph_mode, set_graph_updates
from lens.nnx._graph.ops import iter_graph, recursive_map
from lens.nnx._objects.object import Pytree
from lens.nnx._objects.rng_types import (
    StreamBackup,
)
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.variable import RngCount, RngKey
from lens.traceback_util import api_boundary


def _random_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``stream.normal(shape)`` = ``jax.random.normal(stream(), shape)``."""

    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> jax.Array:
        return fn(self(), *args, **kwargs)

    return method


def _initializer_method(make: Callable[..., Any]) -> Callable[..., Any]:
    """``stream.lecun_normal()(shape)``: the initializer with this stream's key."""

    @functools.wraps(make)
    def method(self: Any, *args: Any, **kwargs: Any) -> Callable[..., jax.Array]:
        init = make(*args, **kwargs)
        return lambda *a, **k: init(self(), *a, **k)

    return method


_RANDOM = (
    "bits uniform randint permutation choice normal multivariate_normal "
    "truncated_normal bernoulli beta cauchy dirichlet exponential gamma loggamma "
    "poisson gumbel categorical laplace logistic pareto t chisquare f rademacher "
    "maxwell double_sided_maxwell weibull_min orthogonal generalized_normal ball "
    "rayleigh wald geometric triangular lognormal binomial multinomial"
).split()


_INITIALIZERS = (
    "delta_orthogonal glorot_normal glorot_uniform he_normal he_uniform "
    "kaiming_normal kaiming_uniform lecun_normal lecun_uniform variance_scaling "
    "xavier_normal xavier_uniform"
).split()


class _Sampling:
    """``jax.random``'s samplers and ``jax.nn.initializers``'s initializers as
    methods that draw from this stream (``rngs.normal((2, 3))``)."""


for _name in _RANDOM:
    if hasattr(jax.random, _name):
        setattr(_Sampling, _name, _random_method(getattr(jax.random, _name)))


for _name in _INITIALIZERS:
    setattr(_Sampling, _name, _initializer_method(getattr(jax.nn.initializers, _name)))


def _seed_to_key(seed: Any, tag: str) -> jax.Array:
    """A typed key from what a stream is given: a typed key as it is, an
    old-style ``uint32[..., 2]`` key (``jax.random.PRNGKey(0)``, or a batch of
    them) wrapped as flax.nnx wraps it, ``jax.random.key(seed)`` for an integer
    seed; anything else is flax's ValueError, with the fix."""
    dtype = getattr(seed, "dtype", None)
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return seed
    if not (
        isinstance(seed, int)  # a bool too, as in flax.nnx (True is seed 1)
        or (dtype is not None and jnp.issubdtype(dtype, jnp.integer))
    ):
        raise errors.InvalidRngError(
            f"Invalid rng value: {seed}, expected a jax.Array of "
            f"jax.dtypes.prng_key sub-dtype\nThe {tag!r} stream needs an integer "
            f"seed or a key: nnx.Rngs({tag}=0) or nnx.Rngs({tag}=jax.random.key(0))."
        )
    if dtype == jnp.uint32 and getattr(seed, "shape", ())[-1:] == (2,):
        return jax.random.wrap_key_data(jnp.asarray(seed))
    return jax.random.key(seed)


def _fold_and_count(key: jax.Array, count: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(fold_in(key, count), count + 1)``, the same ops compiled as one call.

    Eagerly (each layer's ``rngs.params()`` in a notebook) this is one dispatch
    through jit's C++ fast path instead of two eager ops; ``fold_in`` alone costs
    more in Python than this whole call. The key is the same bits.
    """
    return jax.random.fold_in(key, count), count + 1


def _fold_and_count_eagerly(
    key: jax.Array, count: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """:func:`_fold_and_count` for a stream's first eager calls: the count goes up
    on the host (the same uint32 bits, back where the count was), so a first model
    does not compile an eager ``uint32 + 1`` (~20 ms) that pure JAX, counting in
    Python, never needs."""
    if not count.is_fully_addressable:  # spread over processes: count on devices
        return _fold_and_count(key, count)
    up = np.asarray(count) + np.uint32(1)
    # a count placed by the user stays where it was; else it stays uncommitted
    # (a committed one would be another cache key for every program it meets)
    placed = jax.device_put(up, count.sharding if count.committed else None)
    return jax.random.fold_in(key, count), placed


# compiled once hot (lens/_hot_jit.py)
_next_key = hot_jit(_fold_and_count, eager=_fold_and_count_eagerly)


def _is_concrete(x: Any) -> bool:
    """An eager JAX array: under a trace (or for numpy values) the stream keeps
    the plain ops, so jaxprs and stored types are as they were."""
    return isinstance(x, jax.Array) and not isinstance(x, Tracer)


class RngStream(Pytree, _Sampling):
    """One named stream: ``stream()`` returns a new key."""

    def __init__(self, key: Any, *, tag: str):
        key = _seed_to_key(key, tag)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        # one counter per key: a split stream (keys of shape (n,)) maps under vmap
        self.count = RngCount(jnp.zeros(jnp.shape(key), jnp.uint32), tag=tag)

    def __call__(self) -> jax.Array:
        self.count._check_can_update()  # before reading a key leaked from a trace
        # v[...] reads and writes: also works on a hijax Variable's tracer
        count = self.count[...]
        key = self.key[...]
        if _is_concrete(key) and _is_concrete(count):
            key, self.count[...] = _next_key(key, count)
            return key
        key = jax.random.fold_in(key, count)
        self.count[...] = count + 1
        return key

    def split(self, k: int | tuple[int, ...]) -> RngStream:
        """A new stream of ``k`` keys (for a vmap over it)."""
        return RngStream(jax.random.split(self(), k), tag=self.tag)

    def fork(self, *, split: int | tuple[int, ...] | None = None) -> RngStream:
        """A new stream seeded from this one (advances this one by one)."""
        key = self()
        if split is not None:
            key = jax.random.split(key, split)
        return RngStream(key, tag=self.tag)

    def broadcast(self, k: int | tuple[int, ...]) -> RngStream:
        """A new stream whose one new key is repeated to shape ``k``."""
        key = self()
        shape = (k,) if isinstance(k, int) else tuple(k)
        return RngStream(jnp.broadcast_to(key, shape + key.shape), tag=self.tag)


class Rngs(Pytree, _Sampling):
    """Named RNG streams: ``Rngs(0)``, ``Rngs(params=0, dropout=1)``.

    ``rngs.params()`` (or ``rngs['params']()``) returns a new key of stream
    ``params``, or of ``default`` when there is no such stream; ``rngs()`` uses
    ``default``.
    """

    def __init__(self, default: Any = None, **rngs: Any):
        if default is not None:  # as flax.nnx: a mapping of streams, or a seed
            if isinstance(default, Mapping):  # for the default stream, added last
                rngs = {**default, **rngs}
            else:
                rngs["default"] = default
        # No streams at all (Rngs(), Rngs(None)) is a valid, empty Rngs, as in
        # flax.nnx: drawing from it says which stream is missing.
        for name, seed in rngs.items():
            if isinstance(seed, RngStream):  # Rngs(**other.items()): its stream
                seed = seed.key.value
            setattr(self, name, RngStream(seed, tag=name))

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._default_for(name, AttributeError)

    def __getitem__(self, name: str) -> RngStream:
        # as flax.nnx: a missing stream is a KeyError here, an AttributeError
        # as an attribute; any other name (a number, None) falls back alike
        stream = self.__dict__.get(name)
        if isinstance(stream, RngStream):
            return stream
        return self._default_for(name, KeyError)

    def _default_for(self, name: Any, error: type[Exception]) -> RngStream:
        """The default stream, standing in for the missing stream ``name``."""
        d = self.__dict__
        if "default" in d:
            return d["default"]
        names = [k for k, v in d.items() if isinstance(v, RngStream)]
        raise error(
            f"No RngStream named '{name}' found in Rngs. There is no 'default' "
            f"stream to fall back on either (streams: {names}).\nAdd it: "
            f"Rngs({name}=0, ...), or give a default seed: Rngs(0, ...)."
        )

    def __contains__(self, name: str) -> bool:
        return isinstance(self.__dict__.get(name), RngStream)

    def __iter__(self) -> Iterator[str]:
        """The stream names, as flax.nnx's (without it, ``iter(rngs)`` would fall
        back on ``rngs[0], rngs[1], ...``, each the default stream, forever)."""
        return iter(self.streams())

    def __len__(self) -> int:
        return len(self.streams())

    def __call__(self) -> jax.Array:
        return self.default()

    def streams(self) -> dict[str, RngStream]:
        return {k: v for k, v in self.__dict__.items() if isinstance(v, RngStream)}

    def items(self) -> Any:
        """``(name, stream)`` pairs."""
        return iter(self.streams().items())

    def _per_stream(
        self, how: Any, make: Callable[[RngStream, Any], RngStream]
    ) -> Rngs:
        if how is None:
            how = {}
        elif not isinstance(how, dict):
            how = {...: how}
        preds = [(to_predicate(f), n) for f, n in how.items()]
        out = {}
        for name, stream in self.items():
            n = next((n for p, n in preds if p((), stream)), None)
            out[name] = make(stream, n)
        new = Rngs.__new__(Rngs)
        for name, stream in out.items():
            object.__setattr__(new, name, stream)
        return new

    def split(self, k: Any) -> Rngs:
        """New Rngs whose streams hold ``k`` keys each (a dict of filter -> k splits
        only those streams; the others are kept)."""
        return self._per_stream(k, lambda s, n: s.split(n) if n is not None else s)

    def broadcast(self, k: Any) -> Rngs:
        """New Rngs whose streams hold one new key repeated ``k`` times (a dict of
        filter -> k broadcasts only those streams; the others are kept)."""
        return self._per_stream(k, lambda s, n: s.broadcast(n) if n is not None else s)

    def fork(self, /, *, split: Any = None) -> Rngs:
        """New Rngs with a new key per stream (advances each stream by one)."""
        return self._per_stream(split, lambda s, n: s.fork(split=n))


class SplitBackups(Iterable[StreamBackup]):
    """What ``split_rngs`` replaced; ``restore()`` (or leaving the ``with``) puts
    it back. Iterating gives the ``(stream, key, count)`` backups."""

    def __init__(self, backups: list[tuple[RngStream, Any, Any]]):
        self.backups = backups

    def restore(self) -> None:
        for stream, key, count in self.backups:
            object.__setattr__(stream.key, "_raw_value", key)
            object.__setattr__(stream.count, "_raw_value", count)
        self.backups = []

    def __iter__(self) -> Iterator[StreamBackup]:
        return iter(list(self.backups))

    def __enter__(self) -> SplitBackups:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


def _split(nodes: list[Any], splits: int, only: Any, squeeze: bool) -> SplitBackups:
    pred = to_predicate(only)
    backups = []
    seen: set[int] = set()
    for node in nodes:
        for path, x in iter_graph(node):
            if not isinstance(x, RngStream) or id(x) in seen:
                continue
            seen.add(id(x))
            if not (pred(path, x.key) or pred(path + ("key",), x.key)):
                continue
            key = x()
            backups.append((x, x.key.value, x.count.value))
            keys = jax.random.split(key, splits)
            object.__setattr__(x.key, "_raw_value", keys[0] if squeeze else keys)
            shape = () if squeeze else (splits,)
            object.__setattr__(x.count, "_raw_value", jnp.zeros(shape, jnp.uint32))
    return SplitBackups(backups)


def split_rngs(
    node: Any = None,
    /,
    *,
    splits: int,
    only: Any = ...,
    squeeze: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """Splits RNG streams into ``splits`` keys, for a transform that maps over them.

    ``split_rngs(rngs, splits=5)`` splits now and returns a handle to use as a
    context manager (the keys are restored when the ``with`` ends).
    ``@split_rngs(splits=5)`` decorates a function: the streams in its arguments
    are split for each call and restored after. ``only`` filters the streams (a
    stream name, a tuple of names, ...).
    """
    in_place = _in_place(graph, graph_updates)
    if isinstance(splits, tuple) and not in_place:
        pass  # several axes: the simple mode returns keys of shape splits
    elif not isinstance(splits, int) or splits < 0:
        raise ValueError(
            f"split_rngs: splits must be an int >= 0, got {splits!r}.\nGive the "
            "size of the axis the keys are split for (vmap's axis_size, scan's length)."
        )
    if squeeze and splits != 1:
        raise ValueError("squeeze=True is only supported for splits=1")
    if node is not None and not callable(node) or isinstance(node, Pytree):
        if not in_place:
            return _split_copy(node, splits, only, squeeze, graph)
        return _split([node], splits, only, squeeze)

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        @api_boundary
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not in_place:
                args, kwargs = _split_copy((args, kwargs), splits, only, squeeze, graph)
                return f(*args, **kwargs)
            nodes = [
                x
                for x in jax.tree.leaves(
                    (args, kwargs), is_leaf=lambda x: isinstance(x, Pytree)
                )
                if isinstance(x, Pytree)
            ]
            with _split(nodes, splits, only, squeeze):
                return f(*args, **kwargs)

        return wrapper

    return decorate if node is None else decorate(node)


def _in_place(graph: bool | None, graph_updates: bool | None) -> bool:
    """flax.nnx's full mode (graph and graph_updates) splits streams in place and
    returns backups; the simple modes return a copy with split streams."""
    g = set_graph_mode.current_value() if graph is None else graph
    u = set_graph_updates.current_value() if graph_updates is None else graph_updates
    return bool(g and u)


def _split_copy(
    node: Any, splits: Any, only: Any, squeeze: bool, graph: bool | None
) -> Any:
    """A copy of ``node`` whose streams (those ``only`` selects) hold ``splits``
    keys each, drawn from the originals (which advance by one)."""
    pred = to_predicate(only)
    shape = (splits,) if isinstance(splits, int) else tuple(splits)
    originals = dict(_streams(node))  # drawn from, so they advance (as flax's)

    def split_stream(path: tuple, x: Any) -> Any:
        if not (isinstance(x, RngStream) and pred(path, x)):
            return x
        key = jax.random.split(originals.get(tuple(path), x)(), shape)
        if squeeze:
            key = key[0]
        return RngStream(key, tag=x.tag)

    return recursive_map(split_stream, node, graph=graph)


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
    pass

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
    in_place = _in_place(graph, graph_updates)
    if node is None:

        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if not in_place:
                    args, kwargs = fork_rngs(
                        (args, kwargs), split=split, graph=graph, graph_updates=False
                    )
                    return f(*args, **kwargs)
                with fork_rngs(args, split=split):
                    return f(*args, **kwargs)

            return wrapper

        return decorate
    how = {} if split is None else split if isinstance(split, dict) else {...: split}
    preds = [(to_predicate(f), n) for f, n in how.items()]
    if not in_place:

        def fork_stream(path: tuple, x: Any) -> Any:
            if not isinstance(x, RngStream):
                return x
            n = next((n for p, n in preds if p(path, x)), None)
            return x.fork(split=n)

        return recursive_map(fork_stream, node, graph=graph)
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
        object.__setattr__(stream.key, "_raw_value", key)
        object.__setattr__(stream.count, "_raw_value", jnp.zeros(key.shape, jnp.uint32))
    return SplitBackups(backups)


def backup_keys(node: Any, /, *, graph: bool | None = None) -> list[StreamBackup]:
    """``(stream, key)`` of every RngStream in ``node``, for ``restore_rngs`` to
    put the keys back after they were replaced (``reseed``, a split)."""
    return [
        (s, s.key[...])
        for _, s in iter_graph(node, graph=graph)
        if isinstance(s, RngStream)
    ]


def restore_rngs(backups: Any, /) -> None:
    """Puts back the keys ``fork_rngs``/``split_rngs`` replaced."""
    if isinstance(backups, SplitBackups):
        backups.restore()
        return
    for stream, key, *count in backups:
        object.__setattr__(stream.key, "_raw_value", key)
        if count:
            object.__setattr__(stream.count, "_raw_value", count[0])


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
    """A copy of ``node`` whose streams are split, broadcast or forked (flax.nnx's
    ``with_rngs``); without ``node``, a decorator doing so to a call's arguments.

    ``split`` (an int, a shape, or ``{filter: shape}``) gives a stream that many
    keys, one per member of a mapped call; ``broadcast`` gives it one new key
    repeated to that shape (the same dropout mask at every scan step); ``fork``
    (a filter) gives the remaining streams one new key each. The first rule that
    matches a stream wins, in that order; the originals advance by one draw.

    Example:
        >>> from lens import nnx
        >>> rngs = nnx.Rngs(params=0, dropout=1)
        >>> new = nnx.with_rngs(rngs, split={"params": 4}, broadcast=3)
        >>> new.params.key.shape, new.dropout.key.shape
        ((4,), (3,))
    """
    del graph_updates  # one copy in every mode (flax raises in its full mode)
    if node is None:

        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = with_rngs(
                    (args, kwargs),
                    split=split,
                    fork=fork,
                    broadcast=broadcast,
                    only=only,
                    graph=graph,
                )
                return f(*args, **kwargs)

            return wrapper

        return decorate
    rules = [("split", f, p, n) for f, p, n in _shape_rules(split)]
    rules += [("broadcast", f, p, n) for f, p, n in _shape_rules(broadcast)]
    forks = fork if isinstance(fork, list | tuple) else () if fork is None else (fork,)
    rules += [("fork", f, to_predicate(f), None) for f in forks]
    selected = to_predicate(only)
    originals = dict(_streams(node))

    def replace(path: tuple, x: Any) -> Any:
        if not (isinstance(x, RngStream) and selected(path, x)):
            return x
        source = originals.get(tuple(path), x)
        matches: dict[str, tuple[Any, Any]] = {}
        for how, filt, pred, shape in rules:
            if how not in matches and pred(path, x):
                matches[how] = (filt, shape)
        _check_one_rule(path, matches)
        if "split" in matches:
            shape = matches["split"][1]
            return RngStream(jax.random.split(source(), shape), tag=x.tag)
        if "broadcast" in matches:
            return source.broadcast(matches["broadcast"][1])
        return source.fork() if "fork" in matches else x

    return recursive_map(replace, node, graph=graph)


def _check_one_rule(path: tuple, matches: dict[str, tuple[Any, Any]]) -> None:
    """Refuses a stream that two rules with specific filters select (a catch-all
    filter, ``...`` or True, gives way to the others), as flax.nnx does."""
    specific = [
        how for how, (f, _) in matches.items() if f is not ... and f is not True
    ]
    if len(matches) > 1 and len(specific) > 1:
        rules = "\n".join(
            f"  - {how} matches filter {f!r}" for how, (f, _) in matches.items()
        )
        raise ValueError(
            f"RngStream at path {path} matches multiple rules:\n{rules}\nGive each "
            "stream one rule: make the filters of split/broadcast/fork disjoint."
        )


def _shape_rules(spec: Any) -> list[tuple[Any, Any, Any]]:
    """``[(filter, predicate, shape)]`` of an int, a shape or a ``{filter: shape}``."""
    if spec is None:
        return []
    items = spec.items() if isinstance(spec, Mapping) else [(..., spec)]
    return [(f, to_predicate(f), n) for f, n in items]


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
