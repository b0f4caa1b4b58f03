"""dtype helpers shared by the layers."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp


def canonicalize_dtype(*args: Any, dtype: Any = None, inexact: bool = True) -> Any:
    """The dtype :func:`promote_dtype` casts to: ``dtype``, or the args' common type.

    With ``inexact=True`` an integer common type becomes floating point.

    Raises:
      ValueError: if ``inexact`` and the given ``dtype`` is not inexact.
    """
    if dtype is None:
        arrays = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*arrays)
        if inexact and not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.promote_types(jnp.float32, dtype)
    if inexact and not jnp.issubdtype(dtype, jnp.inexact):
        raise ValueError(
            f"Dtype must be inexact: {dtype}\nA layer's dtype= must be a floating or "
            "complex type (e.g. jnp.float32, jnp.bfloat16)."
        )
    return dtype


def promote_dtype(*args: Any, dtype: Any = None, inexact: bool = True) -> list[Any]:
    """Casts ``args`` (``None`` kept) to ``dtype`` or to their common type.

    Example:
        >>> import jax.numpy as jnp
        >>> x, w = promote_dtype(jnp.ones(2, jnp.int32), jnp.ones(2, jnp.bfloat16))
        >>> x.dtype, w.dtype
        (dtype(bfloat16), dtype(bfloat16))
    """
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return [None if x is None else jnp.asarray(x, dtype) for x in args]


def merge_param(name: str, a: Any, b: Any) -> Any:
    """Returns whichever of attribute ``a`` and call argument ``b`` is set (not both).

    The error messages are Flax's word for word (its tests compare them); the hint
    is a note, which a traceback shows after the message.
    """
    if a is not None and b is not None:
        raise _with_note(
            ValueError(
                f'Parameter "{name}" was passed to the constructor and at call time.'
                " Should be passed just once."
            ),
            "Give it as a module attribute or as a call argument, not both.",
        )
    if a is None and b is None:
        raise _with_note(
            ValueError(
                f'Parameter "{name}" must be passed to the constructor or at call time.'
            ),
            f"E.g. Layer({name}=...) or layer(x, {name}=...).",
        )
    return a if b is None else b


def _with_note(err: Exception, note: str) -> Exception:
    err.add_note(note)
    return err
