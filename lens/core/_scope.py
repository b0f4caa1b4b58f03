"""``Scope``: the variables and rng streams of one module (entry points: ``_entry``).

Variables are plain nested dicts ``{collection: {name or child: ...}}``. A root
scope holds the variable dict; a child scope (``push``) is a cursor into it at a
path, holding references to its sub-dicts. Rng streams are root keys plus the path
(see :mod:`lens.core._rng`). The public behaviour is ``flax.core.Scope``'s.

All scopes made by one ``init``/``apply``/``bind`` (or by one lifted reconstruction
inside a transform) share a :class:`Shared` record: whether they are still alive,
which lifted transforms they sit in (to explain a missing collection or stream),
and, while a pack trace records, what was written and created.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import jax

from lens import errors
from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict, freeze
from lens.configurations import config
from lens.core._filters import Filter, in_filter
from lens.core._lift_info import (
    LiftInfo,
    Shared,
    missing_error,
    not_mutable_error,
    rng_error,
)
from lens.core._rng import LazyRng, RngCounters, fold_path
from lens.core._tree import copy_tree
from lens.core._variable import (
    Variable,
    expected_shapes,
    leaf_shape,
    plain_array_types,
    put_variable,
    unbox_value,
)

T = TypeVar("T")
Array = Any
VariableDict = Mapping[str, Any]


class _DefaultSentinel:
    def __repr__(self) -> str:
        return "no_flag"


no_flag: Any = _DefaultSentinel()
"""The default of :meth:`Scope.get_flag`: no default given."""


class _ChildRngToken:
    def __repr__(self) -> str:
        return "child_rng_token"


child_rng_token: Any = _ChildRngToken()
"""Flax's marker for a child's counters; lens keeps them in ``RngCounters.children``."""


DuplicateScopeNameError = errors.DuplicateScopeNameError


class Scope:
    """The variables and rng streams of one module (or function) at one path.

    Like ``flax.core.Scope``: usually made by :func:`init`, :func:`apply` or
    :func:`bind`, with children made by :meth:`push` or :meth:`child`. It can also
    be constructed directly: ``Scope(variables, rngs, mutable=...)``.

    Args:
      variables: the variable dict ``{collection: tree}`` (used in place).
      rngs: ``{stream: key}`` (keys or :class:`~lens.core._rng.LazyRng`).
      name: this scope's name (None for a root).
      mutable: the collections that may be written (a filter).
      parent: the parent scope.
      path: the path from the root scope (the module path).
      debug_path: the path as shown in errors; lifted scopes show their transform
        there, e.g. ``/vmap(dense)``.
      flags: flags visible as ``scope.flags`` (``initializing`` is set by init).
    """

    __lens_view__ = "scope"  # drawn by lens.display (lens.show)

    __slots__ = (
        "_variables",
        "_rng_roots",
        "_rng_depth",
        "name",
        "parent",
        "path",
        "debug_path",
        "mutable",
        "flags",
        "_root",
        "_counters",
        "reservations",
        "_invalid",
        "_shared",
        "_mut",
        "__weakref__",
    )

    def __init__(
        self,
        variables: dict[str, Any],
        rngs: Mapping[str, Any] | None = None,
        name: str | None = None,
        mutable: Filter = False,
        parent: Scope | None = None,
        path: Iterable[str] = (),
        debug_path: Iterable[str] = (),
        flags: Mapping[str, Any] | None = None,
    ):
        self._variables = variables
        self.parent = parent
        self.name = name
        self.path = tuple(path)
        self.debug_path = tuple(debug_path) or self.path
        self.mutable = mutable
        self.flags = flags if isinstance(flags, FrozenDict) else freeze(flags or {})
        self._root = parent.root if parent is not None else None
        self._rng_roots = {
            k: v if isinstance(v, LazyRng) else LazyRng(v, ())
            for k, v in (rngs or {}).items()
        }
        self._rng_depth = len(self.path)
        self._counters = RngCounters()
        self.reservations: dict[str, set[str | None]] = {}
        self._invalid = False
        self._shared = parent._shared if parent is not None else Shared()
        self._mut: dict[str, bool] = {}

    @classmethod
    def _child_of(cls, parent: Scope, name: str, counters: RngCounters) -> Scope:
        """A child at ``parent.path + (name,)`` sharing everything but its view."""
        s = cls.__new__(cls)
        s._variables = {}
        s.parent = parent
        s.name = name
        s.path = parent.path + (name,)
        s.debug_path = parent.debug_path + (name,)
        s.mutable = parent.mutable
        s.flags = parent.flags
        s._root = parent.root
        s._rng_roots = parent._rng_roots
        s._rng_depth = parent._rng_depth
        s._counters = counters
        s.reservations = {}
        s._invalid = False
        s._shared = parent._shared
        s._mut = parent._mut
        return s

    def _copy(self) -> Scope:
        s = object.__new__(type(self))
        s._variables = self._variables
        s._rng_roots = self._rng_roots
        s._rng_depth = self._rng_depth
        s.name = self.name
        s.parent = self.parent
        s.path = self.path
        s.debug_path = self.debug_path
        s.mutable = self.mutable
        s.flags = self.flags
        s._root = self._root
        s._counters = self._counters
        s.reservations = self.reservations
        s._invalid = self._invalid
        s._shared = self._shared
        s._mut = self._mut
        return s

    # ------------------------------------------------------------------ basics

    def __eq__(self, other: object) -> bool:
        # A scope is a cursor into a variable dict and a counter tree.
        if not isinstance(other, Scope):
            return False
        return self is other or (
            self.root._variables is other.root._variables
            and self.path == other.path
            and self._counters is other._counters
        )

    def __hash__(self) -> int:
        return hash((id(self.root._variables), self.path, id(self._counters)))

    @property
    def root(self) -> Scope:
        """The outermost scope of this tree of scopes."""
        return self._root if self._root is not None else self

    @property
    def path_text(self) -> str:
        """The debug path as ``/a/b`` (``/`` for the root)."""
        return "/" + "/".join(str(p) for p in self.debug_path)

    @property
    def rngs(self) -> dict[str, LazyRng]:
        """The rng streams visible here, each a root key and this scope's suffix."""
        rel = self.path[self._rng_depth :]
        return {k: LazyRng(v.rng, v.suffix + rel) for k, v in self._rng_roots.items()}

    @property
    def rng_counters(self) -> RngCounters:
        """Per-stream ``make_rng`` counts of this scope (shared with lifted copies)."""
        return self._counters

    @rng_counters.setter
    def rng_counters(self, counters: RngCounters) -> None:
        self._counters = counters

    @property
    def invalid(self) -> bool:
        """Whether the scope can no longer be used (its init/apply returned)."""
        return self._invalid or not self._shared.alive

    @property
    def lifts(self) -> tuple[LiftInfo, ...]:
        """The lifted transforms this scope was rebuilt by, outermost first (lens)."""
        return self._shared.lifts

    def _check_valid(self) -> None:
        if self._invalid or not self._shared.alive:
            raise errors.InvalidScopeError(self.name, path=self.debug_path)

    @contextlib.contextmanager
    def temporary(self) -> Iterator[Scope]:
        """A context manager that invalidates this scope's tree on exit."""
        try:
            yield self
        finally:
            self.invalidate()

    def invalidate(self) -> None:
        """Ends the life of this scope and every scope of its tree."""
        self._invalid = True
        self._shared.alive = False

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written in this scope."""
        m = self._mut.get(col)
        if m is None:
            m = self._mut[col] = in_filter(self.mutable, col)
        return m

    def is_collection_empty(self, col: str) -> bool:
        """Whether collection ``col`` has no variables at all (in the whole tree)."""
        root_vars = self.root._variables
        return not root_vars.get(col)

    def has_flag(self, key: str) -> bool:
        """Whether flag ``key`` was set."""
        return key in self.flags

    def get_flag(self, key: str, default: Any = no_flag) -> Any:
        """Flag ``key``, or ``default``.

        Raises:
          KeyError: if the flag is not set and no default is given.
        """
        if key in self.flags:
            return self.flags[key]
        if default is no_flag:
            raise KeyError(
                f"Flag {key!r} is not set on the scope at {self.path_text}; pass "
                "a default: scope.get_flag(key, default)."
            )
        return default

    def __repr__(self) -> str:
        return f"Scope(path={self.path_text!r}, mutable={self.mutable!r})"

    # --------------------------------------------------------------- children

    def name_reserved(self, name: str, col: str | None = None) -> bool:
        """Whether ``name`` is taken by a child (``col=None``) or a variable of ``col``."""
        used = self.reservations.get(name)
        if used is None:
            return False
        return None in used or col is None or col in used

    def reserve(self, name: str, col: str | None = None) -> None:
        """Claims ``name`` for a child (``col=None``) or a variable of ``col``.

        Raises:
          TypeError: if ``name`` is not a string.
          DuplicateScopeNameError: (a ``ValueError``) if the name is taken.
        """
        if not isinstance(name, str):
            raise TypeError(
                f'The type of scope "{name}" should be string but it is {type(name)}\n'
                f"Names of children and variables in {self.path_text} must be str."
            )
        used = self.reservations.get(name)
        if used is None:
            self.reservations[name] = {col}
        elif None in used or col is None or col in used:  # name_reserved
            raise DuplicateScopeNameError(name, self.debug_path)
        else:
            used.add(col)
        usage = self._shared.usage
        if usage is not None:
            usage.declare(self.path, name, col)

    def default_name(self, prefix: str) -> str:
        """The first free name ``prefix{i}`` for i = 0, 1, ..."""
        i = 0
        while f"{prefix}{i}" in self.reservations:
            i += 1
        return f"{prefix}{i}"

    def push(
        self, name: str | None = None, prefix: str = "", reuse: bool = False
    ) -> Scope:
        """Creates a child scope; ``name=None`` picks ``prefix{i}``.

        With ``reuse=True`` the name may already be claimed (a child called again);
        the child keeps its rng counters across pushes either way.
        """
        if self._invalid or not self._shared.alive:  # _check_valid
            raise errors.InvalidScopeError(self.name, path=self.debug_path)
        if name is None:
            name = self.default_name(prefix)
        if not reuse or name not in self.reservations:
            self.reserve(name)
        return Scope._child_of(self, name, self._counters.child(name))

    def child(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        prefix: str | None = None,
        named_call: bool = True,
        **partial_kwargs: Any,
    ) -> Callable[..., Any]:
        """``fn`` with a child scope as its first argument (and ``partial_kwargs``).

        Calling the result again reuses the child's variables.

        Example:
            >>> import jax, jax.numpy as jnp
            >>> from lens.core import init, nn
            >>> def f(scope, x):
            ...     return scope.child(nn.dense, "hidden")(x, 3)
            >>> _, v = init(f)(jax.random.key(0), jnp.ones((1, 2)))
            >>> list(v["params"])
            ['hidden']
        """
        if name is None:
            if prefix is None:
                prefix = f"{fn.__name__}_" if hasattr(fn, "__name__") else ""
            name = self.default_name(prefix)
        scope = self.push(name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs = dict(partial_kwargs, **kwargs)
            if named_call:
                with jax.named_scope(name):
                    return fn(scope.rewound(), *args, **kwargs)
            return fn(scope.rewound(), *args, **kwargs)

        return wrapper

    def rewound(self, rewind_rngs: bool = False) -> Scope:
        """A fresh view of this scope: no names claimed; rng counters kept.

        Args:
          rewind_rngs: also restart the rng counters (the same keys again).
        """
        if self._invalid or not self._shared.alive:  # _check_valid
            raise errors.InvalidScopeError(self.name, path=self.debug_path)
        s = self._copy()
        s.reservations = {}
        if rewind_rngs:
            s._counters = RngCounters()
        return s

    # --------------------------------------------------------------- variables

    def _collection(self, col: str) -> Any:
        """The variables of ``col`` at this scope; an empty FrozenDict when it has
        none (as flax's: libraries iterate ``scope._collection('params')``)."""
        d = self._variables.get(col)
        if d is None:
            if self.parent is None:
                return FrozenDict()
            d = self.parent._collection(col).get(self.name)
            if d is None:
                return FrozenDict()
            self._variables[col] = d
        return d

    def _mutable_collection(self, col: str) -> dict[str, Any]:
        d = self._variables.get(col)
        if d is None:
            if self.parent is None:
                d = self._variables[col] = {}
            else:
                assert self.name is not None  # a child scope has a name
                p = self.parent._mutable_collection(col)
                d = p.get(self.name)
                if d is None:
                    d = p[self.name] = {}
                self._variables[col] = d
        return d

    def _populate_collections(self) -> None:
        for col in list(self.root._variables):
            self._collection(col)

    def has_variable(self, col: str, name: str) -> bool:
        """Whether variable ``name`` exists in collection ``col`` here."""
        d = self._collection(col)
        return d is not None and name in d

    def get_variable(
        self, col: str, name: str, default: Any = None, unbox: bool = False
    ) -> Any:
        """The stored value of a variable, or ``default`` if it does not exist.

        Args:
          col: the collection.
          name: the variable name.
          default: returned when the variable does not exist.
          unbox: strip :class:`~lens.core.meta.AxisMetadata` boxes. Off by default,
            as in Flax: ``get_variable`` shows the box, ``param``/``variable``
            unbox.
        """
        d = self._collection(col)
        if d is None or name not in d:
            return default
        v = d[name]
        return unbox_value(v) if unbox else v

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Writes a variable; its collection must be mutable here.

        Raises:
          ModifyScopeVariableError: if ``col`` is not mutable in this scope.
        """
        self._check_valid()
        if not self.is_mutable_collection(col):
            raise not_mutable_error(self, col, name)
        d = self._mutable_collection(col)
        shared = self._shared
        if shared.created is not None and name not in d:
            shared.created.append((col, self.path + (name,), value))
        put_variable(d, name, value)
        if shared.track is not None:
            shared.track.add((col, self.path + (name,)))

    def variable(
        self,
        col: str,
        name: str,
        init_fn: Callable[..., T] | None = None,
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> Variable[T]:
        """Returns a :class:`Variable`, creating it with ``init_fn(*init_args)``.

        Raises:
          ScopeCollectionNotFound: if the collection is empty and cannot be written.
          ScopeVariableNotFoundError: if it does not exist and cannot be created.
        """
        self.reserve(name, col)
        if not self.has_variable(col, name):
            if not self.is_mutable_collection(col) or init_fn is None:
                raise missing_error(self, col, name)
            self.put_variable(col, name, init_fn(*init_args, **init_kwargs))
        return Variable(self, col, name, unbox=unbox)

    def param(
        self,
        name: str,
        init_fn: Callable[..., T],
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> T:
        """Returns parameter ``name``, creating it with ``init_fn(rng, *init_args)``.

        The rng comes from the ``'params'`` stream. An existing parameter is checked
        against the shape ``init_fn`` would make.

        Raises:
          ScopeCollectionNotFound: if "params" is empty and cannot be written.
          ScopeParamNotFoundError: if it does not exist and cannot be created.
          ScopeParamShapeError: if the existing value has another shape.
        """
        self.reserve(name, "params")
        d = self._collection("params")
        if d is not None and name in d:
            value = d[name]
            if unbox:
                value = unbox_value(value)
            if init_fn is not None:
                expected = expected_shapes(init_fn, init_args, init_kwargs)
                leaves = (
                    (value,)
                    if type(value) in plain_array_types
                    else jax.tree_util.tree_leaves(value)
                )
                for leaf, shape in zip(leaves, expected):
                    actual = leaf_shape(leaf)
                    if actual != shape:
                        raise errors.ScopeParamShapeError(
                            name, self.path_text, actual, shape
                        )
            return value
        if not self.is_mutable_collection("params"):
            raise missing_error(self, "params", name)
        value = init_fn(self.make_rng("params"), *init_args, **init_kwargs)
        self.put_variable("params", name, value)
        return unbox_value(value) if unbox else value

    def variables(self) -> VariableDict:
        """All collections as seen from this scope (a shallow view, do not mutate)."""
        self._note_read_all()
        self._populate_collections()
        out = {col: d for col, d in self._variables.items() if d is not None}
        return freeze(out) if config.flax_return_frozendict else out

    def _note_read_all(self) -> None:
        usage = self._shared.usage
        if usage is not None:
            usage.read_all(self.path)

    def mutable_variables(self) -> VariableDict:
        """The mutable collections at this scope, as fresh plain dicts."""
        self._populate_collections()
        out = {
            col: copy_tree(d)
            for col, d in self._variables.items()
            if d is not None and self.is_mutable_collection(col)
        }
        return freeze(out) if config.flax_return_frozendict else out

    def collection(self, col: str) -> Mapping[str, Any]:
        """The (read-only view of) collection ``col`` at this scope, ``{}`` if absent."""
        self._note_read_all()
        d = self._collection(col)
        return d if d is not None else {}

    # -------------------------------------------------------------------- rngs

    def has_rng(self, name: str) -> bool:
        """Whether rng stream ``name`` is available here."""
        return name in self._rng_roots

    def make_rng(self, name: str = "params") -> Array:
        """Returns a new key from stream ``name`` (see :mod:`lens.core._rng`).

        Like Flax, a stream that was not given falls back to ``'params'`` when that
        stream exists.

        Raises:
          InvalidRngError: the stream (and ``'params'``) is not available here.
        """
        roots = self._rng_roots
        lazy = roots.get(name)
        if lazy is None:
            lazy = roots.get("params")
            if lazy is None:
                raise rng_error(self, name)
            name = "params"
        self._check_valid()
        counts = self._counters.counts
        c = counts.get(name, 0) + 1
        counts[name] = c
        return fold_path(lazy.rng, lazy.suffix + self.path[self._rng_depth :] + (c,))


show_at_flax_paths(__name__)
