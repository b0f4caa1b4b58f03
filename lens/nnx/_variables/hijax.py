"""Hijax Variables: a Variable that JAX transforms take as one mutable object.

``nnx.Param(x, hijax=True)`` (or under ``nnx.var_defaults(hijax=True)``, or
``nnx.with_vars(node, hijax=True)``) returns a :class:`HijaxVariable`. It is not
a pytree: ``jax.jit``, ``jax.lax.scan`` and ``jax.grad`` see it as one value of
the JAX type :class:`AbstractVariable` (built on ``jax.experimental.hijax``),
whose changing part (its *quasi-dynamic data*, :class:`VariableQDD`) is the
inner Variable's pytree structure and the types of its leaves. Reads and writes
inside a transform bind three primitives (``new_variable_p``, ``get_variable_p``,
``set_variable_p``), so what a traced function writes into the Variable (even a
new key in a dict value) is written back into the object passed in when the
transform returns, as JAX does for its own ``Box``.

The state is a plain inner Variable (type, metadata, value), kept flattened as
leaves and a treedef. Every method of a HijaxVariable reads the inner Variable,
runs the method on it and writes it back if it changed. ``isinstance(v,
nnx.Param)`` holds for a hijax ``Param`` and for its tracer inside a transform
(:class:`VariableMeta`).
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from typing import Any, Generic, TypeVar

import jax
import jax.experimental
from jax.core import Tracer

# jax.extend.core's class, from its home: importing the jax.extend package loads
# Pallas (~12 ms of a first model).
try:
    from jax._src.effects import Effect
except ImportError:  # pragma: no cover - a JAX that moved it
    from jax.extend.core import Effect

from lens._facades import show_at_flax_paths
from lens.nnx._variables.refs import is_array_ref

# Any: the module, or the stand-in below where it lacks what lens builds on
hjx: Any
try:
    from jax.experimental import hijax as hjx
except ImportError:  # pragma: no cover - a JAX without it
    hjx = types.SimpleNamespace()

# jax.experimental.hijax is experimental: its names move between JAX releases (JAX
# 0.11.2 has no HiPrimitive). Where one that lens builds on is missing, lens.nnx
# still imports and runs; only making a hijax Variable raises, saying why.
_NEEDED = (
    "HiPrimitive MutableHiType AvalQDD Zero register_hitype aval_method "
    "aval_property control_flow_allowed_effects"
).split()
MISSING = tuple(
    [f"hijax.{n}" for n in _NEEDED if not hasattr(hjx, n)]
    + ([] if hasattr(jax.experimental, "cur_qdd") else ["cur_qdd"])
)


def hijax_unavailable() -> NotImplementedError:
    """The error for making a hijax Variable on a JAX without what it needs."""
    return NotImplementedError(
        f"hijax Variables need jax.experimental's {', '.join(MISSING)}, which "
        f"JAX {jax.__version__} does not have.\nUse hijax=False (the default; "
        "nnx.var_defaults(hijax=False), flax_hijax_variable=False), or a JAX that "
        "has them (lens's hijax Variables are tested on JAX 0.10)."
    )


class _WithoutHijax:
    """Stands in for ``jax.experimental.hijax`` when :data:`MISSING` is not
    empty: this module's classes still define, and every bind raises."""

    class HiPrimitive:
        def __init__(self, name: str):
            self.name = name

        def bind(self, *args: Any, **params: Any) -> Any:
            raise hijax_unavailable()

    class MutableHiType:
        __slots__ = ()

    AvalQDD = Zero = None
    control_flow_allowed_effects = types.SimpleNamespace(add_type=lambda t: None)
    aval_property = property

    @staticmethod
    def register_hitype(*args: Any) -> None:
        pass

    @staticmethod
    def aval_method(fn: Any) -> Any:
        return fn


if MISSING:
    hjx = _WithoutHijax

A = TypeVar("A")

PyTreeDef = Any
Leaf = Any


class VariableMeta(type):
    """Variable's metaclass: ``Param(x, hijax=True)`` returns a
    :class:`HijaxVariable`, and ``isinstance`` sees one (or its tracer inside a
    JAX transform) as an instance of its Variable type. As flax.nnx's, it makes
    every Variable subclass slotted unless the class says otherwise."""

    def __new__(
        mcs, cls_name: str, bases: tuple[type, ...], attrs: dict[str, Any]
    ) -> Any:
        attrs.setdefault("__slots__", ())
        return super().__new__(mcs, cls_name, bases, attrs)

    def __instancecheck__(cls, instance: Any) -> bool:
        # on every graph walk's node: the common cases first, no calls
        t = type(instance)
        if t is HijaxVariable:
            return issubclass(instance._var_type, cls)
        if issubclass(t, Tracer):
            aval = getattr(instance, "aval", None)
            return isinstance(aval, AbstractVariable) and issubclass(
                aval._var_type, cls
            )
        return issubclass(t, cls)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        variable = super().__call__(*args, **kwargs)
        if variable.metadata.get("hijax"):
            return to_hijax(variable)
        return variable


