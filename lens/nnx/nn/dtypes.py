"""flax.nnx's ``nn.dtypes``: ``promote_dtype`` and ``canonicalize_dtype``."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from lens._kernels.dtypes import canonicalize_dtype


def promote_dtype(args: Any, /, *, dtype: Any = None, inexact: bool = True) -> Any:
    """``args`` (a tuple; ``None`` kept) cast to one dtype: ``dtype``, or the one
    promoted from them. flax.nnx's form: one tuple, not Linen's ``*args``."""
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return tuple(jnp.asarray(x, dtype) if x is not None else None for x in args)
