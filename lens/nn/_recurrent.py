"""Recurrent layers: cells (LSTM, optimized LSTM, GRU, MGU, simple, ConvLSTM), the
``RNN`` scan over time and ``Bidirectional``.

Cell parameter names (``ii``, ``hi``, ...; ``ir``, ``hr``, ...), carry layouts and
the draws of ``initialize_carry`` follow Flax Linen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import random

from lens._facades import show_at_flax_paths
from lens._kernels.dtypes import promote_dtype
from lens.core.nn import initializers
from lens.core.nn.initializers import default_kernel_init
from lens.nn._conv import Conv
from lens.nn._hyperparameters import SIZE, SIZES
from lens.nn._linear import Dense
from lens.nn._module import Module
from lens.nn._module_support import compact, nowrap
from lens.typing import Array, Dtype, Initializer, PrecisionLike, PRNGKey

A = TypeVar("A")

__all__ = [
    "ConvLSTMCell",
    "DenseParams",
    "GRUCell",
    "LSTMCell",
    "MGUCell",
    "OptimizedLSTMCell",
    "RNNCellBase",
    "SimpleCell",
]

sigmoid = jax.nn.sigmoid
tanh = jnp.tanh


Carry = Any
"""A cell's carry (a pytree of arrays)."""
CarryHistory = Any
"""The carries of every step."""
Output = Any
"""A cell's output at one step."""


class RNNCellBase(Module):
    """Base class of recurrent cells: ``__call__(carry, x) -> (carry, y)``."""

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple[int, ...]) -> Carry:
        """The initial carry for one time step's input shape (batch dims + features)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement initialize_carry.\n"
            "Define initialize_carry(self, rng, input_shape) on the cell."
        )

    @property
    def num_feature_axes(self) -> int:
        """How many trailing axes of a time step's input are features."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define num_feature_axes.\n"
            "Define it as a property on the cell (1 for vector inputs)."
        )


def _dense_pair(
    cell: Any, hidden: int, bias_on: str, bias_init: Initializer
) -> tuple[Callable[..., Dense], Callable[..., Dense]]:
    """``(dense_h, dense_i)``: Dense layers for a cell's hidden and input terms, with
    its initializers and dtypes. The two terms are summed, so only one has a bias:
    the ``bias_on`` side (``'h'`` or ``'i'``), initialised with ``bias_init``."""
    common = dict(features=hidden, dtype=cell.dtype, param_dtype=cell.param_dtype)
    dense_h = functools.partial(
        Dense,
        use_bias=bias_on == "h",
        kernel_init=cell.recurrent_kernel_init,
        bias_init=bias_init,
        **common,
    )
    dense_i = functools.partial(
        Dense,
        use_bias=bias_on == "i",
        kernel_init=cell.kernel_init,
        bias_init=bias_init,
        **common,
    )
    return dense_h, dense_i


def _two_carries(
    carry_init: Initializer, rng: PRNGKey, shape: tuple[int, ...], dtype: Any
) -> tuple[Array, Array]:
    key1, key2 = random.split(rng)
    return carry_init(key1, shape, dtype), carry_init(key2, shape, dtype)


