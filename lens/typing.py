# ruff: noqa: UP007, UP045 - runtime aliases spelled with Union: some members (string
# forward references, jax.typing unions) do not support `|`.
"""Type names used across lens's signatures (``lens.typing``, like ``flax.typing``).

They are annotations only: lens accepts any value that behaves as described.
:class:`In` and :class:`Out` are also values: in ``variable_axes`` of ``vmap`` and
``scan`` they give an axis for the inputs or the outputs only.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, Optional, Protocol, Self, TypeGuard, TypeVar, Union

import jax
import numpy as np
from jax import lax

from lens._frozen_dict import FrozenDict

Array = Union[jax.Array, Any]
"""An array (``jax.Array``, a numpy array or anything array-like)."""
PRNGKey = jax.Array
"""A PRNG key (``jax.random.key(...)`` or a legacy ``uint32[2]`` key)."""
RNGSequences = dict[str, PRNGKey]
"""``{stream name: key}``, the ``rngs=`` of init/apply."""
Dtype = Union[jax.typing.DTypeLike, Any]
DtypeLikeInexact = (
    Any  # an inexact (floating or complex) dtype (flax.nnx.nn.initializers)
)
Shape = Sequence[int]

K = TypeVar("K")
T = TypeVar("T")
A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])
HA = TypeVar("HA", bound=Hashable)
HB = TypeVar("HB")
TupleArg = TypeVar("TupleArg", bound=tuple)


class Key(Hashable, Protocol):
    """A dict key in a variable tree (hashable, ordered)."""

    def __lt__(self, value: Any, /) -> bool: ...


def is_key_like(x: Any) -> TypeGuard[Key]:
    """Whether ``x`` can be a key of a variable dict."""
    return isinstance(x, Hashable) and hasattr(x, "__lt__")


Path = str
PathParts = tuple[Key, ...]
Leaf = Any

PrecisionLike = Union[
    None,
    str,
    lax.Precision,
    tuple[str, str],
    tuple[lax.Precision, lax.Precision],
]
"""``precision=`` of matmuls: None, a name, a ``lax.Precision``, or a pair."""
DotGeneralT = Callable[..., Array]
ConvGeneralDilatedT = Callable[..., Array]
EinsumT = Callable[..., Array]

PaddingLike = Union[str, int, Sequence[int | tuple[int, int]]]
LaxPadding = Union[str, Sequence[tuple[int, int]]]

Initializer = Union[jax.nn.initializers.Initializer, Callable[..., Any]]

Collection = Mapping[str, Any]
MutableCollection = dict[str, Any]
VariableDict = Mapping[str, Collection]
"""``{collection: {name or child: ...}}``, what init returns and apply takes."""
FrozenVariableDict = FrozenDict[str, Collection]
MutableVariableDict = dict[str, MutableCollection]

PRNGFoldable = Union[int, str]


@dataclasses.dataclass(frozen=True)
class In(Generic[T]):
    """An axis that applies to the inputs of a lifted transform only."""

    axis: T


@dataclasses.dataclass(frozen=True)
class Out(Generic[T]):
    """An axis that applies to the outputs of a lifted transform only."""

    axis: T


Axis = Optional[int]
InOutAxis = Union[Axis, In[Axis], Out[Axis]]
ScanAxis = int
InOutScanAxis = Union[ScanAxis, In[ScanAxis], Out[ScanAxis]]
Axes = Union[int, Sequence[int]]

LogicalNames = tuple[str | None, ...]
AxisName = str | tuple[str, ...] | None
LogicalRules = Sequence[tuple[str, AxisName]]
ArrayPytree = Any
LogicalPartitionSpec = Any
LogicalPartitionSpecPytree = Any
PartitionSpecPytree = Any
Sharding = tuple[AxisName, ...]


class PytreeDeque(deque[A]):
    """A ``deque`` that is a JAX pytree (its items are children)."""


jax.tree_util.register_pytree_node(
    PytreeDeque,
    lambda xs: (list(xs), None),
    lambda _, nodes: PytreeDeque(nodes),
)


class Missing:
    """The type of :data:`MISSING` (an argument that was not given)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


class ShapeDtype(Protocol):
    """Anything with ``shape`` and ``dtype`` (an array or ``ShapeDtypeStruct``)."""

    shape: Shape
    dtype: Dtype


