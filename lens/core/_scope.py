"""``Scope``: the variables and rng streams of one module, and ``init``/``apply``.

Variables are plain nested dicts ``{collection: {name or child: ...}}``. All scopes
created by one ``init``/``apply`` (or by one lifted reconstruction inside a
transform) share a ``_Frame`` that holds the variable dicts, the root rng keys, the
mutability filter and whether the frame is still alive.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from lens import errors
from lens.core import _meta
from lens.core._filters import Filter, canonical_filter, in_filter
from lens.core._rng import RngCounters, fold_path, is_key

T = TypeVar("T")
Array = Any
VariableDict = dict[str, Any]


class LiftInfo:
    """What one lifted transform let through; used to explain missing state."""

    __slots__ = (
        "transform",
        "path",
        "in_filter",
        "out_filter",
        "rng_filter",
        "hint",
        "groups",
        "rng_groups",
    )

    def __init__(
        self,
        transform: str,
        path: tuple[str, ...],
        in_filter: Filter,
        out_filter: Filter,
        rng_filter: Filter,
        hint: Callable[[str, str], str] | None,
        groups: tuple[tuple[Filter, str], ...] = (),
        rng_groups: tuple[tuple[Filter, str], ...] = (),
    ):
        self.transform = transform
        self.path = path
        self.in_filter = in_filter
        self.out_filter = out_filter
        self.rng_filter = rng_filter
        self.hint = hint
        # (filter, how it is lifted) per group, e.g. ("params", "axis 0"): for displays.
        self.groups = groups
        self.rng_groups = rng_groups

    def fix(self, kind: str, name: str) -> str:
        """How to lift collection (``kind='collection'``) or stream ``name``."""
        if self.hint is not None:
            return self.hint(kind, name)
        if kind == "rng":
            return f'Add "{name}" to the rng filters of {self.transform}.'
        return f'Add "{name}" to the variable filters of {self.transform}.'


class _Frame:
    """State shared by the scopes of one init/apply or one lifted reconstruction."""

    __slots__ = (
        "variables",
        "rngs",
        "mutable",
        "_mut",
        "alive",
        "lifts",
        "track",
        "created",
        "flags",
    )

    def __init__(
        self,
        variables: dict[str, Any],
        rngs: dict[str, Any],
        mutable: Filter,
        flags: Mapping[str, Any],
        lifts: tuple[LiftInfo, ...] = (),
    ):
        self.variables = variables
        self.rngs = rngs
        self.mutable = mutable
        self._mut: dict[str, bool] = {}
        self.alive = True
        self.lifts = lifts
        self.track: set[tuple[str, tuple[str, ...]]] | None = None
        # (collection, path, value) of each variable created, when recording.
        self.created: list[tuple[str, tuple[str, ...], Any]] | None = None
        self.flags = flags

    def is_mutable(self, col: str) -> bool:
        m = self._mut.get(col)
        if m is None:
            m = self._mut[col] = in_filter(self.mutable, col)
        return m


# Expected parameter shapes, keyed by (init_fn, args, kwargs); saves an eval_shape
# per parameter per apply. Bounded: cleared when full.
_SHAPE_CACHE: dict[Any, tuple[tuple[int, ...], ...]] = {}
_SHAPE_CACHE_MAX = 8192


def _leaf_shape(x: Any) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _expected_shapes(init_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    try:
        key: Any = (init_fn, args, tuple(sorted(kwargs.items())) if kwargs else ())
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        hit = _SHAPE_CACHE.get(key)
        if hit is not None:
            return hit
    abstract = jax.eval_shape(lambda: init_fn(jax.random.key(0), *args, **kwargs))
    shapes = tuple(
        _leaf_shape(x) for x in jax.tree_util.tree_leaves(_meta.unbox(abstract))
    )
    if key is not None:
        if len(_SHAPE_CACHE) >= _SHAPE_CACHE_MAX:
            _SHAPE_CACHE.clear()
        _SHAPE_CACHE[key] = shapes
    return shapes


class Variable(Generic[T]):
    """A handle on one variable: read and write it through ``.value``.

    With ``unbox=True`` (the default) ``.value`` is the plain array even when the
    stored value is an :class:`~lens.core.meta.AxisMetadata` box, and writing keeps
    the box around the new value.
    """

    __slots__ = ("scope", "collection", "name", "unbox")

    def __init__(self, scope: Scope, collection: str, name: str, unbox: bool = True):
        self.scope = scope
        self.collection = collection
        self.name = name
        self.unbox = unbox

    @property
    def value(self) -> T:
        """The current value (unboxed unless ``unbox=False``)."""
        v = self.scope.get_variable(self.collection, self.name, unbox=self.unbox)
        return v

    @value.setter
    def value(self, value: T) -> None:
        if self.unbox:
            old = self.scope.get_variable(self.collection, self.name, unbox=False)
            value = _meta.replace_boxed(old, value)
        self.scope.put_variable(self.collection, self.name, value)

    def is_mutable(self) -> bool:
        """Whether the variable's collection is mutable in its scope."""
        return self.scope.is_mutable_collection(self.collection)

    def __repr__(self) -> str:
        return (
            f"Variable(collection={self.collection!r}, name={self.name!r}, "
            f"path={self.scope.path_text!r})"
        )


