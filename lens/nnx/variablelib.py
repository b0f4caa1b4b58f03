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

import functools
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from lens.core.spmd import shard_value
from lens.nnx import reprlib
from lens.nnx.staticvalue import StaticValue as StaticValue
from lens.nnx.staticvalue import freeze_metadata as freeze_metadata
from lens.nnx.tracers import check_mutable, current_frame
from lens.nnx.vardefaults import VarDefaults as VarDefaults
from lens.nnx.vardefaults import VarDefaultsContext as VarDefaultsContext
from lens.nnx.vardefaults import use_eager_sharding as use_eager_sharding
from lens.nnx.vardefaults import using_eager_sharding as using_eager_sharding
from lens.nnx.vardefaults import var_defaults as var_defaults

F = TypeVar("F", bound=Callable[..., Any])
A = TypeVar("A")


_MISSING: Any = object()


def _remap_sharding_metadata(metadata: dict[str, Any]) -> None:
    for old in ("sharding", "sharding_names"):
        if old in metadata:
            warnings.warn(
                f"'{old}' is deprecated, use 'out_sharding' instead.",
                DeprecationWarning,
                stacklevel=4,
            )
            metadata["out_sharding"] = metadata.pop(old)


class VariableMetadata(Generic[A]):
    """An initializer's value with the metadata its variable should get
    (what :func:`with_metadata` and :func:`with_partitioning` initializers return)."""

    def __init__(self, raw_value: Any, metadata: Mapping[str, Any] | None = None):
        self.raw_value = raw_value
        self.metadata = dict(metadata or {})

    def __repr__(self) -> str:
        return f"VariableMetadata(raw_value={self.raw_value!r}, metadata={self.metadata!r})"


def with_metadata(initializer: F, **metadata: Any) -> F:
    """Wraps ``initializer`` so the variable built from its value gets ``metadata``.

    >>> from lens import nnx
    >>> init = nnx.with_metadata(nnx.initializers.ones, out_sharding=None, tag="w")
    >>> nnx.Param(init(None, (2,))).tag
    'w'
    """
    hooks = [k for k in metadata if k.startswith("on_") and k.endswith("_value")]
    hooks += [k for k in ("on_add_axis", "on_remove_axis") if k in metadata]
    if hooks:
        raise NotImplementedError(
            f"with_metadata: Variable hooks ({', '.join(sorted(hooks))}) are not "
            "supported by lens.nnx (flax.nnx deprecates them).\nSubclass the "
            "Variable type and override get_value/set_value instead."
        )

    @functools.wraps(initializer)
    def wrapper(*args: Any) -> Any:
        return VariableMetadata(initializer(*args), metadata)

    return wrapper  # type: ignore[return-value]


