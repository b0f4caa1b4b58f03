"""Ref-backed Variables: the value lives in a ``jax.Ref`` (``jax.new_ref``).

``nnx.Param(x, ref=True)`` (or ``nnx.var_defaults(ref=True)``) keeps its value in
a mutable array reference. Reads (``v[...]``, ``v.value``) read the ref and
writes (``v[...] = y``) write into it, so a ref-backed Variable passed to
``jax.jit``, ``jax.lax.scan`` or ``jax.grad`` (as an argument or captured) is
updated in place by JAX itself, with no state carried out by hand. These helpers
are what :mod:`lens.nnx._variables.variable` builds on (JAX's public ``jax.ref`` API).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import jax
import numpy as np
from jax.core import Tracer
from jax.ref import AbstractRef

from lens._facades import show_at_flax_paths

Ref = jax.Ref


def is_array_ref(x: Any) -> TypeGuard[jax.Ref]:
    """Whether ``x`` is a mutable array reference (a ``jax.Ref``, or a tracer of
    one inside a transform)."""
    t = type(x)  # not isinstance(x, jax.Ref): its metaclass check is slow
    if t is jax.Ref:
        return True
    if issubclass(t, Tracer):
        return isinstance(x.aval, AbstractRef)
    return issubclass(t, AbstractRef)


def read(x: Any) -> Any:
    """The array a ref holds (``x`` itself if it is not a ref)."""
    return x[...] if is_array_ref(x) else x


def contains_ref(value: Any) -> bool:
    """Whether ``value`` is, or holds among its pytree leaves, a ref."""
    if is_array_ref(value):
        return True
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return False
    return any(is_array_ref(x) for x in jax.tree.leaves(value))


def new_ref(value: Any, owner: str) -> jax.Ref:
    """``jax.new_ref(value)``, with a clear error for a value a ref cannot hold."""
    try:
        return jax.new_ref(value)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{owner}(ref=True): a ref holds one array, got a value of type "
            f"{type(value).__name__}.\nKeep ref=False for a value that is not an "
            "array (a dict, list or other pytree), or make one Variable per array."
        ) from e


def is_array_like(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def replaces(old: Any, new: Any) -> bool:
    """Whether ``v[...] = new`` swaps the value whole (as flax.nnx: an array of
    the same shape and dtype), rather than writing into it."""
    if not is_array_like(old):
        return False
    if not isinstance(old, jax.Array):
        return is_array_like(new) and np.shape(new) == np.shape(old)
    if not (
        isinstance(new, jax.Array) and new.shape == old.shape and new.dtype == old.dtype
    ):
        return False
    try:
        return getattr(new, "sharding", None) == getattr(old, "sharding", None)
    except Exception:  # noqa: BLE001 - a tracer without a readable sharding
        return True


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