def hijax_var_type(x: Any) -> type | None:
    """The Variable type of a HijaxVariable (or of its tracer), else None."""
    if type(x) is HijaxVariable:
        return x._var_type
    if isinstance(x, Tracer):
        aval = getattr(x, "aval", None)
        if isinstance(aval, AbstractVariable):
            return aval._var_type
    return None


@dataclasses.dataclass(frozen=True)
class VariableQDD:
    """A HijaxVariable's quasi-dynamic data: the types of its inner Variable's
    leaves and its treedef (which holds the Variable type and metadata)."""

    leaf_avals: tuple[Any, ...]
    treedef: PyTreeDef
    var_type: type

    def to_tangent_qdd(self) -> VariableQDD:
        avals = tuple(a.to_tangent_aval() for a in self.leaf_avals)
        return VariableQDD(avals, self.treedef, self.var_type)

    def normalize(self) -> VariableQDD:
        avals = tuple(a.normalize() for a in self.leaf_avals)
        return VariableQDD(avals, self.treedef, self.var_type)


class VariableEffect(Effect):
    """The effect of reading or writing a HijaxVariable (allowed in control
    flow, so ``lax.scan``/``cond`` bodies may update one)."""


variable_effect = VariableEffect()
hjx.control_flow_allowed_effects.add_type(VariableEffect)


def _qdd_of(leaves: Any, treedef: PyTreeDef, var_type: type) -> VariableQDD:
    return VariableQDD(tuple(map(jax.typeof, leaves)), treedef, var_type)


