"""Recurrent layers: LSTMCell, GRUCell and RNN (a scan over time).

Cell parameter names (``ii``, ``hi``, ...; ``ir``, ``hr``, ...) follow Flax Linen.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens.core._filters import Filter
from lens.nn import initializers
from lens.nn._linear import Dense
from lens.nn._module import Module, compact, nowrap
from lens.nn._transforms import scan

Array = Any
Dtype = Any
Initializer = Callable[..., Array]


class RNNCellBase(Module):
    """Base class of recurrent cells: ``__call__(carry, x) -> (carry, y)``."""

    @nowrap
    def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> Any:
        """The initial carry for inputs of ``input_shape`` (batch dims + features)."""
        raise NotImplementedError

    @property
    def num_feature_axes(self) -> int:
        """How many trailing axes of the input are features (1)."""
        return 1


class LSTMCell(RNNCellBase):
    """An LSTM cell; carry ``(c, h)``.

    Params: input kernels ``ii``, ``if``, ``ig``, ``io`` (no bias) and hidden
    kernels ``hi``, ``hf``, ``hg``, ``ho`` (with bias).
    """

    features: int
    gate_fn: Callable[..., Any] = jax.nn.sigmoid
    activation_fn: Callable[..., Any] = jnp.tanh
    kernel_init: Initializer = initializers.default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(
        self, carry: tuple[Array, Array], inputs: Array
    ) -> tuple[tuple[Array, Array], Array]:
        """One step: returns ``((new_c, new_h), new_h)``."""
        c, h = carry
        hidden = h.shape[-1]
        dense_h = functools.partial(
            Dense,
            features=hidden,
            use_bias=True,
            kernel_init=self.recurrent_kernel_init,
            bias_init=self.bias_init,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        dense_i = functools.partial(
            Dense,
            features=hidden,
            use_bias=False,
            kernel_init=self.kernel_init,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        i = self.gate_fn(dense_i(name="ii")(inputs) + dense_h(name="hi")(h))
        f = self.gate_fn(dense_i(name="if")(inputs) + dense_h(name="hf")(h))
        g = self.activation_fn(dense_i(name="ig")(inputs) + dense_h(name="hg")(h))
        o = self.gate_fn(dense_i(name="io")(inputs) + dense_h(name="ho")(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(
        self, rng: Any, input_shape: tuple[int, ...]
    ) -> tuple[Array, Array]:
        """``(c, h)`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        key1, key2 = jax.random.split(rng)
        shape = tuple(input_shape[:-1]) + (self.features,)
        return self.carry_init(key1, shape, self.param_dtype), self.carry_init(
            key2, shape, self.param_dtype
        )


class GRUCell(RNNCellBase):
    """A GRU cell; carry ``h``.

    Params: input kernels ``ir``, ``iz``, ``in`` (with bias) and hidden kernels
    ``hr``, ``hz`` (no bias) and ``hn`` (with bias).
    """

    features: int
    gate_fn: Callable[..., Any] = jax.nn.sigmoid
    activation_fn: Callable[..., Any] = jnp.tanh
    kernel_init: Initializer = initializers.default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple[Array, Array]:
        """One step: returns ``(new_h, new_h)``."""
        h = carry
        hidden = h.shape[-1]
        dense_h = functools.partial(
            Dense,
            features=hidden,
            use_bias=False,
            kernel_init=self.recurrent_kernel_init,
            bias_init=self.bias_init,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        dense_i = functools.partial(
            Dense,
            features=hidden,
            use_bias=True,
            kernel_init=self.kernel_init,
            bias_init=self.bias_init,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        r = self.gate_fn(dense_i(name="ir")(inputs) + dense_h(name="hr")(h))
        z = self.gate_fn(dense_i(name="iz")(inputs) + dense_h(name="hz")(h))
        n = self.activation_fn(
            dense_i(name="in")(inputs) + r * dense_h(name="hn", use_bias=True)(h)
        )
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> Array:
        """``h`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        return self.carry_init(
            rng, tuple(input_shape[:-1]) + (self.features,), self.param_dtype
        )


class RNN(Module):
    """Runs a cell over the time axis with ``nn.scan``.

    Inputs are ``(batch..., time, features)`` (``time_major=True``: time first).
    The cell's parameters are shared over time, under ``cell``.
    """

    cell: RNNCellBase
    time_major: bool = False
    return_carry: bool = False
    reverse: bool = False
    keep_order: bool = False
    unroll: int = 1
    variable_axes: Mapping[Filter, int] = dataclasses.field(default_factory=dict)
    variable_broadcast: Filter = "params"
    variable_carry: Filter = False
    split_rngs: Mapping[Filter, bool] = dataclasses.field(
        default_factory=lambda: {"params": False}
    )

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Any = None,
        init_key: Any = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Any:
        """Runs the cell; returns outputs (and the final carry if ``return_carry``)."""
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        n_feat = self.cell.num_feature_axes
        time_axis = 0 if time_major else inputs.ndim - (n_feat + 1)
        if initial_carry is None:
            if init_key is None:
                # Like Flax, draw from "params" (so init consumes the same keys); in
                # apply, where there may be no "params" stream, the default zero
                # carry does not need one.
                init_key = (
                    self.make_rng("params")
                    if self.has_rng("params")
                    else jax.random.key(0)
                )
            shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
            initial_carry = self.cell.initialize_carry(init_key, shape)
        length = inputs.shape[time_axis]
        mask = None
        if seq_lengths is not None:
            steps = jnp.arange(length)
            mask = jnp.moveaxis(
                steps[None] < jnp.asarray(seq_lengths)[..., None], -1, time_axis
            )

        def step(
            cell: RNNCellBase, carry: Any, x: Array, m: Array | None
        ) -> tuple[Any, Array]:
            new_carry, y = cell(carry, x)
            if m is not None:
                new_carry = jax.tree_util.tree_map(
                    lambda n, o: jnp.where(
                        m.reshape(m.shape + (1,) * (n.ndim - m.ndim)), n, o
                    ),
                    new_carry,
                    carry,
                )
            return new_carry, y

        scanned = scan(
            step,
            variable_axes=self.variable_axes,
            variable_broadcast=self.variable_broadcast,
            variable_carry=self.variable_carry,
            split_rngs=self.split_rngs,
            in_axes=(time_axis, time_axis if mask is not None else 0),
            out_axes=time_axis,
            reverse=reverse,
            unroll=self.unroll,
            length=length,
        )
        carry, outputs = scanned(self.cell, initial_carry, inputs, mask)
        if reverse and keep_order:
            outputs = jnp.flip(outputs, axis=time_axis)
        return (carry, outputs) if return_carry else outputs