class Scope:
    """The variables and rng streams of one module (or function) at one path.

    Create scopes with :func:`init`, :func:`apply` or :func:`bind`; make children
    with :meth:`push`.
    """

    __slots__ = (
        "_frame",
        "name",
        "parent",
        "path",
        "_cols",
        "_counters",
        "_reservations",
        "__weakref__",
    )

    def __init__(
        self,
        frame: _Frame,
        name: str | None = None,
        parent: Scope | None = None,
        path: tuple[str, ...] = (),
        counters: RngCounters | None = None,
    ):
        self._frame = frame
        self.name = name
        self.parent = parent
        self.path = path
        self._cols: dict[str, Any] = {}
        self._counters = counters if counters is not None else RngCounters()
        self._reservations: dict[str, set[str | None]] = {}

    # ------------------------------------------------------------------ basics

    @property
    def path_text(self) -> str:
        """The path as ``/a/b`` (``/`` for the root)."""
        return errors.path_text(self.path)

    @property
    def root(self) -> Scope:
        """The outermost scope of this frame."""
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    @property
    def rngs(self) -> dict[str, Any]:
        """The root keys of the rng streams visible in this scope."""
        return self._frame.rngs

    @property
    def mutable(self) -> Filter:
        """The mutability filter of this scope."""
        return self._frame.mutable

    @property
    def flags(self) -> Mapping[str, Any]:
        """Flags passed to init/apply (``initializing`` is set by init)."""
        return self._frame.flags

    def get_flag(self, key: str, default: Any = None) -> Any:
        """Returns flag ``key`` or ``default``."""
        return self._frame.flags.get(key, default)

    def _check_valid(self) -> None:
        if not self._frame.alive:
            raise errors.InvalidScopeError(self.path)

    def invalidate(self) -> None:
        """Ends the life of every scope of this frame; later use raises."""
        self._frame.alive = False

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written in this scope."""
        return self._frame.is_mutable(col)

    def __repr__(self) -> str:
        return f"Scope(path={self.path_text!r}, mutable={self._frame.mutable!r})"

    # Displays (lens.display is imported only when a scope is shown).
    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        from lens.display import ScopeView

        return ScopeView(self)._repr_mimebundle_()

    def __rich__(self) -> Any:
        from lens.display import ScopeView

        return ScopeView(self).__rich__()

    # --------------------------------------------------------------- children

    def reserve(self, name: str, col: str | None = None) -> None:
        """Claims ``name`` for a submodule (``col=None``) or a variable of ``col``.

        Raises:
          NameInUseError: if a submodule, or a variable of the same collection,
            already has the name.
        """
        if not isinstance(name, str):
            raise TypeError(
                f"Names in {self.path_text} must be strings, got {name!r} "
                f"({type(name).__name__})."
            )
        used = self._reservations.get(name)
        if used is None:
            self._reservations[name] = {col}
            return
        if col is None or None in used or col in used:
            kind = "submodule" if col is None else f'variable in "{col}"'
            raise errors.NameInUseError(kind, name, self.path)
        used.add(col)

    def default_name(self, prefix: str) -> str:
        """The first free name ``prefix{i}`` for i = 0, 1, ..."""
        i = 0
        while f"{prefix}{i}" in self._reservations:
            i += 1
        return f"{prefix}{i}"

    def push(
        self, name: str | None = None, prefix: str = "", reuse: bool = False
    ) -> Scope:
        """Creates a child scope; ``name=None`` picks ``prefix{i}``.

        With ``reuse=True`` the name may already be claimed (a submodule called
        again); the child keeps its rng counters across pushes either way.
        """
        self._check_valid()
        if name is None:
            name = self.default_name(prefix)
        if not reuse or name not in self._reservations:
            self.reserve(name)
        return Scope(
            self._frame,
            name=name,
            parent=self,
            path=self.path + (name,),
            counters=self._counters.child(name),
        )

    def rewound(self, rewind_rngs: bool = False) -> Scope:
        """A fresh view of this scope: no names claimed; rng counters kept.

        Args:
          rewind_rngs: also restart the rng counters (the same keys again).
        """
        self._check_valid()
        counters = RngCounters() if rewind_rngs else self._counters
        s = Scope(self._frame, self.name, self.parent, self.path, counters)
        return s

    # --------------------------------------------------------------- variables

    def _collection(self, col: str) -> Any:
        d = self._cols.get(col)
        if d is None:
            if self.parent is None:
                d = self._frame.variables.get(col)
            else:
                p = self.parent._collection(col)
                d = p.get(self.name) if p is not None else None
            if d is not None:
                self._cols[col] = d
        return d

    def _mutable_collection(self, col: str) -> dict[str, Any]:
        d = self._cols.get(col)
        if d is None:
            if self.parent is None:
                d = self._frame.variables.get(col)
                if d is None:
                    d = self._frame.variables[col] = {}
            else:
                p = self.parent._mutable_collection(col)
                d = p.get(self.name)
                if d is None:
                    d = p[self.name] = {}
            self._cols[col] = d
        return d

    def has_variable(self, col: str, name: str) -> bool:
        """Whether variable ``name`` exists in collection ``col`` here."""
        self._check_valid()
        d = self._collection(col)
        return d is not None and name in d

    def get_variable(
        self, col: str, name: str, default: Any = None, unbox: bool = True
    ) -> Any:
        """Returns the value of a variable, or ``default`` if it does not exist.

        Args:
          col: the collection.
          name: the variable name.
          default: returned when the variable does not exist.
          unbox: strip :class:`~lens.core.meta.AxisMetadata` boxes (default True).
        """
        self._check_valid()
        d = self._collection(col)
        if d is None or name not in d:
            return default
        v = d[name]
        if unbox and isinstance(v, _meta.AxisMetadata):
            return _meta.unbox(v)
        return v

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Writes a variable; its collection must be mutable here.

        Raises:
          ModifyScopeVariableError: if ``col`` is not mutable in this scope.
        """
        self._check_valid()
        frame = self._frame
        if not frame.is_mutable(col):
            raise self._not_mutable_error(col, name)
        d = self._mutable_collection(col)
        if frame.created is not None and name not in d:
            frame.created.append((col, self.path + (name,), value))
        d[name] = value
        if frame.track is not None:
            frame.track.add((col, self.path + (name,)))

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
          ScopeVariableNotFoundError: if it does not exist and ``col`` is immutable.
        """
        self.reserve(name, col)
        if not self.has_variable(col, name):
            if not self._frame.is_mutable(col) or init_fn is None:
                raise self._missing_error(col, name)
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
          ScopeParamNotFoundError: if it does not exist and params are immutable.
          ScopeParamShapeError: if the existing value has another shape.
        """
        self.reserve(name, "params")
        d = self._collection("params")
        if d is not None and name in d:
            value = d[name]
            if init_fn is not None:
                expected = _expected_shapes(init_fn, init_args, init_kwargs)
                leaves = jax.tree_util.tree_leaves(_meta.unbox(value))
                actual = tuple(_leaf_shape(x) for x in leaves)
                if expected != actual:
                    exp = expected[0] if len(expected) == 1 else expected
                    act = actual[0] if len(actual) == 1 else actual
                    raise errors.ScopeParamShapeError(name, self.path, exp, act)
        else:
            if not self._frame.is_mutable("params"):
                raise self._missing_error("params", name)
            value = init_fn(self.make_rng("params"), *init_args, **init_kwargs)
            self.put_variable("params", name, value)
        if unbox and isinstance(value, _meta.AxisMetadata):
            return _meta.unbox(value)
        return value

    def variables(self) -> VariableDict:
        """All collections as seen from this scope (a shallow view, do not mutate)."""
        self._check_valid()
        out = {}
        for col in self._frame.variables:
            d = self._collection(col)
            if d is not None:
                out[col] = d
        return out

    def mutable_variables(self) -> VariableDict:
        """The mutable collections at this scope, as fresh plain dicts."""
        self._check_valid()
        return {
            col: _copy_tree(d)
            for col, d in self.variables().items()
            if self._frame.is_mutable(col)
        }

    def collection(self, col: str) -> Mapping[str, Any]:
        """The (read-only view of) collection ``col`` at this scope, ``{}`` if absent."""
        self._check_valid()
        d = self._collection(col)
        return d if d is not None else {}

    def is_collection_empty(self, col: str) -> bool:
        """Whether collection ``col`` has nothing at this scope."""
        return not self.collection(col)

    # -------------------------------------------------------------------- rngs

    def has_rng(self, name: str) -> bool:
        """Whether rng stream ``name`` is available here."""
        return name in self._frame.rngs

    def make_rng(self, name: str = "params") -> Array:
        """Returns a new key from stream ``name`` (see :mod:`lens.core._rng`).

        Like Flax, a stream that was never given falls back to ``'params'``; a
        stream hidden by a lifted transform raises.

        Raises:
          RngNotLiftedError: the stream exists outside but a transform hid it.
          InvalidRngError: the stream was not given to init/apply.
        """
        self._check_valid()
        rngs = self._frame.rngs
        key = rngs.get(name)
        if key is None:
            for info in self._frame.lifts:
                if not in_filter(info.rng_filter, name):
                    raise errors.RngNotLiftedError(
                        name,
                        self.path,
                        f"{info.transform} at {errors.path_text(info.path)}",
                        info.fix("rng", name),
                    )
            if "params" in rngs:
                name, key = "params", rngs["params"]
            else:
                raise errors.InvalidRngError(name, self.path)
        counts = self._counters.counts
        c = counts.get(name, 0) + 1
        counts[name] = c
        return fold_path(key, self.path + (c,))

    # ------------------------------------------------------------------ errors

    def _lift_blocking(self, col: str, for_write: bool) -> LiftInfo | None:
        for info in self._frame.lifts:
            if not in_filter(info.in_filter, col):
                return info
            if for_write and not in_filter(info.out_filter, col):
                return info
        return None

    def _missing_error(self, col: str, name: str) -> Exception:
        info = self._lift_blocking(col, for_write=False)
        if info is not None:
            where = f"{info.transform} at {errors.path_text(info.path)}"
            return errors.CollectionNotLiftedError(
                col, name, self.path, where, info.fix("collection", col)
            )
        if col == "params":
            return errors.ScopeParamNotFoundError(name, self.path)
        return errors.ScopeVariableNotFoundError(name, col, self.path)

    def _not_mutable_error(self, col: str, name: str) -> Exception:
        info = self._lift_blocking(col, for_write=True)
        if info is not None:
            where = f"{info.transform} at {errors.path_text(info.path)}"
            hint = (
                f'"{col}" is not among the collections that {where} returns, so '
                f"writes to it inside would be lost.\n{info.fix('collection', col)}"
            )
            return errors.ModifyScopeVariableError(col, name, self.path, hint)
        return errors.ModifyScopeVariableError(col, name, self.path)


