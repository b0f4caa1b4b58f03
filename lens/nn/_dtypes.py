"""dtype helpers shared by the layers."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp


def promote_dtype(*args: Any, dtype: Any = None, inexact: bool = True) -> list[Any]:
    """Casts ``args`` (``None`` kept) to ``dtype`` or to their common type."""
    if dtype is None:
        arrays = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*arrays)
        if inexact and not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.promote_types(jnp.float32, dtype)
    return [None if x is None else jnp.asarray(x, dtype) for x in args]


def canonicalize_dtype(*args: Any, dtype: Any = None, inexact: bool = True) -> Any:
    """The dtype :func:`promote_dtype` would cast to."""
    if dtype is None:
        arrays = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*arrays)
        if inexact and not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.promote_types(jnp.float32, dtype)
    return dtype


def merge_param(name: str, a: Any, b: Any) -> Any:
    """Returns whichever of attribute ``a`` and call argument ``b`` is set (not both)."""
    if a is None and b is None:
        raise ValueError(
            f'Parameter "{name}" must be given either as a module attribute or as a call '
            "argument, and was given as neither."
        )
    if a is not None and b is not None:
        raise ValueError(
            f'Parameter "{name}" was given both as a module attribute and as a call '
            "argument; give it in one place only."
        )
    return a if b is None else b
