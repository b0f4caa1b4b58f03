"""How layers make their parameters: one ``Param`` per weight with flax.nnx's
metadata arguments, and the shared argument helpers (tuples of sizes, output
sharding, dtype promotion).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import jax.numpy as jnp

from lens import errors
from lens.core.spmd import shard_value
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables.hooks import VariableMetadata
from lens.nnx._variables.variable import Param
from lens.nnx.nn.dtypes import promote_dtype

Array = Any


NO_META: Mapping[str, Any] = MappingProxyType({})


def make_param(
    init: Callable[..., Array], rngs: Rngs, shape: Any, dtype: Any, meta: Any
) -> Param:
    return Param(init(rngs.params(), shape, dtype), **dict(meta or {}))


def make_optional_param(
    use: bool, init: Callable[..., Array], rngs: Rngs, shape: Any, dtype: Any, meta: Any
) -> Param | None:
    """``make_param(...)`` when ``use`` (a layer's ``use_scale``/``use_bias``), else None."""
    return make_param(init, rngs, shape, dtype, meta) if use else None


def dot_kwargs(out_sharding: Any, preferred_element_type: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if out_sharding is not None:
        kw["out_sharding"] = out_sharding
    if preferred_element_type is not None:
        kw["preferred_element_type"] = preferred_element_type
    return kw


def as_tuple(x: int | Sequence[int], n: int | None = None) -> tuple[int, ...]:
    if isinstance(x, int):
        return (x,) * (n or 1)
    return tuple(x)


def as_tuple_or_none(x: int | Sequence[int] | None, n: int) -> tuple[int, ...] | None:
    return None if x is None else as_tuple(x, n)


def with_out_sharding(y: Array, out_sharding: Any) -> Array:
    """``y`` laid out as ``out_sharding`` (on the current mesh), when given."""
    return y if out_sharding is None else shard_value(y, out_sharding, None, None)


def promoted(fn: Any, *arrays: Any, dtype: Any) -> tuple[Any, ...]:
    """A user's ``promote_dtype`` applied (the default one is the layer's own)."""
    return arrays if fn is promote_dtype else tuple(fn(arrays, dtype=dtype))


def init_reshaped(
    init: Callable[..., Any], key: Any, flat: tuple, shape: tuple, dtype: Any
) -> Any:
    """``init`` drawn at the 2-D ``flat`` shape (so fans are those of the flat
    matrix), reshaped to ``shape`` (through a VariableMetadata box)."""
    out = init(key, flat, dtype)
    if isinstance(out, VariableMetadata):
        out.raw_value = jnp.reshape(out.raw_value, shape)
        return out
    return jnp.reshape(out, shape)


def check_size(layer: str, field: str, value: Any, example: str = "16") -> None:
    """Raises InvalidHyperparameterError unless ``value`` (a size, or a tuple of
    sizes) is a positive integer; anything not a plain int (an array, None) passes."""
    values = value if isinstance(value, tuple | list) else (value,)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            continue
        if v <= 0:
            raise errors.InvalidHyperparameterError(
                layer, field, value, "a positive integer", f"{layer}({example}, ...)"
            )


def check_rate(layer: str, field: str, value: Any) -> None:
    """Raises InvalidHyperparameterError unless ``value`` is a probability."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not 0.0 <= float(value) <= 1.0:
            raise errors.InvalidHyperparameterError(
                layer, field, value, "a number in [0, 1]", f"{layer}({field}=0.1)"
            )
