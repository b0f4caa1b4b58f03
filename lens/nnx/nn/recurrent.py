"""Eager recurrent cells and the RNN that runs them over time.

Cells keep flax.nnx's sub-layers, names and key order (``LSTMCell`` has
``ii/if_/ig/io`` input kernels and ``hi/hf/hg/ho`` recurrent ones; the fused cells
have ``dense_i``/``dense_h``), so the same ``Rngs`` gives the same parameters.
``RNN`` scans a cell over the time axis with ``nnx.scan``: the cell's state is
carried through the steps (``state_axes``), and the ``broadcast_rngs`` streams give
every step of a call the same key (recurrent dropout), as in flax.nnx (lens scans
a key repeated per step where flax broadcasts one: lens's scan carries a
broadcast stream's draws from step to step).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens._kernels import sequences as seq
from lens._kernels.sequences import flip_sequences as flip_sequences
from lens.core.nn import initializers
from lens.nnx._objects.module import Module
from lens.nnx._objects.object import data
from lens.nnx._objects.rngs import Rngs, RngStream
from lens.nnx._transforms.scan_step import Carry
from lens.nnx._transforms.specs import StateAxes
from lens.nnx.nn._parameters import NO_META
from lens.nnx.nn._recurrent_scan import Output as Output
from lens.nnx.nn._recurrent_scan import RNNBase, broadcast_keys, scan_cell
from lens.nnx.nn.dtypes import promote_dtype
from lens.nnx.nn.linear import Linear

Array = Any

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros_init()
_lecun = default_kernel_init
_orth = initializers.orthogonal()
_zeros = default_bias_init
# Flax's private helpers, which projects import from flax.nnx.nn.recurrent
_select_last_carry = seq.select_last_carry
_expand_dims_like = seq.expand_dims_like
_concatenate = seq.concatenate


def modified_orthogonal(key: Array, shape: Any, dtype: Any = jnp.float32) -> Array:
    """Orthogonal init (the default recurrent kernel init of ``LSTMCell``),
    computed in float32 and cast to ``dtype``: the QR factorization it needs has
    no half-precision (float16, bfloat16) kernel, and flax draws it so too."""
    return _orth(key, shape).astype(dtype)


class RNNCellBase(Module):
    """A recurrent cell: ``cell(carry, x) -> (carry, y)``, with
    ``initialize_carry(input_shape)`` giving the initial carry."""

    num_feature_axes = 1
    in_features: int
    hidden_features: int
    param_dtype: Any
    carry_init: Callable[..., Array] | None
    gate_fn: Callable[..., Any]
    activation_fn: Callable[..., Any]
    dense_i: Linear  # the fused cells (OptimizedLSTMCell, GRUCell, SimpleCell)
    dense_h: Linear

    def initialize_carry(
        self, input_shape: tuple[int, ...], rngs: Any = None, carry_init: Any = None
    ) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.initialize_carry")
        self._set_carry_init(carry_init)

    def __call__(self, carry: Any, inputs: Array) -> tuple[Any, Any]:
        raise NotImplementedError(f"{type(self).__name__}.__call__")

    def _attributes(
        self,
        in_features: int,
        hidden_features: int,
        *,
        rngs: Rngs,
        keep_rngs: bool,
        **attrs: Any,
    ) -> None:
        self.in_features = in_features
        self.hidden_features = hidden_features
        for k, v in attrs.items():
            setattr(self, k, v)
        # As flax.nnx's cells (before their Linears, so the same keys follow):
        # keep_rngs stores a fork of the carry stream for initialize_carry.
        self.rngs: RngStream | None
        if keep_rngs:
            warnings.warn(
                "keep_rngs argument is deprecated. Please use rngs argument in "
                "__call__ instead ",
                stacklevel=3,
            )
            self.rngs = rngs.carry.fork()
        else:
            self.rngs = data(None)

    def _set_carry_init(self, carry_init: Any) -> None:
        """The last attribute, after the cell's Linears (as flax.nnx's)."""
        if carry_init:
            warnings.warn(
                "carry_init is provided in __init__. Please, use carry_init argument "
                "in `initialize_carry` method instead to initialize the carry. "
                "Otherwise, two instances with same configuration but different "
                "carry_init functions will have different graphdefs.",
                stacklevel=3,
            )
        self.carry_init = carry_init

    def _fused(
        self,
        n: int,
        bias_on_input: bool,
        kernel_init: Callable[..., Array],
        recurrent_kernel_init: Callable[..., Array],
        common: dict[str, Any],
        rngs: Rngs,
        recurrent_first: bool = False,
        meta_i: dict[str, Any] | None = None,
        meta_h: dict[str, Any] | None = None,
    ) -> None:
        """``dense_i`` (inputs -> n) and ``dense_h`` (hidden -> n), one with a
        bias, created in flax.nnx's order (which decides their keys)."""

        def make_i() -> None:
            self.dense_i = Linear(
                self.in_features,
                n,
                use_bias=bias_on_input,
                kernel_init=kernel_init,
                rngs=rngs,
                **common,
                **(meta_i or {}),
            )

        def make_h() -> None:
            self.dense_h = Linear(
                self.hidden_features,
                n,
                use_bias=not bias_on_input,
                kernel_init=recurrent_kernel_init,
                rngs=rngs,
                **common,
                **(meta_h or {}),
            )

        for make in (make_h, make_i) if recurrent_first else (make_i, make_h):
            make()

    def _zeros_carry(self, input_shape: tuple[int, ...], rngs: Any, carry_init: Any):
        init = carry_init or self.carry_init or _zeros
        shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        if rngs is None:
            rngs = vars(self).get("rngs")  # keep_rngs's stream
        if isinstance(rngs, Rngs):
            rngs = rngs.carry
        if rngs is None:
            raise ValueError(
                "RNGs must be provided to initialize the cell carry.\n"
                f"{type(self).__name__}.initialize_carry: pass rngs= (an nnx.Rngs "
                "or a stream), e.g. cell.initialize_carry(shape, rngs=nnx.Rngs(0)); "
                "nnx.RNN passes its own."
            )
        return init(rngs(), shape, self.param_dtype)