def has_shape_dtype(x: Any) -> TypeGuard[ShapeDtype]:
    """Whether ``x`` has a ``shape`` and a ``dtype``."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


class SizeBytes:
    """A count of values and their size in bytes; adds up."""

    def __init__(self, size: int, bytes: int):
        self.size = size
        self.bytes = bytes

    @classmethod
    def from_array(cls, x: ShapeDtype) -> Self:
        size = int(np.prod(x.shape))
        # the dtype's own itemsize: a PRNG key's extended dtype has one too
        dtype: Any = np.dtype(x.dtype) if isinstance(x.dtype, str) else x.dtype
        return cls(size, size * dtype.itemsize)

    @classmethod
    def from_any(cls, x: Any) -> Self:
        """The total over the leaves of ``x`` that have a shape and dtype."""
        total = cls(0, 0)
        for leaf in jax.tree.leaves(x):
            if has_shape_dtype(leaf):
                total += cls.from_array(leaf)
        return total

    def __add__(self, other: SizeBytes) -> Self:
        return type(self)(self.size + other.size, self.bytes + other.bytes)

    def __bool__(self) -> bool:  # as flax's: nothing counted is false
        return bool(self.size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SizeBytes) and (self.size, self.bytes) == (
            other.size,
            other.bytes,
        )

    def __hash__(self) -> int:
        return hash((self.size, self.bytes))

    def __repr__(self) -> str:
        return f"{self.size:,} ({_bytes_repr(self.bytes)})"


def _bytes_repr(num_bytes: int) -> str:
    count, units = (
        (f"{num_bytes / 1e9:,.1f}", "GB")
        if num_bytes > 1e9
        else (f"{num_bytes / 1e6:,.1f}", "MB")
        if num_bytes > 1e6
        else (f"{num_bytes / 1e3:,.1f}", "KB")
        if num_bytes > 1e3
        else (f"{num_bytes:,}", "B")
    )
    return f"{count} {units}"


class PromoteDtypeFn(Protocol):
    """``promote_dtype(*args, dtype=None, inexact=True)`` as in :mod:`lens.nn`.

    Flax declares ``__call__(self, args: tuple, /, ...)`` but its layers call
    ``self.promote_dtype(inputs, kernel, bias, dtype=...)``: lens declares the
    call the layers make, so a type checker accepts both the default and a
    custom function (a deliberate difference, docs/porting.md).
    """

    def __call__(
        self, *args: Any, dtype: Any = None, inexact: bool = True
    ) -> Sequence[Any]: ...


class HashableMapping(Mapping[HA, HB], Hashable):
    """A read-only mapping that hashes by its items (for static arguments)."""

    def __init__(self, mapping: Mapping[HA, HB], copy: bool = True):
        self._mapping = dict(mapping) if copy else mapping

    def __getitem__(self, key: HA) -> HB:
        return self._mapping[key]

    def __contains__(self, key: object) -> bool:
        return key in self._mapping

    def __iter__(self) -> Any:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._mapping.items(), key=repr)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HashableMapping) and self._mapping == other._mapping

    def __repr__(self) -> str:
        return f"HashableMapping({self._mapping!r})"


class BaseConfigContext(abc.ABC):
    """A setting kept on a stack, with a default (the base of nnx's mode switches).

    ``Setting(value)`` on its own sets the value from then on (it replaces the top
    of the stack); ``with Setting(value):`` sets it for the block only, and
    ``@Setting(value)`` for every call of the decorated function. Subclasses say
    where the stack lives and what the default is.

    Example:
        >>> class Mode(BaseConfigContext):
        ...     stack = []
        ...     @classmethod
        ...     def get_default(cls): return "graph"
        ...     @classmethod
        ...     def get_stack(cls): return cls.stack
        >>> with Mode("tree"):
        ...     Mode.current_value()
        'tree'
        >>> Mode.current_value()
        'graph'
    """

    @classmethod
    @abc.abstractmethod
    def get_default(cls) -> Any:
        """The value when nothing is pushed."""

    @classmethod
    @abc.abstractmethod
    def get_stack(cls) -> list:
        """The stack of pushed values."""

    def __init__(self, value: Any, /) -> None:
        stack = self.get_stack()
        self._had_value = bool(stack)
        self.prev_value = stack[-1] if stack else None
        if stack:
            stack[-1] = value
        else:
            stack.append(value)
        self.new_value = value

    @classmethod
    def current_value(cls) -> Any:
        """The value in force: the top of the stack, else the default."""
        stack = cls.get_stack()
        return stack[-1] if stack else cls.get_default()

    def __enter__(self) -> None:
        # Construction set the value for good; inside ``with`` it is one level
        # above the previous value, which comes back on exit.
        if self._had_value:
            self.get_stack().insert(-1, self.prev_value)

    def __exit__(self, *exc_info: object) -> None:
        self.get_stack().pop()

    def __call__(self, f: F) -> F:
        self._undo()

        @functools.wraps(f)
        def with_value(*args: Any, **kwargs: Any) -> Any:
            self.get_stack().append(self.new_value)
            try:
                return f(*args, **kwargs)
            finally:
                self.get_stack().pop()

        return with_value  # type: ignore[return-value]

    def _undo(self) -> None:
        """Takes back what construction set (a decorator sets per call instead)."""
        stack = self.get_stack()
        stack.pop()
        if self._had_value:
            stack.append(self.prev_value)