class Variable(Generic[A]):
    """A mutable box for one piece of state, with a type and metadata.

    ``.value`` reads and writes it (``v[...]`` too); arithmetic and ``jnp``
    functions see the value, so ``x @ self.kernel`` works. The type says which
    collection it belongs to (``Param``, ``BatchStat``, ...); filters select on it.
    """

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
        if isinstance(value, VariableMetadata):
            boxed = dict(value.metadata)
            if "eager_sharding" in boxed:
                given = boxed.pop("eager_sharding")
                if eager_sharding is not None and eager_sharding != given:
                    raise ValueError(
                        "Cannot specify eager_sharding both in VariableMetadata and "
                        "as an argument to Variable constructor."
                    )
                eager_sharding = given
            metadata = {**boxed, **metadata}
            value = value.raw_value
        for mode, on in (("hijax", hijax), ("ref", ref)):
            if on:
                raise NotImplementedError(
                    f"{type(self).__name__}({mode}=True): lens.nnx variables are "
                    "plain Python boxes; there is no hijax/ref mode.\nLeave "
                    f"{mode} unset: nnx transforms carry updates out already."
                )
        _remap_sharding_metadata(metadata)
        if eager_sharding is None:
            eager_sharding = using_eager_sharding()
        if not eager_sharding:
            metadata["eager_sharding"] = False
        elif metadata.get("out_sharding"):
            value = shard_value(
                value,
                metadata["out_sharding"],
                metadata.get("sharding_rules"),
                metadata.get("mesh"),
            )
        object.__setattr__(self, "_lens_frame", current_frame())
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "metadata", metadata)

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        check_mutable(self, "set the value", structural=False)
        object.__setattr__(self, "_value", value)

    def get_value(self, *, index: Any = _MISSING) -> Any:
        """The value (as ``.value``); ``index`` reads one item (as ``v[index]``)."""
        if index is _MISSING or index is Ellipsis and _is_array_like(self._value):
            return self._value
        return self._value[index]

    def set_value(self, value: Any, *, index: Any = _MISSING) -> None:
        """Sets the value (as ``.value = ...``); ``index`` sets one item."""
        if index is _MISSING or index is Ellipsis and _replaces(self._value, value):
            self.value = value
        elif isinstance(self._value, jax.Array):  # v[...] = 3 keeps an array
            self.value = self._value.at[index].set(value)
        elif _is_array_like(self._value):  # numpy: updated as a copy
            new = np.array(self._value)
            new[index] = value
            self.value = new
        else:  # a dict or list value: copied, so earlier readers keep theirs
            new = (
                dict(self._value)
                if isinstance(self._value, dict)
                else list(self._value)
            )
            new[index] = value
            self.value = type(self._value)(new) if isinstance(new, list) else new

    @property
    def raw_value(self) -> Any:
        return self._value

    def get_raw_value(self) -> Any:
        return self._value

    def set_raw_value(self, value: Any) -> None:
        self.value = value

    # flax.nnx's mode flags: lens has one mode (plain boxes), so these are fixed.
    @property
    def hijax(self) -> bool:
        return False

    @property
    def ref(self) -> bool:
        return False

    @property
    def eager_sharding(self) -> bool:
        return self.metadata.get("eager_sharding", True)

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
        meta = {**self.metadata, "hijax": False, "ref": False}
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
        check_mutable(self, "set metadata")
        merged = {} if replace else dict(self.metadata)
        if not self.eager_sharding:
            merged["eager_sharding"] = False
        merged.update(new)
        object.__setattr__(self, "metadata", merged)

    def has_metadata(self, name: str) -> bool:
        return name in self.metadata or name in ("hijax", "ref", "eager_sharding")

    def del_metadata(self, name: str) -> None:
        if name in ("hijax", "ref", "eager_sharding"):
            raise ValueError(f"Cannot delete `{name}` metadata")
        check_mutable(self, f"delete metadata {name!r}")
        del self.metadata[name]

    def add_axis(self, axis_index: int, axis_name: Any) -> None:
        """Called when a transform adds an axis (vmap/scan out_axes); override in a
        Variable subclass to track it. ``out_sharding`` is updated already."""

    def remove_axis(self, axis_index: int, axis_name: Any) -> None:
        """Called when a transform removes an axis (vmap/scan in_axes)."""

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
        meta = object.__getattribute__(self, "metadata")
        if name in meta:
            return meta[name]
        if name.startswith("__"):
            raise AttributeError(name)
        try:  # array methods and properties: v.sum(), v.T, v.astype(...)
            return getattr(object.__getattribute__(self, "_value"), name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__} has no attribute or metadata {name!r}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "value":
            Variable.value.__set__(self, value)
            return
        check_mutable(self, f"set {name!r}")
        self.metadata[name] = value

    def copy(self, value: Any = _MISSING, **updates: Any) -> Variable:
        """A new variable of the same type: ``value`` (default: this one's) and this
        one's metadata updated with ``updates``."""
        if value is _MISSING:
            value = updates.pop("value", self._value)
        meta = dict(self.metadata)
        _remap_sharding_metadata(updates)
        for flag in ("hijax", "ref"):
            if updates.pop(flag, False):
                raise NotImplementedError(f"lens.nnx variables have no {flag} mode.")
        if "eager_sharding" in updates:
            if updates.pop("eager_sharding"):
                meta.pop("eager_sharding", None)
            else:
                meta["eager_sharding"] = False
        meta.update(updates)
        return new_variable(type(self), value, meta)

    replace = copy
    to_state = copy

    @classmethod
    def from_metadata(cls, value: Any, attributes: Mapping[str, Any]) -> Variable:
        meta = dict(attributes)
        meta.pop("hijax", None)
        meta.pop("ref", None)
        if meta.get("eager_sharding", True):
            meta.pop("eager_sharding", None)
        return new_variable(cls, value, meta)

    def copy_from(self, other: Variable) -> None:
        if type(self) is not type(other):
            raise ValueError(
                "Cannot copy from incompatible container, expected "
                f"{type(self).__name__}, got {type(other).__name__}"
            )
        self.value = other._value
        check_mutable(self, "set metadata")
        object.__setattr__(self, "metadata", dict(other.metadata))

    update_from_state = copy_from

    def __getitem__(self, index: Any) -> Any:
        return self.get_value(index=index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.set_value(value, index=index)

    def __delitem__(self, index: Any) -> None:
        new = dict(self._value) if isinstance(self._value, dict) else list(self._value)
        del new[index]
        self.value = new

    def __contains__(self, item: Any) -> bool:
        return item in self._value

    def __iter__(self) -> Iterator[Any]:
        return iter(self._value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._value(*args, **kwargs)

    def __jax_array__(self) -> Any:
        return self._value

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return np.asarray(self._value, dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self._value)

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return np.ndim(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __repr__(self) -> str:
        attrs = [("value", repr(self._value))]
        attrs += [(k, repr(m)) for k, m in self.metadata.items()]
        return reprlib.node_repr(
            type(self).__name__, attrs, comment=reprlib.size_comment(self._value)
        )

    def __round__(self, ndigits: int = 0) -> Any:
        return self._value.__round__(ndigits)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        # As flax.nnx: compares the values (elementwise for arrays), so
        # ``param == 1`` and ``(p1 == p2).all()`` read like the arrays they hold.
        other = other._value if isinstance(other, Variable) else other
        return self._value.__eq__(other)

    __hash__ = object.__hash__


def _is_array_like(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _replaces(old: Any, new: Any) -> bool:
    """Whether ``v[...] = new`` swaps the value whole (as flax.nnx: an array of
    the same shape and dtype), rather than writing into it."""
    if not _is_array_like(old):
        return False
    if not isinstance(old, jax.Array):
        return _is_array_like(new) and np.shape(new) == np.shape(old)
    if not (
        isinstance(new, jax.Array) and new.shape == old.shape and new.dtype == old.dtype
    ):
        return False
    try:
        return getattr(new, "sharding", None) == getattr(old, "sharding", None)
    except Exception:  # noqa: BLE001 - a tracer without a readable sharding
        return True


def _binary(name: str) -> Any:
    def op(self: Variable, other: Any) -> Any:
        other = other._value if isinstance(other, Variable) else other
        return getattr(self._value, name)(other)

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
    setattr(Variable, _name, (lambda n: lambda self: getattr(self._value, n)())(_name))


def new_variable(
    cls: type[Variable], value: Any, metadata: Mapping[str, Any]
) -> Variable:
    v = cls.__new__(cls)
    object.__setattr__(v, "_lens_frame", current_frame())
    object.__setattr__(v, "_value", value)
    object.__setattr__(v, "metadata", dict(metadata))
    return v


# Variables are pytrees of their value (type and metadata static), so
# ``jax.tree.map`` over a State (or a gradient) sees the arrays, optax can update
# them, and jitted functions may take and return States. JAX registers exact types:
# every subclass (Param, BatchStat, a user's LoRAParam) is registered as it is made.
def _flatten_variable(v: Variable) -> Any:
    return ((jax.tree_util.GetAttrKey("value"), v._value),), (
        type(v),
        freeze_metadata(v.metadata),
    )


def _unflatten_variable(aux: Any, children: Any) -> Variable:
    return new_variable(aux[0], children[0], {k: s.value for k, s in aux[1]})


def _register_variable_type(cls: type) -> None:
    jax.tree_util.register_pytree_with_keys(cls, _flatten_variable, _unflatten_variable)


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


_TYPE_BY_NAME: dict[str, type[Variable]] = {}


def register_variable_name(
    name: str, typ: Any = _MISSING, *, overwrite: bool = False
) -> Any:
    """Links a Linen collection name to a Variable type (a decorator without ``typ``)."""
    if typ is _MISSING:
        return functools.partial(register_variable_name, name, overwrite=overwrite)
    if not overwrite and name in _TYPE_BY_NAME:
        raise ValueError(
            f"Name {name} already mapped to type {_TYPE_BY_NAME[name]}. To overwrite, "
            "call register_variable_name() with `overwrite=True`."
        )
    _TYPE_BY_NAME[name] = typ
    return typ


def variable_type_from_name(
    name: str, /, *, base: type[Variable] = Variable, allow_register: bool = False
) -> type[Variable]:
    """The Variable type of a Linen collection name (made when ``allow_register``)."""
    if name not in _TYPE_BY_NAME:
        if not allow_register:
            raise ValueError(
                f"Name {name} is not registered in the registry. To register a new "
                "name, use register_variable_name() or set allow_register=True."
            )
        _TYPE_BY_NAME[name] = type(name, (base,), {})
    return _TYPE_BY_NAME[name]


def variable_name_from_type(
    typ: type[Variable], /, *, allow_register: bool = False
) -> str:
    """The Linen collection name of a Variable type (the inverse of the above)."""
    for name, t in _TYPE_BY_NAME.items():
        if t is typ:
            return name
    if not allow_register:
        raise ValueError(
            f"Type {typ} is not registered in the registry. To register a new type, "
            "use register_variable_name() or set allow_register=True."
        )
    name = typ.__name__
    if name in _TYPE_BY_NAME:
        raise ValueError(
            f"Name {name} is already registered in the registry as "
            f"{_TYPE_BY_NAME[name]}. It cannot be linked with this type {typ}."
        )
    return register_variable_name(name, typ).__name__ and name


for _n, _t in (
    ("params", Param),
    ("batch_stats", BatchStat),
    ("cache", Cache),
    ("intermediates", Intermediate),
    ("perturbations", Perturbation),
):
    register_variable_name(_n, _t)


VariableState = Variable  # flax.nnx's former name for a detached variable
