"""Low-rank adaptation (flax.nnx's ``nn.lora``): ``LoRA``, ``LoRALinear`` and
``LoRAParam``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

from lens.core.nn import initializers
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables.variable import Param
from lens.nnx.nn._parameters import NO_META
from lens.nnx.nn.dtypes import promote_dtype
from lens.nnx.nn.linear import Linear

Array = Any


A = TypeVar("A")


class LoRAParam(Param[A]):
    """A low-rank adapter's parameter (a Param, so optimizers see it; filter on
    ``nnx.LoRAParam`` to train only the adapters)."""


Axis = int
Size = int

default_a_initializer = initializers.he_uniform()
default_b_initializer = initializers.zeros


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
        a_initializer: Callable[..., Array] = default_a_initializer,
        b_initializer: Callable[..., Array] = default_b_initializer,
        lora_param_type: type = LoRAParam,
        promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        a_metadata: Mapping[str, Any] = NO_META,
        b_metadata: Mapping[str, Any] = NO_META,
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
        a_initializer: Callable[..., Array] = default_a_initializer,
        b_initializer: Callable[..., Array] = default_b_initializer,
        lora_param_type: type = LoRAParam,
        lora_promote_dtype: Callable[..., Any] = promote_dtype,
        rngs: Rngs,
        a_metadata: Mapping[str, Any] = NO_META,
        b_metadata: Mapping[str, Any] = NO_META,
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
