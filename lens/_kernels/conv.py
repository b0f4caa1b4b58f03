"""Convolution arithmetic for lens.nnx's ``Conv`` and ``ConvTranspose`` (the
stages lens.nn's ``_Conv`` and ``ConvTranspose`` run inside ``compact``): batch
axes flattened to one, windows broadcast, Flax's extra paddings (``CIRCULAR``,
``REFLECT``, ``CAUSAL``) done by padding the input, the bias added.

Parameters arrive made and dtype-promoted: the layers own their variables and
their ``promote_dtype``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
from jax import lax

from lens._kernels import linear as ops

Array = Any


@dataclasses.dataclass(frozen=True)
class Window:
    """A convolution's window, everything broadcast to one entry per spatial axis.

    Attributes:
      kernel_size: the kernel's spatial shape.
      strides, input_dilation, kernel_dilation: per spatial axis.
      padding: a string lax takes (``SAME``/``VALID``) or one pair per axis.
    """

    kernel_size: tuple[int, ...]
    strides: tuple[int, ...]
    input_dilation: tuple[int, ...]
    kernel_dilation: tuple[int, ...]
    padding: Any


def window(
    kernel_size: Sequence[int],
    strides: Any,
    input_dilation: Any,
    kernel_dilation: Any,
    padding: Any,
) -> Window:
    """The :class:`Window` of a layer's settings (ints and None broadcast)."""
    nd = len(kernel_size)
    return Window(
        tuple(kernel_size),
        ops.broadcast_window(strides, nd),
        ops.broadcast_window(input_dilation, nd),
        ops.broadcast_window(kernel_dilation, nd),
        ops.canonicalize_padding(padding, nd),
    )


def pad_inputs(inputs: Array, win: Window) -> tuple[Array, Any]:
    """``inputs`` padded for ``CIRCULAR``/``REFLECT``/``CAUSAL`` and the padding
    lax is then given (``VALID``); other paddings pass through."""
    padding = win.padding
    if padding in ("CIRCULAR", "REFLECT"):
        dilated = [
            (k - 1) * d + 1 for k, d in zip(win.kernel_size, win.kernel_dilation)
        ]
        pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
        mode = "wrap" if padding == "CIRCULAR" else "reflect"
        return jnp.pad(inputs, pads, mode=mode), "VALID"
    if padding == "CAUSAL":
        if len(win.kernel_size) != 1:
            raise ValueError(
                "Causal padding is only implemented for 1D convolutions.\n"
                f"kernel_size={win.kernel_size} has {len(win.kernel_size)} spatial "
                "axes: pad the input yourself and give padding='VALID'."
            )
        left = win.kernel_dilation[0] * (win.kernel_size[0] - 1)
        return jnp.pad(inputs, [(0, 0), (left, 0), (0, 0)]), "VALID"
    return inputs, padding


def add_bias(y: Array, bias: Array | None) -> Array:
    if bias is None:
        return y
    return y + jnp.reshape(bias, (1,) * (y.ndim - bias.ndim) + bias.shape)


def restore_batch(y: Array, batch_shape: tuple[int, ...] | None) -> Array:
    return y if batch_shape is None else jnp.reshape(y, batch_shape + y.shape[1:])


def conv(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    win: Window,
    *,
    feature_group_count: int = 1,
    precision: Any = None,
    conv_op: Callable[..., Array] = lax.conv_general_dilated,
    op_kwargs: dict[str, Any] | None = None,
) -> Array:
    """A channels-last convolution of ``inputs`` (any number of batch axes)."""
    inputs, batch_shape = ops.flatten_batch(inputs, len(win.kernel_size))
    inputs, padding = pad_inputs(inputs, win)
    y = conv_op(
        inputs,
        kernel,
        win.strides,
        padding,
        lhs_dilation=win.input_dilation,
        rhs_dilation=win.kernel_dilation,
        dimension_numbers=ops.conv_dimension_numbers(inputs.shape),
        feature_group_count=feature_group_count,
        precision=precision,
        **(op_kwargs or {}),
    )
    return restore_batch(add_bias(y, bias), batch_shape)


def _wrap_circular(
    y: Array, in_spatial: Sequence[int], strides: Sequence[int], transpose: bool
) -> Array:
    """The full (``VALID``) transposed output wrapped around the strided input
    size: the periodic transpose of a periodic convolution."""
    scaled = [d * s for d, s in zip(in_spatial, strides)]
    diffs = [-(yd - xd) % (2 * xd) for yd, xd in zip(y.shape[1:-1], scaled)]
    if transpose:
        pads = [(d // 2, (d + 1) // 2) for d in diffs]
    else:
        pads = [((d + 1) // 2, d // 2) for d in diffs]
    y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
    for i in range(1, y.ndim - 1):
        y = y.reshape(y.shape[:i] + (-1, scaled[i - 1]) + y.shape[i + 1 :])
        y = y.sum(axis=i)
    return y


def conv_transpose(
    inputs: Array,
    kernel: Array,
    bias: Array | None,
    win: Window,
    *,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Array:
    """A channels-last transposed convolution (``win.input_dilation`` unused)."""
    inputs, batch_shape = ops.flatten_batch(inputs, len(win.kernel_size))
    circular = win.padding == "CIRCULAR"
    y = lax.conv_transpose(
        inputs,
        kernel,
        win.strides,
        "VALID" if circular else win.padding,
        rhs_dilation=win.kernel_dilation,
        transpose_kernel=transpose_kernel,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    if circular:
        y = _wrap_circular(y, inputs.shape[1:-1], win.strides, transpose_kernel)
    return restore_batch(add_bias(y, bias), batch_shape)
