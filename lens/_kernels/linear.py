"""Dense and convolution arithmetic shared by lens.nn's and lens.nnx's layers.

``dense_jit`` and ``dense_general_jit`` are the contractions as one jitted function
each (static arguments by position: a keyword call takes JAX's slower path), run
eagerly while a library has patched the functions they call (``intercept``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from lens._hot_jit import hot_jit
from lens._kernels.dtypes import promote_dtype
from lens._kernels.intercept import intercepted
from lens.typing import LaxPadding, PaddingLike

Array = Any


def normalize_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return tuple(sorted(a if a >= 0 else ndim + a for a in axes))


def canonicalize_tuple(x: Sequence[int] | int) -> tuple[int, ...]:
    return tuple(x) if isinstance(x, Iterable) else (x,)


def static(precision: Any) -> Any:
    """``precision`` as a hashable value (a list of two precisions becomes a tuple)."""
    return tuple(precision) if isinstance(precision, list) else precision


def dense(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    dtype: Any = None,
    precision: Any = None,
    dot_general: Callable[..., Array] = lax.dot_general,
    promote: Callable[..., Any] = promote_dtype,
) -> Array:
    inputs, kernel, bias = promote(inputs, kernel, bias, dtype=dtype)
    y = dot_general(
        inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=precision
    )
    if bias is not None:
        y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
    return y


def _dense_plain(
    inputs: Array, kernel: Array, bias: Array | None, dtype: Any, precision: Any
) -> Array:
    """:func:`dense` with JAX's own functions, as ``x @ kernel + bias`` through
    jnp, as a user's own JAX code writes it: run eagerly (a hot_jit's first
    calls), these are the per-op programs that code has already compiled, where
    lax.dot_general and a reshaped bias would compile three more. The same
    contraction and add, so the same floats."""
    inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=dtype)
    if jnp.ndim(kernel) != 2 or jnp.ndim(inputs) == 0:
        # (a scalar input: dot_general's TypeError, as flax's layers raise)
        return dense(inputs, kernel, bias, None, precision)
    y = (
        jnp.matmul(inputs, kernel)  # a keyword would be another program
        if precision is None
        else jnp.matmul(inputs, kernel, precision=precision)
    )
    if bias is None:
        return y
    promotion = jax.config.jax_numpy_rank_promotion  # pyright: ignore[reportAttributeAccessIssue]
    if y.ndim > 1 and promotion != "allow":
        # y + bias promotes bias's rank: explicit where JAX is told to raise or
        # warn on that (flax's CI runs with jax_numpy_rank_promotion='raise')
        bias = jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
    return y + bias


def dense_general(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    axis: tuple[int, ...],
    batch_dims: tuple[int, ...],
    dtype: Any = None,
    precision: Any = None,
    dot_general: Callable[..., Array] = lax.dot_general,
    promote: Callable[..., Any] = promote_dtype,
) -> Array:
    """Contracts ``axis`` of ``inputs`` with the kernel's leading (non-batch) axes."""
    inputs, kernel, bias = promote(inputs, kernel, bias, dtype=dtype)
    n_batch = len(batch_dims)
    contract = tuple(range(n_batch, n_batch + len(axis)))
    y = dot_general(
        inputs,
        kernel,
        ((axis, contract), (batch_dims, tuple(range(n_batch)))),
        precision=precision,
    )
    if bias is not None:
        # y's axes: batch dims, the free input axes, then the features.
        n_free = inputs.ndim - n_batch - len(axis)
        dims = tuple(range(n_batch)) + tuple(range(n_batch + n_free, y.ndim))
        y += lax.broadcast_in_dim(bias, y.shape, dims)
    return y


# Static arguments by position: a call with keywords takes JAX's slower path.
_dense_jit = hot_jit(_dense_plain, static_argnums=(3, 4))
_dense_general_jit = hot_jit(
    dense_general, static_argnames=("axis", "batch_dims", "dtype", "precision")
)


def dense_jit(
    inputs: Array, kernel: Array, bias: Array | None, dtype: Any, precision: Any
) -> Array:
    """:func:`dense` as one jitted call; eager (as flax's layers) while a library
    has patched ``lax.dot_general`` or ``promote_dtype`` (see ``intercept``), so
    the patch runs on every call and what it creates stays concrete."""
    if intercepted():
        return dense(inputs, kernel, bias, dtype, precision, lax.dot_general)
    return _dense_jit(inputs, kernel, bias, dtype, precision)


def dense_general_jit(
    inputs: Array, kernel: Array, bias: Array | None, **static: Any
) -> Array:
    """:func:`dense_general` as one jitted call; eager while patched (as
    :func:`dense_jit`)."""
    if intercepted():
        return dense_general(
            inputs, kernel, bias, dot_general=lax.dot_general, **static
        )
    return _dense_general_jit(inputs, kernel, bias, **static)


def conv_dimension_numbers(input_shape: Sequence[int]) -> lax.ConvDimensionNumbers:
    """Channel-last dimension numbers for ``lax.conv_general_dilated``."""
    ndim = len(input_shape)
    lhs_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
    rhs_spec = (ndim - 1, ndim - 2) + tuple(range(0, ndim - 2))
    return lax.ConvDimensionNumbers(lhs_spec, rhs_spec, lhs_spec)


def canonicalize_padding(padding: PaddingLike, rank: int) -> LaxPadding:
    """Conv padding in a form ``jax.lax`` takes: a string or ``rank`` pairs.

    Example:
        >>> canonicalize_padding(1, 2)
        [(1, 1), (1, 1)]
        >>> canonicalize_padding([(0, 1), 2], 2)
        [(0, 1), (2, 2)]
    """
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, Sequence) and len(padding) == rank:
        pads = []
        for p in padding:
            if isinstance(p, int):
                pads.append((p, p))
            elif isinstance(p, tuple) and len(p) == 2:
                pads.append(p)
            else:
                break
        if len(pads) == rank:
            return pads
    raise ValueError(
        f"Invalid padding format: {padding}, should be str, int, or a sequence of "
        f"len {rank} where each element is an int or pair of ints."
    )


def broadcast_window(x: int | Sequence[int] | None, n: int) -> tuple[int, ...]:
    if x is None:
        x = 1
    if isinstance(x, int):
        return (x,) * n
    return tuple(x)


def flatten_batch(
    inputs: Array, n_spatial: int
) -> tuple[Array, tuple[int, ...] | None]:
    """Inputs with exactly one batch axis, and the batch shape to restore (or None)."""
    n_batch = inputs.ndim - (n_spatial + 1)
    if n_batch == 1:
        return inputs, None
    batch_shape = inputs.shape[:n_batch]
    return jnp.reshape(inputs, (-1,) + inputs.shape[n_batch:]), batch_shape


def pick_op(
    module: Any, fn_field: str, cls_field: str, default: Callable[..., Any]
) -> Any:
    """The op a layer uses: an instance of ``<op>_cls``, else ``<op>``, else ``default``."""
    cls = getattr(module, cls_field)
    if cls is not None:
        return cls()
    fn = getattr(module, fn_field)
    return fn if fn is not None else default