class LSTMCell(RNNCellBase):
    r"""A long short-term memory (LSTM) cell; carry ``(c, h)``.

    .. math::
        i = \sigma(W_{ii} x + W_{hi} h + b_{hi}), \quad
        f = \sigma(W_{if} x + W_{hf} h + b_{hf}), \\
        g = \tanh(W_{ig} x + W_{hg} h + b_{hg}), \quad
        o = \sigma(W_{io} x + W_{ho} h + b_{ho}), \\
        c' = f c + i g, \quad h' = o \tanh(c')

    Example:
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (2, 3))
        >>> layer = LSTMCell(features=4)
        >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
        >>> variables = layer.init(jax.random.key(2), carry, x)
        >>> sorted(variables["params"])
        ['hf', 'hg', 'hi', 'ho', 'if', 'ig', 'ii', 'io']

    Attributes:
      features: number of output features.
      gate_fn: activation of the gates (sigmoid).
      activation_fn: activation of the output and cell update (tanh).
      kernel_init: initializer of the input kernels ``i*``.
      recurrent_kernel_init: initializer of the hidden kernels ``h*`` (orthogonal).
      bias_init: initializer of the biases (of ``h*``; ``i*`` have none).
      dtype: the computation dtype (default: inferred).
      param_dtype: the dtype of the parameters.
      carry_init: initializer of ``c`` and ``h``.
    """

    _hyperparameters = {"features": SIZE}

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(
        self, carry: tuple[Array, Array], inputs: Array
    ) -> tuple[tuple[Array, Array], Array]:
        """One step: returns ``((c', h'), h')``."""
        c, h = carry
        hidden = h.shape[-1]
        # The input and hidden terms are summed, so only one needs a bias.
        dense_h, dense_i = _dense_pair(self, hidden, "h", self.bias_init)
        i = self.gate_fn(dense_i(name="ii")(inputs) + dense_h(name="hi")(h))
        f = self.gate_fn(dense_i(name="if")(inputs) + dense_h(name="hf")(h))
        g = self.activation_fn(dense_i(name="ig")(inputs) + dense_h(name="hg")(h))
        o = self.gate_fn(dense_i(name="io")(inputs) + dense_h(name="ho")(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(
        self, rng: PRNGKey, input_shape: tuple[int, ...]
    ) -> tuple[Array, Array]:
        """``(c, h)`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        shape = tuple(input_shape[:-1]) + (self.features,)
        return _two_carries(self.carry_init, rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return 1


class DenseParams(Module):
    """Creates the parameters of a ``Dense`` (``kernel``, ``bias``) and returns them."""

    features: int
    use_bias: bool = True
    param_dtype: Dtype = jnp.float32
    precision: PrecisionLike = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(self, inputs: Array) -> tuple[Array, Array | None]:
        """``(kernel, bias)`` for inputs like ``inputs`` (bias None without use_bias)."""
        k = self.param(
            "kernel",
            self.kernel_init,
            (inputs.shape[-1], self.features),
            self.param_dtype,
        )
        b = (
            self.param("bias", self.bias_init, (self.features,), self.param_dtype)
            if self.use_bias
            else None
        )
        return k, b


class OptimizedLSTMCell(RNNCellBase):
    """An :class:`LSTMCell` that computes its four gates with one matmul per input.

    Same parameters (names, shapes, values) as :class:`LSTMCell`, so the two are
    interchangeable on the same variables.
    """

    _hyperparameters = {"features": SIZE}

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(
        self, carry: tuple[Array, Array], inputs: Array
    ) -> tuple[tuple[Array, Array], Array]:
        """One step: returns ``((c', h'), h')``."""
        c, h = carry
        hidden = h.shape[-1]

        def concat_dense(
            x: Array, params: Mapping[str, tuple[Array, Array | None]], use_bias: bool
        ) -> dict[str, Array]:
            kernels = [k for k, _ in params.values()]
            kernel = jnp.concatenate(kernels, axis=-1)
            bias = None
            if use_bias:
                biases = [b for _, b in params.values()]
                if any(b is None for b in biases):
                    raise ValueError("bias is None but use_bias is True.")
                bias = jnp.concatenate([b for b in biases if b is not None], axis=-1)
            x, kernel, bias = promote_dtype(x, kernel, bias, dtype=self.dtype)
            y = jnp.dot(x, kernel)
            if bias is not None:
                y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
            splits = np.cumsum([k.shape[-1] for k in kernels[:-1]])
            return dict(zip(params.keys(), jnp.split(y, splits, axis=-1)))

        params_i: dict[str, Any] = {}
        params_h: dict[str, Any] = {}
        for gate in ("i", "f", "g", "o"):
            params_i[gate] = DenseParams(
                features=hidden,
                use_bias=False,
                param_dtype=self.param_dtype,
                kernel_init=self.kernel_init,
                bias_init=self.bias_init,
                name=f"i{gate}",
            )(inputs)
            params_h[gate] = DenseParams(
                features=hidden,
                use_bias=True,
                param_dtype=self.param_dtype,
                kernel_init=self.recurrent_kernel_init,
                bias_init=self.bias_init,
                name=f"h{gate}",
            )(h)
        dh = concat_dense(h, params_h, use_bias=True)
        di = concat_dense(inputs, params_i, use_bias=False)
        i = self.gate_fn(dh["i"] + di["i"])
        f = self.gate_fn(dh["f"] + di["f"])
        g = self.activation_fn(dh["g"] + di["g"])
        o = self.gate_fn(dh["o"] + di["o"])
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(
        self, rng: PRNGKey, input_shape: tuple[int, ...]
    ) -> tuple[Array, Array]:
        """``(c, h)`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        shape = tuple(input_shape[:-1]) + (self.features,)
        return _two_carries(self.carry_init, rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return 1


class SimpleCell(RNNCellBase):
    r"""The simple (Elman) cell: ``h' = activation(W_i x + b + W_h h [+ h])``.

    Params ``i`` (kernel and bias) and ``h`` (kernel); ``residual=True`` adds
    ``h`` before the activation.
    """

    _hyperparameters = {"features": SIZE}

    features: int
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()
    residual: bool = False

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple[Array, Array]:
        """One step: returns ``(h', h')``."""
        hidden = carry.shape[-1]
        dense_h, dense_i = _dense_pair(self, hidden, "i", self.bias_init)
        new_carry = dense_i(name="i")(inputs) + dense_h(name="h")(carry)
        if self.residual:
            new_carry += carry
        new_carry = self.activation_fn(new_carry)
        return new_carry, new_carry

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple[int, ...]) -> Array:
        """``h`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        shape = tuple(input_shape[:-1]) + (self.features,)
        return self.carry_init(rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return 1


class GRUCell(RNNCellBase):
    r"""A gated recurrent unit (GRU) cell; carry ``h``.

    .. math::
        r = \sigma(W_{ir} x + b_{ir} + W_{hr} h), \quad
        z = \sigma(W_{iz} x + b_{iz} + W_{hz} h), \\
        n = \tanh(W_{in} x + b_{in} + r (W_{hn} h + b_{hn})), \quad
        h' = (1 - z) n + z h

    Attributes: as :class:`LSTMCell`.
    """

    _hyperparameters = {"features": SIZE}

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple[Array, Array]:
        """One step: returns ``(h', h')``."""
        h = carry
        hidden = h.shape[-1]
        dense_h, dense_i = _dense_pair(self, hidden, "i", self.bias_init)
        r = self.gate_fn(dense_i(name="ir")(inputs) + dense_h(name="hr")(h))
        z = self.gate_fn(dense_i(name="iz")(inputs) + dense_h(name="hz")(h))
        # Add the bias after the hidden transform and before the reset gate.
        n = self.activation_fn(
            dense_i(name="in")(inputs) + r * dense_h(name="hn", use_bias=True)(h)
        )
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple[int, ...]) -> Array:
        """``h`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        shape = tuple(input_shape[:-1]) + (self.features,)
        return self.carry_init(rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return 1


class MGUCell(RNNCellBase):
    r"""A minimal gated unit (MGU) cell (https://arxiv.org/abs/1603.09420).

    .. math::
        f = \sigma(W_{if} x + b_{if} + W_{hf} h), \\
        n = \tanh(W_{in} x + b_{in} + f (W_{hn} h + b_{hn})), \quad
        h' = (1 - f) n + f h

    ``reset_gate=False`` drops the ``f *`` (and ``hn``'s bias).

    Attributes:
      forget_bias_init: initializer of ``if``'s bias (ones).
      activation_bias_init: initializer of ``in`` and ``hn``'s biases (zeros).
      other attributes: as :class:`LSTMCell`.
    """

    _hyperparameters = {"features": SIZE}

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    forget_bias_init: Initializer = initializers.ones_init()
    activation_bias_init: Initializer = initializers.zeros_init()
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()
    reset_gate: bool = True

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple[Array, Array]:
        """One step: returns ``(h', h')``."""
        h = carry
        hidden = h.shape[-1]
        dense_h, dense_i = _dense_pair(self, hidden, "i", self.activation_bias_init)
        f = self.gate_fn(
            dense_i(name="if", bias_init=self.forget_bias_init)(inputs)
            + dense_h(name="hf")(h)
        )
        x = dense_h(name="hn", use_bias=self.reset_gate)(h)
        if self.reset_gate:
            x *= f
        n = self.activation_fn(
            dense_i(name="in", bias_init=self.activation_bias_init)(inputs) + x
        )
        new_h = (1.0 - f) * n + f * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple[int, ...]) -> Array:
        """``h`` from ``carry_init``, shaped ``batch dims + (features,)``."""
        shape = tuple(input_shape[:-1]) + (self.features,)
        return self.carry_init(rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return 1


class ConvLSTMCell(RNNCellBase):
    r"""A convolutional LSTM cell (Shi et al. 2015); carry ``(c, h)``.

    The gates come from convolutions ``ih`` (of the input) and ``hh`` (of ``h``),
    each with ``4 * features`` filters split into ``i, g, f, o``; 1 is added to
    the forget gate's pre-activation.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (3, 5, 5))
        >>> layer = ConvLSTMCell(features=4, kernel_size=(2, 2))
        >>> carry = layer.initialize_carry(jax.random.key(1), x.shape)
        >>> variables = layer.init(jax.random.key(2), carry, x)
        >>> new_carry, out = layer.apply(variables, carry, x)
        >>> out.shape
        (3, 5, 4)

    Attributes:
      features: number of convolution filters.
      kernel_size, strides, padding, use_bias: as in :class:`Conv`.
      dtype, param_dtype, carry_init: as in :class:`LSTMCell`.
    """

    _hyperparameters = {"features": SIZE, "kernel_size": SIZES, "strides": SIZES}

    features: int
    kernel_size: Sequence[int]
    strides: Sequence[int] | None = None
    padding: str | Sequence[tuple[int, int]] = "SAME"
    use_bias: bool = True
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros_init()

    @compact
    def __call__(
        self, carry: tuple[Array, Array], inputs: Array
    ) -> tuple[tuple[Array, Array], Array]:
        """One step: returns ``((c', h'), h')``."""
        c, h = carry
        conv = functools.partial(
            Conv,
            features=4 * self.features,
            kernel_size=self.kernel_size,
            strides=self.strides,
            padding=self.padding,
            use_bias=self.use_bias,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        gates = conv(name="ih")(inputs) + conv(name="hh")(h)
        i, g, f, o = jnp.split(gates, indices_or_sections=4, axis=-1)
        f = sigmoid(f + 1)
        new_c = f * c + sigmoid(i) * jnp.tanh(g)
        new_h = sigmoid(o) * jnp.tanh(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(
        self, rng: PRNGKey, input_shape: tuple[int, ...]
    ) -> tuple[Array, Array]:
        """``(c, h)`` shaped ``batch dims + spatial dims + (features,)``."""
        signal_dims = tuple(input_shape[-self.num_feature_axes : -1])
        batch_dims = tuple(input_shape[: -self.num_feature_axes])
        shape = batch_dims + signal_dims + (self.features,)
        return _two_carries(self.carry_init, rng, shape, self.param_dtype)

    @property
    def num_feature_axes(self) -> int:
        return len(self.kernel_size) + 1


show_at_flax_paths(__name__)