def _metadata(
    kernel: Mapping[str, Any],
    recurrent_kernel: Mapping[str, Any],
    bias: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The metadata keywords of a cell's input-side and hidden-side Linears."""
    return (
        {"kernel_metadata": kernel, "bias_metadata": bias},
        {"kernel_metadata": recurrent_kernel, "bias_metadata": bias},
    )


def _linears(
    names: tuple[str, ...],
    n_in: int,
    n_out: int,
    use_bias: bool,
    init: Callable[..., Array],
    common: dict[str, Any],
    rngs: Rngs,
    meta: dict[str, Any],
) -> dict[str, Linear]:
    return {
        n: Linear(
            n_in,
            n_out,
            use_bias=use_bias,
            kernel_init=init,
            rngs=rngs,
            **common,
            **meta,
        )
        for n in names
    }


class LSTMCell(RNNCellBase):
    """Long short-term memory cell; carry ``(c, h)``."""

    # one Linear per gate: input (i*) and hidden (h*) sides
    ii: Linear
    if_: Linear
    ig: Linear
    io: Linear
    hi: Linear
    hf: Linear
    hg: Linear
    ho: Linear

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: Callable[..., Any] = jax.nn.sigmoid,
        activation_fn: Callable[..., Any] = jnp.tanh,
        kernel_init: Callable[..., Array] = _lecun,
        recurrent_kernel_init: Callable[..., Array] = modified_orthogonal,
        bias_init: Callable[..., Array] = _zeros,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        carry_init: Callable[..., Array] | None = None,
        promote_dtype: Callable[..., Any] = promote_dtype,
        keep_rngs: bool = False,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = NO_META,
        recurrent_kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        meta_i, meta_h = _metadata(
            kernel_metadata, recurrent_kernel_metadata, bias_metadata
        )
        self._attributes(
            in_features,
            hidden_features,
            rngs=rngs,
            keep_rngs=keep_rngs,
            gate_fn=gate_fn,
            activation_fn=activation_fn,
            dtype=dtype,
            param_dtype=param_dtype,
            promote_dtype=promote_dtype,
        )
        common = {
            "dtype": dtype,
            "param_dtype": param_dtype,
            "bias_init": bias_init,
            "promote_dtype": promote_dtype,
        }
        for n, lin in _linears(
            ("ii", "if_", "ig", "io"),
            in_features,
            hidden_features,
            False,
            kernel_init,
            common,
            rngs,
            meta_i,
        ).items():
            setattr(self, n, lin)
        for n, lin in _linears(
            ("hi", "hf", "hg", "ho"),
            hidden_features,
            hidden_features,
            True,
            recurrent_kernel_init,
            common,
            rngs,
            meta_h,
        ).items():
            setattr(self, n, lin)
        self._set_carry_init(carry_init)

    def __call__(self, carry: tuple[Array, Array], inputs: Array) -> Any:
        c, h = carry
        i = self.gate_fn(self.ii(inputs) + self.hi(h))
        f = self.gate_fn(self.if_(inputs) + self.hf(h))
        g = self.activation_fn(self.ig(inputs) + self.hg(h))
        o = self.gate_fn(self.io(inputs) + self.ho(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    def initialize_carry(
        self, input_shape: tuple[int, ...], rngs: Any = None, carry_init: Any = None
    ) -> tuple[Array, Array]:
        c = self._zeros_carry(input_shape, rngs, carry_init)
        h = self._zeros_carry(input_shape, rngs, carry_init)
        return c, h


class OptimizedLSTMCell(LSTMCell):
    """An LSTM cell computing its four gates with two fused matmuls
    (``dense_i``, ``dense_h``); same results as :class:`LSTMCell`'s formula."""

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: Callable[..., Any] = jax.nn.sigmoid,
        activation_fn: Callable[..., Any] = jnp.tanh,
        kernel_init: Callable[..., Array] = _lecun,
        recurrent_kernel_init: Callable[..., Array] = _orth,
        bias_init: Callable[..., Array] = _zeros,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        carry_init: Callable[..., Array] | None = None,
        promote_dtype: Callable[..., Any] = promote_dtype,
        keep_rngs: bool = False,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = NO_META,
        recurrent_kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        meta_i, meta_h = _metadata(
            kernel_metadata, recurrent_kernel_metadata, bias_metadata
        )
        self._attributes(
            in_features,
            hidden_features,
            rngs=rngs,
            keep_rngs=keep_rngs,
            gate_fn=gate_fn,
            activation_fn=activation_fn,
            dtype=dtype,
            param_dtype=param_dtype,
            promote_dtype=promote_dtype,
        )
        common = {
            "dtype": dtype,
            "param_dtype": param_dtype,
            "bias_init": bias_init,
            "promote_dtype": promote_dtype,
        }
        self._fused(
            4 * hidden_features,
            False,
            kernel_init,
            recurrent_kernel_init,
            common,
            rngs,
            meta_i=meta_i,
            meta_h=meta_h,
        )
        self._set_carry_init(carry_init)

    def __call__(self, carry: tuple[Array, Array], inputs: Array) -> Any:
        c, h = carry
        i, f, g, o = jnp.split(self.dense_i(inputs) + self.dense_h(h), 4, axis=-1)
        i, f, o = self.gate_fn(i), self.gate_fn(f), self.gate_fn(o)
        new_c = f * c + i * self.activation_fn(g)
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class GRUCell(RNNCellBase):
    """Gated recurrent unit; carry ``h``."""

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        gate_fn: Callable[..., Any] = jax.nn.sigmoid,
        activation_fn: Callable[..., Any] = jnp.tanh,
        kernel_init: Callable[..., Array] = _lecun,
        recurrent_kernel_init: Callable[..., Array] = _orth,
        bias_init: Callable[..., Array] = _zeros,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        carry_init: Callable[..., Array] | None = None,
        promote_dtype: Callable[..., Any] = promote_dtype,
        keep_rngs: bool = False,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = NO_META,
        recurrent_kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        meta_i, meta_h = _metadata(
            kernel_metadata, recurrent_kernel_metadata, bias_metadata
        )
        self._attributes(
            in_features,
            hidden_features,
            rngs=rngs,
            keep_rngs=keep_rngs,
            gate_fn=gate_fn,
            activation_fn=activation_fn,
            dtype=dtype,
            param_dtype=param_dtype,
            promote_dtype=promote_dtype,
        )
        common = {
            "dtype": dtype,
            "param_dtype": param_dtype,
            "bias_init": bias_init,
            "promote_dtype": promote_dtype,
        }
        self._fused(
            3 * hidden_features,
            True,
            kernel_init,
            recurrent_kernel_init,
            common,
            rngs,
            meta_i=meta_i,
            meta_h=meta_h,
        )
        self._set_carry_init(carry_init)

    def __call__(self, carry: Array, inputs: Array) -> Any:
        h = carry
        xr, xz, xn = jnp.split(self.dense_i(inputs), 3, axis=-1)
        hr, hz, hn = jnp.split(self.dense_h(h), 3, axis=-1)
        r = self.gate_fn(xr + hr)
        z = self.gate_fn(xz + hz)
        n = self.activation_fn(xn + r * hn)
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    def initialize_carry(
        self, input_shape: tuple[int, ...], rngs: Any = None, carry_init: Any = None
    ) -> Array:
        return self._zeros_carry(input_shape, rngs, carry_init)


class SimpleCell(RNNCellBase):
    """Elman cell: ``h' = activation(dense_i(x) + dense_h(h))`` (``+ h`` with
    ``residual``); carry ``h``."""

    residual: bool

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        *,
        dtype: Any = jnp.float32,
        param_dtype: Any = jnp.float32,
        carry_init: Callable[..., Array] | None = None,
        residual: bool = False,
        activation_fn: Callable[..., Any] = jnp.tanh,
        kernel_init: Callable[..., Array] = _lecun,
        recurrent_kernel_init: Callable[..., Array] = _orth,
        bias_init: Callable[..., Array] = _zeros,
        promote_dtype: Callable[..., Any] = promote_dtype,
        keep_rngs: bool = False,
        rngs: Rngs,
        kernel_metadata: Mapping[str, Any] = NO_META,
        recurrent_kernel_metadata: Mapping[str, Any] = NO_META,
        bias_metadata: Mapping[str, Any] = NO_META,
    ):
        meta_i, meta_h = _metadata(
            kernel_metadata, recurrent_kernel_metadata, bias_metadata
        )
        self._attributes(
            in_features,
            hidden_features,
            rngs=rngs,
            keep_rngs=keep_rngs,
            dtype=dtype,
            param_dtype=param_dtype,
            residual=residual,
            activation_fn=activation_fn,
            promote_dtype=promote_dtype,
        )
        common = {
            "dtype": dtype,
            "param_dtype": param_dtype,
            "bias_init": bias_init,
            "promote_dtype": promote_dtype,
        }
        self._fused(
            hidden_features,
            True,
            kernel_init,
            recurrent_kernel_init,
            common,
            rngs,
            recurrent_first=True,
            meta_i=meta_i,
            meta_h=meta_h,
        )
        self._set_carry_init(carry_init)

    def __call__(self, carry: Array, inputs: Array) -> Any:
        new_h = self.activation_fn(self.dense_i(inputs) + self.dense_h(carry))
        if self.residual:
            new_h = new_h + carry
        return new_h, new_h

    def initialize_carry(
        self, input_shape: tuple[int, ...], rngs: Any = None, carry_init: Any = None
    ) -> Array:
        return self._zeros_carry(input_shape, rngs, carry_init)


class RNN(Module):
    """Runs ``cell`` over the time axis of ``(*batch, time, features)`` inputs
    (``time_major``: ``(time, *batch, features)``)."""

    def __init__(
        self,
        cell: RNNCellBase,
        *,
        time_major: bool = False,
        return_carry: bool = False,
        reverse: bool = False,
        keep_order: bool = False,
        unroll: int = 1,
        state_axes: Any = None,
        broadcast_rngs: Any = None,
        rngs: Any = True,
    ):
        self.cell = cell
        self.time_major = time_major
        self.return_carry = return_carry
        self.reverse = reverse
        self.keep_order = keep_order
        self.unroll = unroll
        # the stream initialize_carry may draw from (flax.nnx's default: key 0)
        self.rngs: RngStream | None
        if rngs is True:
            self.rngs = RngStream(0, tag="carry")
        elif isinstance(rngs, Rngs):
            self.rngs = rngs["carry"].fork()
        elif isinstance(rngs, RngStream):  # (lens: a stream, forked)
            self.rngs = rngs.fork()
        elif rngs is False:
            self.rngs = data(None)
        else:
            raise ValueError(
                "Expected rngs to be a jax.Array, int, Rngs, or bool. "
                f"Got {type(rngs)}.\nnnx.RNN(rngs=...): pass an nnx.Rngs (its carry "
                "stream is forked), True (a stream of key 0) or False (none)."
            )
        # how scan lifts the cell's state: carried through the steps by default;
        # the broadcast_rngs streams give every step the same key (one per call)
        self.state_axes = state_axes or StateAxes({...: Carry})
        self.broadcast_rngs = broadcast_rngs

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: Any = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
        rngs: Any = None,
    ) -> Any:
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        n_feat = self.cell.num_feature_axes
        time_axis = 0 if time_major else inputs.ndim - (n_feat + 1)
        n_batch = inputs.ndim - n_feat - 1

        def flip(x: Array) -> Array:
            return seq.flip_sequences(x, seq_lengths, n_batch, time_major)

        if reverse:
            inputs = flip(inputs)
        if initial_carry is None:
            shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
            initial_carry = self.cell.initialize_carry(shape, rngs or self.rngs)
        xs = jnp.moveaxis(inputs, time_axis, 0)
        steps = jnp.arange(xs.shape[0])
        lengths = None if seq_lengths is None else jnp.asarray(seq_lengths)
        scanned = scan_cell(self.state_axes, self.broadcast_rngs, self.unroll, lengths)
        with broadcast_keys(self.cell, self.broadcast_rngs, xs.shape[0]):
            if lengths is None:
                carry, ys = scanned(self.cell, initial_carry, (xs, steps))
            else:  # (running, last step's): see scan_cell
                (_, carry), ys = scanned(
                    self.cell, (initial_carry, initial_carry), (xs, steps)
                )
        outputs = jnp.moveaxis(ys, 0, time_axis)
        if reverse and keep_order:
            outputs = flip(outputs)
        return (carry, outputs) if return_carry else outputs


class Bidirectional(Module):
    """Runs ``forward_rnn`` over the sequence and ``backward_rnn`` (each an
    :class:`RNNBase`, e.g. an :class:`RNN`) over it reversed, and merges their outputs (``merge_fn``: concatenated by default)."""

    def __init__(
        self,
        forward_rnn: RNNBase,
        backward_rnn: RNNBase,
        *,
        merge_fn: Callable[[Array, Array], Array] = seq.concatenate,
        time_major: bool = False,
        return_carry: bool = False,
        rngs: Rngs | RngStream | bool = True,
    ):
        self.forward_rnn = forward_rnn
        self.backward_rnn = backward_rnn
        self.merge_fn = merge_fn
        self.time_major = time_major
        self.return_carry = return_carry
        if rngs is True:
            self.rngs: RngStream | None = RngStream(0, tag="carry")
        elif rngs is False:
            self.rngs = None
        elif isinstance(rngs, Rngs):
            self.rngs = rngs["carry"].fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs
        else:
            raise TypeError(
                f"rngs must be a Rngs, jax.Array, int, or bool, but got {type(rngs)}."
            )

    def __call__(
        self,
        inputs: Array,
        *,
        initial_carry: tuple[Any, Any] | None = None,
        rngs: Rngs | RngStream | None = None,
        seq_lengths: Array | None = None,
        return_carry: bool | None = None,
        time_major: bool | None = None,
        reverse: bool | None = None,
        keep_order: bool | None = None,
    ) -> Any:
        time_major = self.time_major if time_major is None else time_major
        return_carry = self.return_carry if return_carry is None else return_carry
        stream = self.rngs if rngs is None else rngs
        if isinstance(stream, Rngs):
            stream = stream["carry"]
        common = dict(rngs=stream, seq_lengths=seq_lengths, time_major=time_major)
        return seq.both_directions(
            self.forward_rnn,
            self.backward_rnn,
            self.merge_fn,
            inputs,
            initial_carry,
            return_carry,
            common,
            common,
        )
