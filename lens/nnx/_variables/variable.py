"""Variables: typed, mutable boxes of state with metadata.

A :class:`Variable` holds one value (an array, or any pytree) and a dict of
metadata. Its type names its collection (``Param``, ``BatchStat``, ``Cache``,
``Intermediate``, ...), which filters select on. Metadata travels with the value
through ``split``/``merge`` and the transforms; ``out_sharding`` is the one key
lens acts on: with eager sharding on (the default, as in flax.nnx), a variable
created with ``out_sharding`` under ``jax.set_mesh`` is sharded at once, and
:func:`lens.nnx.get_partition_spec` reads it back.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from lens import errors
from lens.core.spmd import shard_value
from lens.nnx import reprlib
from lens.nnx._variables import hooks as variable_hooks
from lens.nnx._variables import refs as variable_refs
from lens.nnx._variables.defaults import (
    _FLAGS,
    _remap_sharding_metadata,
    _store_flags,
    using_eager_sharding,
    var_defaults,
)
from lens.nnx._variables.hijax import (
    VariableMeta,
    to_hijax,
)
from lens.nnx._variables.hooks import (
    AxisIndex,
    AxisName,
    VariableMetadata,
)
from lens.nnx._variables.static import freeze_metadata
from lens.nnx._variables.trace import check_update
from lens.nnx.tracers import TraceState

F = TypeVar("F", bound=Callable[..., Any])
A = TypeVar("A")


_MISSING: Any = object()


class Variable(Generic[A], metaclass=VariableMeta):
    """A mutable box for one piece of state, with a type and metadata.

    ``.value`` reads and writes it (``v[...]`` too); arithmetic and ``jnp``
    functions see the value, so ``x @ self.kernel`` works. The type says which
    collection it belongs to (``Param``, ``BatchStat``, ...); filters select on it.
    ``ref=True`` keeps the value in a ``jax.Ref`` (JAX transforms update it in
    place); ``hijax=True`` returns a :class:`HijaxVariable`, which JAX
    transforms take as one mutable object (see ``var_defaults``).

    Its state is flax.nnx's three slots, for frameworks that subclass it:
    ``_raw_value`` (the stored value), ``_var_metadata`` (the metadata dict, also
    ``.metadata``) and ``_trace_state`` (the JAX trace and nnx transform it was made
    in). Subclasses are slotted too unless they declare otherwise (or inherit a
    ``__dict__`` from another base).
    """

    __lens_view__ = "nnx variable"  # drawn by lens.display (lens.show)

    __slots__ = ("_raw_value", "_trace_state", "_var_metadata")

    # flax.nnx's: the mode flags every Variable has (get_metadata's
    # exclude_required=True leaves them out)
    required_metadata = frozenset(("hijax", "ref", "eager_sharding"))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # JAX registers exact types: every subclass (Param, a user's LoRAParam,
        # ``class Count(nnx.Variable[nnx.A])``) becomes a pytree as it is made.
        super().__init_subclass__(**kwargs)
        _register_variable_type(cls)

    def __init__(
        self,
        value: Any,
        *,
        hijax: bool | None = None,
        ref: bool | None = None,
        eager_sharding: bool | None = None,
        **metadata: Any,
    ):
        flags: dict[str, Any] = {
            "hijax": hijax,
            "ref": ref,
            "eager_sharding": eager_sharding,
        }
        if isinstance(value, VariableMetadata):
            value = variable_hooks.unpack(value, metadata, flags)
        defaults = var_defaults()
        for flag in ("hijax", "ref"):
            if flags[flag] is None:
                flags[flag] = defaults[flag]
        if flags["eager_sharding"] is None:
            flags["eager_sharding"] = using_eager_sharding()
        if variable_refs.contains_ref(value):
            raise ValueError(
                "Cannot pass a Ref directly into Variable constructor.\nPass the "
                f"array (ref[...]) and ref=True: {type(self).__name__}(x, ref=True)."
            )
        _store_flags(metadata, flags)
        # flax.nnx's order of writes: frameworks that subclass Variable (and define
        # properties of their own over it) see the same sequence as under flax.
        object.__setattr__(self, "_trace_state", TraceState())
        object.__setattr__(self, "_var_metadata", metadata)
        object.__setattr__(self, "_raw_value", value)
        variable_hooks.collect(type(self), metadata)
        _remap_sharding_metadata(metadata)
        value = variable_hooks.run_value_hooks(self, metadata, "on_create_value", value)
        object.__setattr__(self, "_raw_value", value)
        value = self.create_value(value)
        if flags["eager_sharding"] and metadata.get("out_sharding"):
            value = shard_value(
                value,
                metadata["out_sharding"],
                metadata.get("sharding_rules"),
                metadata.get("mesh"),
            )
        if flags["ref"]:
            value = variable_refs.new_ref(value, type(self).__name__)
        object.__setattr__(self, "_raw_value", value)

    @classmethod
    def _new(cls, value: Any, metadata: dict[str, Any]) -> Any:
        """A ``cls`` holding ``value`` as is, with ``metadata`` as its metadata dict,
        made without running ``__init__`` (as flax.nnx's ``Variable._new``)."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "_trace_state", TraceState())
        object.__setattr__(obj, "_var_metadata", metadata)
        object.__setattr__(obj, "_raw_value", value)
        return obj

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata dict itself (lens's name; flax.nnx keeps it private as
        ``_var_metadata``; :meth:`get_metadata` adds the mode flags)."""
        return self._var_metadata

    @property
    def _lens_frame(self) -> Any:
        """The nnx transform frame this Variable was made in (its trace state's)."""
        return self._trace_state._lens_frame

    def create_value(self, value: A) -> A:
        """The value a new Variable stores (override to transform it)."""
        return value

    @property
    def value(self) -> Any:
        return self.get_value()

    @value.setter
    def value(self, value: Any) -> None:
        self.set_value(value)

    @property
    def _can_update(self) -> bool:
        """Whether this Variable may be changed here (see ``_check_can_update``)."""
        try:
            check_update(self, "update it", structural=False)
        except errors.TraceContextError:
            return False
        return True

    def _check_can_update(self) -> None:
        """Raises TraceContextError if this Variable was made in another JAX trace
        or nnx transform than the one running now."""
        check_update(self, "update it", structural=False)

    def _store(self, value: Any) -> None:
        check_update(self, "set the value", structural=False)
        object.__setattr__(self, "_raw_value", value)

    def get_value(self, *, index: Any = _MISSING) -> Any:
        """The value (as ``.value``); ``index`` reads one item (as ``v[index]``)."""
        raw = self._raw_value
        if variable_refs.is_array_ref(raw):
            value = raw[... if index is _MISSING else index]
        elif (
            index is _MISSING or index is Ellipsis and variable_refs.is_array_like(raw)
        ):
            value = raw
        else:
            value = raw[index]
        if "on_get_value" in self.metadata:
            value = variable_hooks.run_value_hooks(
                self, self.metadata, "on_get_value", value
            )
        return value

    def set_value(self, value: Any, *, index: Any = _MISSING) -> None:
        """Sets the value (as ``.value = ...``); ``index`` sets one item."""
        if "on_set_value" in self.metadata:
            value = variable_hooks.run_value_hooks(
                self, self.metadata, "on_set_value", value
            )
        old = self._raw_value
        if variable_refs.is_array_ref(old):  # written in place, in any transform
            old[... if index is _MISSING else index] = value
        elif (
            index is _MISSING
            or index is Ellipsis
            and variable_refs.replaces(old, value)
        ):
            self._store(value)
        elif isinstance(old, jax.Array):  # v[...] = 3 keeps an array
            self._store(old.at[index].set(value))
        elif variable_refs.is_array_like(old):  # numpy: updated as a copy
            new = np.array(old)
            new[index] = value
            self._store(new)
        else:  # a dict or list value: copied, so earlier readers keep theirs
            new = dict(old) if isinstance(old, dict) else list(old)
            new[index] = value
            self._store(type(old)(new) if isinstance(new, list) else new)

    @property
    def raw_value(self) -> Any:
        return self._raw_value

    @raw_value.setter
    def raw_value(self, value: Any) -> None:
        self.set_raw_value(value)

    def get_raw_value(self) -> Any:
        """The stored value itself (a ``jax.Ref`` for a ref-backed Variable)."""
        return self._raw_value

    def set_raw_value(self, value: Any, *, _unsafe_bypass_check: bool = False) -> None:
        if _unsafe_bypass_check:
            object.__setattr__(self, "_raw_value", value)
        else:
            self._store(value)

    @property
    def hijax(self) -> bool:
        return self.metadata.get("hijax", False)

    @property
    def ref(self) -> bool:
        return self.metadata.get("ref", False)

    @property
    def eager_sharding(self) -> bool:
        return self.metadata.get("eager_sharding", True)

    @property
    def var_type(self) -> type:
        return type(self)

    def get_metadata(
        self,
        name: str | None = None,
        default: Any = _MISSING,
        *,
        exclude_required: bool | None = None,
    ) -> Any:
        """The metadata dict (with flax.nnx's ``hijax``/``ref``/``eager_sharding``
        flags), or one entry of it (``default`` if given and missing)."""
        if name is not None and exclude_required is not None:
            raise TypeError(
                "Cannot specify both 'name' and 'exclude_required' arguments."
            )
        meta = {**self.metadata, "hijax": self.hijax, "ref": self.ref}
        meta["eager_sharding"] = self.eager_sharding
        if name is None:
            if default is not _MISSING:
                raise TypeError(
                    "Cannot provide a default value when 'name' is not provided. "
                    f"Got default={default}"
                )
            if exclude_required:
                for key in ("hijax", "ref", "eager_sharding"):
                    meta.pop(key)
            return meta
        if name not in meta:
            if default is not _MISSING:
                return default
            raise KeyError(
                f"{type(self).__name__} has no metadata {name!r}; it has "
                f"{sorted(self.metadata)}."
            )
        return meta[name]

    def set_metadata(self, *args: Any, **kwargs: Any) -> None:
        """Replaces the metadata (``set_metadata(dict)``), sets one entry
        (``set_metadata(name, value)``) or updates entries (keywords)."""
        if args and kwargs:
            raise TypeError(
                "Cannot mix positional and keyword arguments in set_metadata"
            )
        if len(args) == 1:
            new = dict(args[0])
            replace = True
        elif len(args) == 2:
            new, replace = {args[0]: args[1]}, False
        elif kwargs and not args:
            new, replace = dict(kwargs), False
        else:
            raise TypeError(
                "set_metadata takes either 1 or 2 arguments, or at least 1 keyword "
                f"argument, got args={args}, kwargs={kwargs}"
            )
        _remap_sharding_metadata(new)
        for flag in ("hijax", "ref", "eager_sharding"):
            if flag in new and new.pop(flag) != getattr(self, flag):
                raise ValueError(
                    f"Cannot change `{flag}` metadata of a {type(self).__name__}."
                )
        check_update(self, "set metadata")
        merged = {} if replace else dict(self.metadata)
        merged.update(new)
        _store_flags(merged, {f: getattr(self, f) for f in _FLAGS})
        object.__setattr__(self, "_var_metadata", merged)

    def has_metadata(self, name: str) -> bool:
        return name in self.metadata or name in ("hijax", "ref", "eager_sharding")

    def del_metadata(self, name: str) -> None:
        if name in ("hijax", "ref", "eager_sharding"):
            raise ValueError(f"Cannot delete `{name}` metadata")
        check_update(self, f"delete metadata {name!r}")
        del self.metadata[name]

    def add_axis(self, axis_index: AxisIndex, axis_name: AxisName | None) -> None:
        """Called when a transform adds an axis (vmap/scan out_axes): runs the
        ``on_add_axis`` hooks; override in a Variable subclass to track it.
        ``out_sharding`` is updated already."""
        variable_hooks.run_axis_hooks(
            self, self.metadata, "on_add_axis", axis_index, axis_name
        )

    def remove_axis(self, axis_index: AxisIndex, axis_name: AxisName | None) -> None:
        """Called when a transform removes an axis (vmap/scan in_axes): runs the
        ``on_remove_axis`` hooks."""
        variable_hooks.run_axis_hooks(
            self, self.metadata, "on_remove_axis", axis_index, axis_name
        )

    @property
    def type(self) -> type:
        return type(self)

    @property
    def sharding_names(self) -> Any:
        """Deprecated in flax.nnx: the ``out_sharding`` metadata (None if unset)."""
        warnings.warn(
            "'sharding_names' is deprecated, use 'out_sharding' instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.metadata.get("out_sharding")

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the object lacks: metadata first, then the value's
        # attributes. A slot not yet written (a subclass's __init__ reading before
        # Variable.__init__ ran) stays an AttributeError, so hasattr() answers False.
        meta = object.__getattribute__(self, "_var_metadata")
        if name in meta:
            return meta[name]
        if name.startswith("__") or name in _SLOTS:
            raise AttributeError(name)
        try:  # array methods and properties: v.sum(), v.T, v.astype(...)
            raw = object.__getattribute__(self, "_raw_value")
            return getattr(variable_refs.read(raw), name)
        except AttributeError:
            pass
        getter = _class_descriptor(type(self), name)
        if getter is not None:
            # A property (``value``, a subclass's own) whose getter raised
            # AttributeError: Python then asks __getattr__ and drops that error.
            # Run the getter again so the user sees which attribute it missed.
            try:
                return getter.__get__(self, type(self))
            except AttributeError as e:
                raise AttributeError(
                    f"{type(self).__name__}.{name}'s getter raised AttributeError: {e}"
                ) from e
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r} (nor "
            "metadata of that name: set_metadata adds it)"
        ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        # As flax.nnx: an attribute, not metadata (set_metadata is for that). A
        # property (``value``, ``raw_value``, a subclass's own) runs its setter,
        # which checks the trace itself; a subclass's plain attributes live in its
        # __dict__, and a slotted Variable has none to set.
        if isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)
            return
        if _built(self):
            check_update(self, f"set {name!r}")
        try:
            object.__setattr__(self, name, value)
        except AttributeError as e:
            raise AttributeError(
                f"Cannot set attribute {name}. To set Variable metadata use either:"
                f"\n\n  variable.set_metadata({name}=value)\n\nor\n\n"
                f"  variable.set_metadata('{name}', value)"
            ) from e

    def __delattr__(self, name: str) -> None:
        if _built(self):
            check_update(self, f"delete {name!r}")
        try:
            object.__delattr__(self, name)
        except AttributeError as e:
            raise AttributeError(
                f"Cannot delete attribute {name}. To delete Variable metadata use:"
                f"\n\n  variable.del_metadata('{name}')"
            ) from e

    # pickling, as flax.nnx: the three slots (a subclass's own attributes are its
    # to add, as Keras's NnxVariable does around these)
    def __getstate__(self) -> dict[str, Any]:
        return {
            "_raw_value": self._raw_value,
            "_trace_state": self._trace_state,
            "_var_metadata": self._var_metadata,
        }

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        meta = state["_var_metadata"]
        if any(f in meta for f in _FLAGS):
            # flax.nnx keeps every mode flag in ``_var_metadata``; lens only
            # those that differ from the defaults (a flax pickle, loaded here)
            meta = dict(meta)
            _store_flags(meta, {f: meta[f] for f in _FLAGS if f in meta})
        object.__setattr__(self, "_trace_state", state["_trace_state"])
        object.__setattr__(self, "_var_metadata", meta)
        object.__setattr__(self, "_raw_value", state["_raw_value"])

    def copy(self, value: Any = _MISSING, **updates: Any) -> Any:
        """A new Variable of the same type: ``value`` (default: a copy of this
        one's) and this one's metadata updated with ``updates``; ``hijax=``,
        ``ref=`` and ``eager_sharding=`` switch its modes (``ref=True`` puts the
        value in a new ``jax.Ref``, ``hijax=True`` returns a HijaxVariable)."""
        if value is _MISSING:
            value = updates.pop("value", self._raw_value)
        _remap_sharding_metadata(updates)
        flags = {f: updates.pop(f, getattr(self, f)) for f in _FLAGS}
        meta = {**self.metadata, **updates}
        value = variable_refs.read(value)
        if flags["ref"]:
            value = variable_refs.new_ref(value, type(self).__name__)
        else:
            value = jax.tree.map(lambda x: x, value)  # containers are not shared
        return type(self).from_metadata(value, {**meta, **flags})

    replace = copy
    to_state = copy

    @classmethod
    def from_metadata(cls, value: Any, attributes: Mapping[str, Any]) -> Any:
        """A Variable of this type holding ``value`` (as is) with ``attributes``
        as its metadata; ``hijax: True`` among them returns a HijaxVariable."""
        meta = dict(attributes)
        _store_flags(meta, {f: meta[f] for f in _FLAGS if f in meta})
        return new_variable(cls, value, meta)

    def copy_from(self, other: Variable) -> None:
        if type(self) is not type(other):
            raise ValueError(
                "Cannot copy from incompatible container, expected "
                f"{type(self).__name__}, got {type(other).__name__}"
            )
        if self is other:
            return
        self._store(other._raw_value)
        check_update(self, "set metadata")
        object.__setattr__(self, "_var_metadata", dict(other.metadata))

    def update_from_state(self, variable_state: Variable) -> None:
        """Takes ``variable_state``'s value and metadata (flax.nnx's name for
        :meth:`copy_from`)."""
        self.copy_from(variable_state)

    def __getitem__(self, index: Any) -> Any:
        return self.get_value(index=index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.set_value(value, index=index)

    def __delitem__(self, index: Any) -> None:
        old = self._raw_value
        new = dict(old) if isinstance(old, dict) else list(old)
        del new[index]
        self._store(new)

    def __contains__(self, item: Any) -> bool:
        return item in self.get_value()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get_value())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._raw_value(*args, **kwargs)

    def __jax_array__(self) -> Any:
        return self.get_value()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return np.asarray(_read(self), dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        raw = self._raw_value
        return raw.shape if variable_refs.is_array_ref(raw) else np.shape(raw)

    @property
    def dtype(self) -> Any:
        return self._raw_value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return len(self.get_value())

    def __repr__(self) -> str:
        attrs = [("value", _value_repr(_shown_value(self)))]
        attrs += [(k, repr(m)) for k, m in self.metadata.items()]
        return reprlib.node_repr(
            type(self).__name__, attrs, comment=reprlib.size_comment(self._raw_value)
        )

    def __round__(self, ndigits: int = 0) -> Any:
        return self.get_value().__round__(ndigits)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        # As flax.nnx: compares the values (elementwise for arrays), so
        # ``param == 1`` and ``(p1 == p2).all()`` read like the arrays they hold.
        other = other.get_value() if isinstance(other, Variable) else other
        return self.get_value().__eq__(other)

    __hash__ = object.__hash__


_SLOTS = frozenset(Variable.__slots__)


def _value_repr(value: Any) -> str:
    """``repr(value)``; for an array whose buffers were freed (donated to a jitted
    call, or deleted), which JAX's repr refuses, its shape and dtype."""
    if isinstance(value, jax.Array) and value.is_deleted():
        return f"Array(deleted, shape={value.shape}, dtype={value.dtype})"
    return repr(value)


def _class_descriptor(cls: type, name: str) -> Any:
    """The descriptor ``name`` names on ``cls`` (a property), or None."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            return attr if hasattr(type(attr), "__get__") else None
    return None


def _built(v: Variable) -> bool:
    """Whether ``Variable.__init__`` has run far enough to check updates against
    (a subclass may set its own attributes before calling it)."""
    try:
        object.__getattribute__(v, "_trace_state")
    except AttributeError:
        return False
    return True


def _read(v: Variable) -> Any:
    """The value a Variable holds, read out of its ref if it has one, without
    ``get_value`` (``np.asarray(v)``: flax.nnx's reaches the stored array's own
    ``__array__``). The operators, ``__jax_array__``, ``len``, ``iter``, ``in``,
    ``==`` and ``repr`` go through ``get_value``, as flax.nnx's do, so a subclass
    that overrides it (flax's way to transform a value on read) is seen there."""
    return variable_refs.read(v._raw_value)


def _shown_value(v: Variable) -> Any:
    """What ``repr`` shows: ``get_value()``, or the stored value if a
    subclass's override fails (a repr never raises for it)."""
    try:
        return v.get_value()
    except Exception:  # noqa: BLE001 - a user's override; show what is stored
        return _read(v)


def _binary(name: str) -> Any:
    def op(self: Variable, other: Any) -> Any:
        other = other.get_value() if isinstance(other, Variable) else other
        return getattr(self.get_value(), name)(other)

    op.__name__ = name
    return op


for _name in (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ "
    "__floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ "
    "__rmatmul__ __lshift__ __rshift__ __rlshift__ __rrshift__ __ne__ "
    "__lt__ __le__ __gt__ __ge__ __and__ __or__ __xor__ __rand__ __rxor__ __ror__"
).split():
    setattr(Variable, _name, _binary(_name))


for _name in (
    "__neg__ __pos__ __abs__ __invert__ __complex__ __int__ __float__ __index__ "
    "__trunc__ __floor__ __ceil__"
).split():
    setattr(
        Variable, _name, (lambda n: lambda self: getattr(self.get_value(), n)())(_name)
    )


def _in_place(name: str, op: str) -> Any:
    def refuse(self: Variable, other: Any) -> Any:
        raise errors.VariableInPlaceError(self, op)

    refuse.__name__ = name
    return refuse


# As flax.nnx: ``v += x`` would rebind ``v`` to a plain array (the Variable lost
# from the model's state without a word), so it is refused; ``v[...] += x`` is how.
for _name, _op in (
    ("__iadd__", "+="), ("__isub__", "-="), ("__imul__", "*="), ("__imatmul__", "@="),
    ("__itruediv__", "/="), ("__ifloordiv__", "//="), ("__imod__", "%="),
    ("__ipow__", "**="), ("__ilshift__", "<<="), ("__irshift__", ">>="),
    ("__iand__", "&="), ("__ixor__", "^="), ("__ior__", "|="),
):  # fmt: skip
    setattr(Variable, _name, _in_place(_name, _op))


def new_variable(cls: type[Variable], value: Any, metadata: Mapping[str, Any]) -> Any:
    """A ``cls`` holding ``value`` (as is) with ``metadata``, not running
    ``__init__``; a HijaxVariable if ``metadata`` says ``hijax: True``."""
    v = _plain_variable(cls, value, metadata)
    return to_hijax(v) if v.metadata.get("hijax") else v


def _plain_variable(
    cls: type[Variable], value: Any, metadata: Mapping[str, Any]
) -> Variable:
    return cls._new(value, dict(metadata))


# Variables are pytrees of their value (type and metadata static), so
# ``jax.tree.map`` over a State (or a gradient) sees the arrays, optax can update
# them, and jitted functions may take and return States. JAX registers exact types:
# every subclass (Param, BatchStat, a user's LoRAParam) is registered as it is made.
def _flatten_variable(v: Variable) -> Any:
    return ((jax.tree_util.GetAttrKey("value"), v._raw_value),), (
        type(v),
        freeze_metadata(v.metadata),
    )


def _flatten_variable_fast(v: Variable) -> Any:
    """:func:`_flatten_variable` without the key: what ``jit`` calls per leaf."""
    meta = v._var_metadata
    return (v._raw_value,), (type(v), freeze_metadata(meta) if meta else ())


def made_variable(
    cls: type[Variable],
    value: Any,
    metadata: dict[str, Any],
    trace_state: TraceState | None = None,
) -> Any:
    """``cls._new(value, metadata)`` on the hot paths (a pytree unflatten, a
    merge): inlined for Variable's own ``_new``, with ``trace_state`` when the
    caller makes many Variables in one trace; a subclass's ``_new`` is called."""
    if cls._new.__func__ is not _VARIABLE_NEW:  # type: ignore[attr-defined]
        return cls._new(value, metadata)
    obj = object.__new__(cls)
    _set(obj, "_trace_state", TraceState() if trace_state is None else trace_state)
    _set(obj, "_var_metadata", metadata)
    _set(obj, "_raw_value", value)
    return obj


def _unflatten_variable(aux: Any, children: Any) -> Variable:
    cls, frozen = aux
    meta = {k: s.value for k, s in frozen} if frozen else {}
    return made_variable(cls, children[0], meta)


_VARIABLE_NEW = Variable._new.__func__  # type: ignore[attr-defined]
_set = object.__setattr__


def _register_variable_type(cls: type) -> None:
    jax.tree_util.register_pytree_with_keys(
        cls, _flatten_variable, _unflatten_variable, _flatten_variable_fast
    )


_register_variable_type(Variable)


class Param(Variable[A]):
    """A trainable parameter (what ``nnx.grad`` differentiates by default)."""


class BatchStat(Variable[A]):
    """A running statistic (e.g. BatchNorm's mean and var)."""


class Cache(Variable[A]):
    """A cache (e.g. autoregressive decoding)."""


class Intermediate(Variable[A]):
    """A value sown for inspection."""


class RngState(Variable):
    """RNG state: a stream's key or its counter."""


class RngKey(RngState):
    """The key of an RNG stream."""


class RngCount(RngState):
    """The call counter of an RNG stream."""


class OptState(Variable):
    """Optimizer state."""


class Perturbation(Intermediate[A]):
    """A value added by :meth:`Module.perturb`, to take gradients of intermediates."""


# The Linen collection names of Variable types (flax.nnx's registry).
from lens.nnx._variables import names as variable_names  # noqa: E402
from lens.nnx._variables.names import (  # noqa: E402  # noqa: E402
    register_variable_name,  # noqa: E402
)

# flax's default: new collection types subclass Variable
(variable_names.variable_type_from_name.__kwdefaults__ or {})["base"] = Variable

for _n, _t in (
    ("params", Param),
    ("batch_stats", BatchStat),
    ("cache", Cache),
    ("intermediates", Intermediate),
    ("perturbations", Perturbation),
):
    register_variable_name(_n, _t)


VariableState = Variable  # flax.nnx's former name for a detached variable


from lens._facades import show_at_flax_paths  # noqa: E402

show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