class NewVariable(hjx.HiPrimitive):
    """Makes a HijaxVariable from an inner Variable's leaves."""

    def is_high(self, *leaves: Any, treedef: Any, var_type: type) -> bool:
        return True

    def impl(self, *leaves: Any, treedef: Any, var_type: type) -> HijaxVariable:
        return HijaxVariable._new(leaves, treedef, var_type)

    def abstract_eval(self, *avals: Any, treedef: Any, var_type: type) -> Any:
        qdd = VariableQDD(tuple(avals), treedef, var_type)
        return hjx.AvalQDD(AbstractVariable(var_type), qdd), {variable_effect}  # type: ignore[arg-type]

    def to_lojax(self, *leaves: Any, treedef: Any, var_type: type) -> HijaxVariable:  # pyright: ignore[reportIncompatibleMethodOverride]
        return HijaxVariable._new(leaves, treedef, var_type)

    def jvp(self, primals: Any, tangents: Any, **params: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        raise NotImplementedError(
            "Cannot differentiate through making a hijax Variable.\nMake it "
            "outside the differentiated function, or use hijax=False there."
        )


class SetVariable(hjx.HiPrimitive):
    """Replaces a HijaxVariable's inner Variable (its leaves and treedef)."""

    multiple_results = True

    def is_high(self, *avals: Any, treedef: Any) -> bool:
        return True

    def impl(self, hv: HijaxVariable, *leaves: Any, treedef: Any) -> list[Any]:
        hv._put(leaves, treedef)
        return []

    def abstract_eval(self, hv_aval: Any, *avals: Any, treedef: Any) -> Any:
        _refuse_ref(hv_aval.aval)
        var_type = hv_aval.aval._var_type
        hv_aval.mutable_qdd.update(VariableQDD(tuple(avals), treedef, var_type))
        return [], {variable_effect}

    def to_lojax(self, hv: HijaxVariable, *leaves: Any, treedef: Any) -> list[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        hv._put(leaves, treedef)
        return []

    def jvp(self, primals: Any, tangents: Any, *, treedef: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        hv, *values = primals
        hv_dot, *value_dots = tangents
        if type(hv_dot) is hjx.Zero:
            raise ValueError(
                "Cannot differentiate a write into a hijax Variable.\nWrap the "
                "value in jax.lax.stop_gradient before writing it."
            )
        set_variable_p.bind(hv, *values, treedef=treedef)
        set_variable_p.bind(hv_dot, *value_dots, treedef=treedef)
        return [], []


class GetVariable(hjx.HiPrimitive):
    """Reads a HijaxVariable's inner Variable leaves (``avals`` are their types)."""

    multiple_results = True

    def impl(self, hv: HijaxVariable, *, avals: Any) -> tuple[Any, ...]:
        return hv._leaves

    def abstract_eval(self, hv_aval: Any, *, avals: Any) -> Any:
        _refuse_ref(getattr(hv_aval, "aval", hv_aval))
        return list(avals), {variable_effect}

    def to_lojax(self, hv: HijaxVariable, *, avals: Any) -> tuple[Any, ...]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return hv._leaves

    def jvp(self, primals: Any, tangents: Any, *, avals: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        (hv,), (hv_dot,) = primals, tangents
        tangent_avals = tuple(a.to_tangent_aval() for a in avals)
        return (
            get_variable_p.bind(hv, avals=avals),
            get_variable_p.bind(hv_dot, avals=tangent_avals),
        )


def _refuse_ref(aval: Any) -> None:
    """Tracing a read or write of a Variable that is both hijax and ref-backed:
    JAX cannot see a ref hidden in a hijax type (flax.nnx fails there too)."""
    if getattr(aval, "_ref", False):
        raise TypeError(
            f"A {aval._var_type.__name__} that is both hijax=True and ref=True "
            "cannot be used inside a JAX transform (jit, scan, grad): its ref "
            "would be hidden inside the hijax type.\nUse one mode: hijax=True (JAX "
            "writes the Variable back) or ref=True (JAX updates the ref in place)."
        )


new_variable_p = NewVariable("new_variable")
set_variable_p = SetVariable("set_variable")
get_variable_p = GetVariable("get_variable")


def to_hijax(variable: Any) -> HijaxVariable:
    """The HijaxVariable holding ``variable`` (its type, metadata and value)."""
    leaves, treedef = jax.tree.flatten(variable)
    return new_variable_p.bind(*leaves, treedef=treedef, var_type=type(variable))


def get_state(hv: Any) -> Any:
    """The inner Variable of a HijaxVariable (or of its tracer): a fresh plain
    Variable; write changes back with :func:`set_state`."""
    qdd: VariableQDD = jax.experimental.cur_qdd(hv)  # type: ignore[attr-defined]
    leaves = get_variable_p.bind(hv, avals=qdd.leaf_avals)
    return jax.tree.unflatten(qdd.treedef, leaves)


def set_state(hv: Any, variable: Any) -> None:
    leaves, treedef = jax.tree.flatten(variable)
    set_variable_p.bind(hv, *leaves, treedef=treedef)


def _apply(hv: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(variable, ...)`` on the inner Variable; writes the Variable back if
    ``fn`` changed it (its structure, metadata or any leaf)."""
    variable = get_state(hv)
    leaves, treedef = jax.tree.flatten(variable)
    out = fn(variable, *args, **kwargs)
    new_leaves, new_treedef = jax.tree.flatten(variable)
    if new_treedef != treedef or any(
        a is not b for a, b in zip(leaves, new_leaves, strict=True)
    ):
        set_state(hv, variable)
    return out


def _call(hv: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The inner Variable's method ``name`` called (see :func:`_apply`)."""
    return _apply(hv, lambda v: getattr(v, name)(*args, **kwargs))


def _getattr(hv: Any, name: str) -> Any:
    return _apply(hv, getattr, name)


def _method(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _call(self, name, *args, **kwargs)

    method.__name__ = name
    return method


def _attribute(name: str) -> Any:
    def fget(self: Any) -> Any:
        return _getattr(self, name)

    fget.__name__ = name
    return fget


_FORWARDED = (
    "get_value set_value get_raw_value set_raw_value create_value get_metadata "
    "set_metadata has_metadata del_metadata add_axis remove_axis copy replace "
    "to_state"
).split()
_OPERATORS = (
    "__getitem__ __setitem__ __len__ __iter__ __add__ __sub__ __mul__ __matmul__ "
    "__truediv__ __floordiv__ __mod__ __divmod__ __pow__ __lshift__ __rshift__ "
    "__and__ __xor__ __or__ __radd__ __rsub__ __rmul__ __rmatmul__ __rtruediv__ "
    "__rfloordiv__ __rmod__ __rdivmod__ __rpow__ __rlshift__ __rrshift__ __rand__ "
    "__rxor__ __ror__ __neg__ __pos__ __abs__ __invert__ __complex__ __int__ "
    "__float__ __index__ __round__ __trunc__ __floor__ __ceil__"
).split()
_EAGER_ONLY = (
    "__delitem__ __contains__ __call__ __lt__ __le__ __gt__ __ge__ __ne__ __eq__ "
    "__jax_array__ __array__ __repr__"
).split()


class HijaxVariableMeta(type):
    """``isinstance(x, HijaxVariable)`` holds for a HijaxVariable's tracer too."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance) or (
            isinstance(instance, Tracer)
            and isinstance(getattr(instance, "aval", None), AbstractVariable)
        )


class HijaxVariable(Generic[A], metaclass=HijaxVariableMeta):
    """A Variable JAX transforms take as one mutable object (see the module
    docstring). Make one with ``hijax=True``; it behaves as its Variable type
    (``v[...]``, ``v.value``, metadata attributes, operators)."""

    __slots__ = ("_leaves", "_treedef", "_var_type")
    _leaves: tuple[Leaf, ...]
    _treedef: PyTreeDef
    _var_type: type

    @classmethod
    def _new(
        cls, leaves: Any, treedef: PyTreeDef, var_type: type
    ) -> HijaxVariable[Any]:
        hv = object.__new__(cls)
        hv._put(leaves, treedef)
        object.__setattr__(hv, "_var_type", var_type)
        return hv

    def _put(self, leaves: Any, treedef: PyTreeDef) -> None:
        object.__setattr__(self, "_leaves", tuple(leaves))
        object.__setattr__(self, "_treedef", treedef)

    # as flax.nnx's: `hv.__init__(value, **metadata)` re-runs the inner Variable's
    # and writes the result back (a HijaxVariable is made by `hijax=True`)
    __init__ = _method("__init__")

    # the hijax interface
    def cur_qdd(self) -> VariableQDD:
        return _qdd_of(self._leaves, self._treedef, self._var_type)

    type_state = cur_qdd

    @property
    def var_type(self) -> type:
        return self._var_type

    @property
    def type(self) -> type:
        return self._var_type

    @property
    def hijax(self) -> bool:
        return True

    @property
    def ref(self) -> bool:
        return _getattr(self, "ref")

    @property
    def value(self) -> Any:
        return _call(self, "get_value")

    @value.setter
    def value(self, value: Any) -> None:
        _call(self, "set_value", value)

    # what lens's graph functions read and write on a Variable
    @property
    def _raw_value(self) -> Any:
        return get_state(self)._raw_value

    @_raw_value.setter
    def _raw_value(self, value: Any) -> None:
        variable = get_state(self)
        object.__setattr__(variable, "_raw_value", value)
        set_state(self, variable)

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(get_state(self).metadata)

    @metadata.setter
    def metadata(self, metadata: dict[str, Any]) -> None:
        variable = get_state(self)
        object.__setattr__(variable, "_var_metadata", {**metadata, "hijax": True})
        set_state(self, variable)

    _var_metadata = metadata

    @property
    def _lens_frame(self) -> None:
        return None  # a hijax Variable may be updated in any transform

    _can_update = True

    def _check_can_update(self) -> None:
        """A hijax Variable may be updated in any transform: never raises."""

    @classmethod
    def from_metadata(cls, value: Any, metadata: dict[str, Any]) -> Any:
        raise TypeError(
            "HijaxVariable.from_metadata: call it on the Variable type instead, "
            "e.g. nnx.Param.from_metadata(value, {..., 'hijax': True})."
        )

    def copy_from(self, other: Any) -> None:
        if type(other) is HijaxVariable:
            other = get_state(other)
        _call(self, "copy_from", other)

    def update_from_state(self, variable_state: Any) -> None:
        if type(variable_state) is HijaxVariable:
            variable_state = get_state(variable_state)
        _call(self, "update_from_state", variable_state)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and not name.startswith("__"):
            raise AttributeError(name)
        return _getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        _call(self, "__setattr__", name, value)

    __hash__ = object.__hash__


for _name in (*_FORWARDED, *_OPERATORS, *_EAGER_ONLY):
    setattr(HijaxVariable, _name, _method(_name))


def _to_abstract(hv: HijaxVariable[Any]) -> AbstractVariable:
    return AbstractVariable(hv._var_type, ref=any(map(is_array_ref, hv._leaves)))


hjx.register_hitype(HijaxVariable, _to_abstract)


# JAX's own attributes of an aval: never read as Variable metadata.
_AVAL_ATTRIBUTES = frozenset(
    "shape dtype ndim size weak_type sharding vma memory_space manual_axis_type "
    "at mat".split()
)


class AbstractVariable(hjx.MutableHiType, Generic[A]):
    """The JAX type of a HijaxVariable: its Variable type; the rest (structure
    and leaf types) is its :class:`VariableQDD`. A tracer of this type forwards
    attribute reads, methods and operators to the inner Variable."""

    __slots__ = ["_ref", "_var_type"]  # noqa: RUF023
    _var_type: type
    _ref: bool

    def __init__(
        self,
        var_type: type,
        treedef: PyTreeDef | None = None,
        leaves: tuple[Any, ...] | None = None,
        has_qdd: bool = True,
        *,
        ref: bool = False,
    ):
        if not has_qdd or treedef is not None or leaves is not None:
            raise ValueError(
                "AbstractVariable: lens's hijax Variables are always mutable: their "
                "structure and leaf types are quasi-dynamic data (VariableQDD), not "
                "part of the type.\nCall AbstractVariable(var_type, ref=...) "
                "without treedef/leaves/has_qdd=False."
            )
        object.__setattr__(self, "_var_type", var_type)
        object.__setattr__(self, "_ref", bool(ref))

    @property
    def hijax(self) -> bool:
        return True

    @property
    def ref(self) -> bool:
        return self._ref

    _can_update = True
    _check_can_update = hjx.aval_method(HijaxVariable._check_can_update)  # pyright: ignore[reportCallIssue]

    def __hash__(self) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        return hash((AbstractVariable, self._var_type, self._ref))

    def __eq__(self, other: object) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        return (
            isinstance(other, AbstractVariable)
            and self._var_type is other._var_type
            and self._ref == other._ref
        )

    def __repr__(self) -> str:
        return f"{self._var_type.__name__}()"

    __str__ = __repr__

    def str_short(self, short_dtypes: bool = False, **_: Any) -> str:  # pyright: ignore[reportIncompatibleMethodOverride]
        return repr(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in _AVAL_ATTRIBUTES:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '{name}'"
            )
        return hjx.aval_property(_attribute(name))  # type: ignore[call-arg]

    # the mutable hitype interface
    def lo_ty_qdd(self, qdd: VariableQDD) -> list[Any]:  # type: ignore[override]
        return [lo for aval in qdd.leaf_avals for lo in aval.lo_ty()]

    def _raise(self, qdd: VariableQDD, lo_vals: Any) -> list[Any]:
        lo_vals = iter(lo_vals)
        hi_vals = [
            aval.raise_val(*itertools.islice(lo_vals, len(aval.lo_ty())))
            for aval in qdd.leaf_avals
        ]
        if next(lo_vals, None) is not None:
            raise ValueError("AbstractVariable: more low-level values than leaves")
        return hi_vals

    def new_from_loval(self, qdd: VariableQDD, *lo_vals: Any) -> HijaxVariable[Any]:  # type: ignore[override]
        return HijaxVariable._new(self._raise(qdd, lo_vals), qdd.treedef, qdd.var_type)

    def read_loval(self, qdd: VariableQDD, hv: HijaxVariable[Any]) -> list[Any]:  # type: ignore[override]
        return [
            lo
            for aval, leaf in zip(qdd.leaf_avals, hv._leaves, strict=True)
            for lo in aval.lower_val(leaf)
        ]

    def update_from_loval(  # type: ignore[override]
        self, qdd: VariableQDD, hv: HijaxVariable[Any], *lo_vals: Any
    ) -> None:
        hv._put(self._raise(qdd, lo_vals), qdd.treedef)

    def to_tangent_aval(self) -> AbstractVariable[A]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return AbstractVariable(self._var_type, ref=self._ref)


def _tracer_method(name: str) -> Any:
    def method(self: AbstractVariable[Any], tracer: Any, *args: Any) -> Any:
        return _call(tracer, name, *args)

    method.__name__ = name
    return method


for _name in _FORWARDED:
    setattr(AbstractVariable, _name, hjx.aval_method(_method(_name)))  # type: ignore[call-arg]
for _name in ("value", "type", "var_type", "metadata", "_raw_value", "_lens_frame"):
    setattr(
        AbstractVariable,
        _name,
        hjx.aval_property(getattr(HijaxVariable, _name).fget),  # type: ignore[call-arg]
    )
AbstractVariable.__jax_array__ = hjx.aval_method(_method("__jax_array__"))  # type: ignore[attr-defined,call-arg]
for _name in _OPERATORS:  # a tracer calls aval._add(tracer, other) for tracer + other
    setattr(AbstractVariable, "_" + _name.strip("_"), _tracer_method(_name))


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