# ----------------------------------------------------------------------- helpers


def _copy_tree(d: Any) -> Any:
    """Copies the dict structure of a variable tree (leaves are shared)."""
    if isinstance(d, Mapping):
        return {k: _copy_tree(v) for k, v in d.items()}
    return d


def _check_variables(variables: Any) -> None:
    if not isinstance(variables, Mapping):
        raise errors.ApplyScopeInvalidVariablesTypeError(variables)
    for v in variables.values():
        if not isinstance(v, Mapping):
            raise errors.ApplyScopeInvalidVariablesStructureError(list(variables))


def _check_rngs(rngs: Any) -> dict[str, Any]:
    if rngs is None:
        return {}
    if is_key(rngs):
        return {"params": rngs}
    if not isinstance(rngs, Mapping):
        raise errors.InvalidRngError(
            "params",
            (),
            f"rngs must be a key or a dict of keys, got {type(rngs).__name__}; e.g. "
            'rngs={"params": jax.random.key(0), "dropout": jax.random.key(1)}.',
        )
    out = {}
    for name, key in rngs.items():
        if not is_key(key):
            raise errors.InvalidRngError(
                name,
                (),
                f'rngs["{name}"] is not a PRNG key (got {type(key).__name__}); '
                "make one with jax.random.key(seed).",
            )
        out[name] = key
    return out


