"""Dropout's keep mask and its scaling, traced as the few primitives they are.

``jax.random.bernoulli(key, p, shape)`` is two nested jitted functions
(``_bernoulli`` around ``_uniform``) around ``random_bits`` and four bit
operations. Each time a step is traced (its first call, a new shape, any call
after ``jax.clear_caches()``) both nested functions are traced again: ~3 ms of a
dropout layer's ~4 ms trace on this project's 2-core test machine.
:func:`bernoulli` writes the same primitives inline (uniform floats from the
mantissa bits, compared with ``p``), so it draws the same mask from the same key,
bit for bit, in a quarter of the time. Anything but the plain case (an array
``p``, a sharded output) is JAX's own function, and so is an eager call (one
dispatch of JAX's compiled sampler). :func:`dropout` then keeps and scales the
inputs as Flax's layers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer

from lens._kernels.norm import LEAN_DTYPES, lean_dtype

Array = Any


def _lean_dtype() -> np.dtype | None:
    """The dtype a Python float ``p`` becomes (float32, or float64 under x64)."""
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(np.float64))
    return dtype if dtype in LEAN_DTYPES else None


def _unsharded(out_sharding: Any) -> bool:
    """True where ``jax.random.bernoulli`` would not lay its output out itself."""
    if out_sharding is not None:
        mesh = getattr(out_sharding, "mesh", None)
        if mesh is None or not mesh.empty:
            return False
    return jax.sharding.get_abstract_mesh().empty


def bernoulli(
    key: Array, p: Any, shape: Sequence[int], *, out_sharding: Any = None
) -> Array:
    """``jax.random.bernoulli(key, p, shape, out_sharding=out_sharding)``: the same
    booleans, traced without its nested jits when ``p`` is a Python float.

    Example:
        >>> import jax
        >>> key = jax.random.key(0)
        >>> mask = jax.jit(lambda k: bernoulli(k, 0.9, (4, 3)))(key)
        >>> bool((mask == jax.random.bernoulli(key, 0.9, (4, 3))).all())
        True
    """
    # Eagerly, jax.random.bernoulli is one dispatch of a compiled program (these
    # primitives would be six): the inline form is for traces only.
    dtype = _lean_dtype() if type(p) is float and isinstance(key, Tracer) else None
    if dtype is None or not _unsharded(out_sharding):
        return jax.random.bernoulli(key, p, shape, out_sharding=out_sharding)
    shape = tuple(shape)
    unsigned = np.uint32 if dtype.itemsize == 4 else np.uint64
    nbits, nmant = dtype.itemsize * 8, np.finfo(dtype).nmant
    bits = jax.random.bits(key, shape, unsigned)
    # uniform in [1, 2) from the mantissa bits, less 1: jax.random.uniform's floats
    # (its `* (maxval - minval) + minval` and `max(minval, .)` are exact for [0, 1))
    one = np.array(1.0, dtype)
    float_bits = lax.bitwise_or(
        lax.shift_right_logical(bits, unsigned(nbits - nmant)), one.view(unsigned)
    )
    uniform = lax.sub(lax.bitcast_convert_type(float_bits, dtype), one)
    return lax.lt(uniform, np.array(p, dtype))


def dropout(
    inputs: Array,
    key: Array,
    keep: Any,
    shape: Sequence[int],
    *,
    out_sharding: Any = None,
) -> Array:
    """``inputs / keep`` where a :func:`bernoulli` mask of ``shape`` (broadcast to
    the inputs) is True, else 0: Flax's ``select(mask, inputs / keep, zeros)``.

    In a trace, float32 or float64 inputs (strong, static shapes: ``lean_dtype``)
    are scaled and selected with ``lax`` (the same primitives ``jnp`` emits for
    them, so the same floats).
    """
    mask = bernoulli(key, keep, shape, out_sharding=out_sharding)
    dtype = lean_dtype(inputs)
    if (
        dtype is not None
        and type(keep) is float
        and isinstance(inputs, Tracer)
        and mask.ndim == inputs.ndim
    ):
        if mask.shape != inputs.shape:
            mask = lax.broadcast_in_dim(mask, inputs.shape, tuple(range(inputs.ndim)))
        scaled = lax.div(inputs, np.array(keep, dtype))
        return lax.select(mask, scaled, lax.full_like(inputs, 0))
    mask = jnp.broadcast_to(mask, inputs.shape)
    return lax.select(mask, inputs / keep, jnp.zeros_like(inputs))
