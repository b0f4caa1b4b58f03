"""Smaller flax.nnx layers: PReLU, InstanceNorm, LoRA and LoRALinear, with
flax.nnx's constructors, variable names and initial values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens._kernels import norm
from lens.core.nn import initializers
from lens.nnx._graph import Param
from lens.nnx._layers import (
    _NO_META,
    Linear,
    _axes,
    _optional_param,
    promote_dtype,
)
from lens.nnx._module import Module
from lens.nnx._rngs import Rngs

Array = Any


def identity(x: Array) -> Array:
    """Returns ``x`` (an activation that does nothing)."""
    return x


class PReLU(Module):
    """Parametric ReLU: ``x`` where ``x >= 0``, else ``negative_slope * x`` with a
    learned scalar ``negative_slope``."""

    def __init__(
        self,
        negative_slope_init: float = 0.01,
        *,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        promote_dtype: Callable[..., Any] = promote_dtype,
        negative_slope_metadata: Mapping[str, Any] = _NO_META,
    ):
        self.negative_slope = Param(
            jnp.asarray(negative_slope_init, dtype=param_dtype),
            **dict(negative_slope_metadata),
        )
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Array) -> Array:
        slope = self.negative_slope.value
        if self.dtype is not None:
            inputs, slope = self.promote_dtype((inputs, slope), dtype=self.dtype)
        else:  # as Linen: the parameter takes the input's dtype
            slope = jnp.asarray(slope, inputs.dtype)
        return jnp.where(inputs >= 0, inputs, slope * inputs)


class InstanceNorm(Module):
    """Instance normalisation: each example and feature normalised over the
    remaining (spatial) axes; ``scale``/``bias`` of shape ``(num_features,)``."""

    def __init__(
        self,
        num_features: int,
        *,
        epsilon: float = 1e-6,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        use_bias: bool = True,
        use_scale: bool = True,
        bias_init: Callable[..., Array] = initializers.zeros,
        scale_init: Callable[..., Array] = initializers.ones,
        feature_axes: int | Sequence[int] = -1,
        axis_name: str | None = None,
        axis_index_groups: Any = None,
        use_fast_variance: bool = True,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        bias_metadata: Mapping[str, Any] = _NO_META,
        scale_metadata: Mapping[str, Any] = _NO_META,
    ):
        shape = (num_features,)
        self.scale = _optional_param(
            use_scale, scale_init, rngs, shape, param_dtype, scale_metadata
        )
        self.bias = _optional_param(
            use_bias, bias_init, rngs, shape, param_dtype, bias_metadata
        )
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Array, *, mask: Array | None = None) -> Array:
        feature_axes = _axes(x.ndim, self.feature_axes)
        if 0 in feature_axes:
            raise ValueError(
                "The channel axes cannot include the leading dimension as this is "
                "assumed to be the batch axis.\nGive feature_axes=-1 (channels last)."
            )
        reduction = tuple(i for i in range(1, x.ndim) if i not in feature_axes)
        scale = self.scale.value if self.scale is not None else None
        bias = self.bias.value if self.bias is not None else None
        if self.promote_dtype is not promote_dtype:
            x, scale, bias = self.promote_dtype((x, scale, bias), dtype=self.dtype)
        return norm.call_layer_norm(
            x,
            scale,
            bias,
            mask,
            reduction,
            feature_axes,
            True,
            self.epsilon,
            self.dtype,
            self.use_fast_variance,
            norm.stats_dtype(x, self.dtype, True),
            None,
            self.axis_name,
            self.axis_index_groups,
        )


class LoRAParam(Param):
    """A low-rank adapter's parameter (a Param, so optimizers see it; filter on
    ``nnx.LoRAParam`` to train only the adapters)."""


_default_a_init = initializers.he_uniform()


class LoRA(Module):
    """A low-rank adapter: ``x @ lora_a @ lora_b`` (plus ``base_module(x)``)."""

    def __init__(
        self,
        in_features: int,
        lora_rank: int,
        out_features: int,
        *,
        base_module: Module | None = None,
        dtype: Any = None,
        param_dtype: Any = jnp.float32,
        a_initializer: Callable[..., Array] = _default_a_init,
        b_initializer: Callable[..., Array] = initializers.zeros,
        lora_param_type: type = LoRAParam,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        a_metadata: Mapping[str, Any] = _NO_META,
        b_metadata: Mapping[str, Any] = _NO_META,
    ):
        self.in_features = in_features
        self.out_features = out_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.lora_param_type = lora_param_type
        self.base_module = base_module
        self.promote_dtype = promote_dtype
        self.lora_a = lora_param_type(
            a_initializer(rngs.params(), (in_features, lora_rank), param_dtype),
            **dict(a_metadata),
        )
        self.lora_b = lora_param_type(
            b_initializer(rngs.params(), (lora_rank, out_features), param_dtype),
            **dict(b_metadata),
        )

    def __call__(self, x: jax.Array, **kwargs: Any) -> Array:
        x, a, b = self.promote_dtype(
            (x, self.lora_a.value, self.lora_b.value), dtype=self.dtype
        )
        out = x @ a @ b
        if self.base_module is not None:
            if not callable(self.base_module):
                raise ValueError("`self.base_module` must be callable.")
            out += self.base_module(x, **kwargs)
        return out


class LoRALinear(Linear):
    """A Linear layer with a LoRA adapter (``lora``) added to its output."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        lora_rank: int,
        lora_dtype: Any = None,
        lora_param_dtype: Any = jnp.float32,
        a_initializer: Callable[..., Array] = _default_a_init,
        b_initializer: Callable[..., Array] = initializers.zeros,
        lora_param_type: type = LoRAParam,
        lora_promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        a_metadata: Mapping[str, Any] = _NO_META,
        b_metadata: Mapping[str, Any] = _NO_META,
        **kwargs: Any,
    ):
        super().__init__(in_features, out_features, rngs=rngs, **kwargs)
        self.lora = LoRA(
            in_features,
            lora_rank,
            out_features,
            dtype=lora_dtype,
            param_dtype=lora_param_dtype,
            a_initializer=a_initializer,
            b_initializer=b_initializer,
            lora_param_type=lora_param_type,
            promote_dtype=lora_promote_dtype,
            rngs=rngs,
            a_metadata=a_metadata,
            b_metadata=b_metadata,
        )

    def __call__(self, x: jax.Array, out_sharding: Any = None) -> Array:
        return super().__call__(x, out_sharding=out_sharding) + self.lora(x)


__all__ = ["InstanceNorm", "LoRA", "LoRALinear", "LoRAParam", "PReLU", "identity"]