def _make_root(
    variables: Any, rngs: Any, mutable: Filter, flags: Mapping[str, Any] | None
) -> Scope:
    _check_variables(variables)
    canonical_filter(mutable)  # validates
    frame_vars: dict[str, Any] = {}
    for col, d in variables.items():
        frame_vars[col] = _copy_tree(d) if in_filter(mutable, col) else d
    frame = _Frame(frame_vars, _check_rngs(rngs), mutable, dict(flags or {}))
    return Scope(frame)


def apply(
    fn: Callable[..., Any],
    mutable: Filter = False,
    flags: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """Functionalizes ``fn(scope, *args, **kwargs)`` into ``(variables, *args)``.

    Args:
      fn: a function whose first argument is a :class:`Scope`.
      mutable: the collections that may be written (a filter).
      flags: flags visible as ``scope.flags``.

    Returns:
      ``wrapper(variables, *args, rngs=None, **kwargs)`` returning ``y``, or
      ``(y, mutated_collections)`` when ``mutable`` is not False. The input
      variables are never mutated.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> def f(scope, x):
        ...     return x * scope.param("w", lambda rng: jnp.ones(()))
        >>> y, v = init(f)(jax.random.key(0), 2.0)
        >>> float(apply(f)(v, 3.0))
        3.0
    """

    @functools.wraps(fn)
    def wrapper(
        variables: VariableDict, *args: Any, rngs: Any = None, **kwargs: Any
    ) -> Any:
        root = _make_root(variables, rngs, mutable, flags)
        try:
            y = fn(root, *args, **kwargs)
        finally:
            root._frame.alive = False
        if mutable is not False:
            frame = root._frame
            return y, {c: d for c, d in frame.variables.items() if frame.is_mutable(c)}
        return y

    return wrapper


def init(
    fn: Callable[..., Any],
    mutable: Filter = True,
    flags: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """Functionalizes ``fn(scope, *args)`` for initialization.

    ``init`` is ``apply`` with empty variables, every collection mutable and a
    ``'params'`` stream: a bare key ``k`` means ``{'params': k}``.

    Returns:
      ``wrapper(rngs, *args, **kwargs)`` returning ``(y, variables)``.
    """

    @functools.wraps(fn)
    def wrapper(rngs: Any, *args: Any, **kwargs: Any) -> Any:
        rngs = _check_rngs(rngs)
        if "params" not in rngs:
            raise errors.InvalidRngError(
                "params",
                (),
                'init needs a "params" key: init(fn)(jax.random.key(0), ...).',
            )
        f = dict(flags or {})
        f.setdefault("initializing", True)
        return apply(fn, mutable=mutable, flags=f)({}, *args, rngs=rngs, **kwargs)

    return wrapper


def bind(
    variables: VariableDict,
    rngs: Any = None,
    mutable: Filter = False,
    flags: Mapping[str, Any] | None = None,
) -> Scope:
    """Returns a root :class:`Scope` over ``variables`` with an unlimited lifetime.

    Useful for exploring in a notebook; it cannot cross a JAX transform.
    """
    return _make_root(variables, rngs, mutable, flags)
