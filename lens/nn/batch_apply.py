"""``BatchApply``: run a function on inputs whose leading axes are merged into one.

Like ``flax.linen.batch_apply`` (after Sonnet): a function that takes one batch
axis (e.g. a layer over ``[batch, features]``) applied to ``[time, batch, ...]``
by merging the ``num_dims`` leading axes, then splitting them out of the outputs.

Example:
    >>> import jax.numpy as jnp
    >>> f = BatchApply(lambda x: x.sum(-1, keepdims=True))
    >>> f(jnp.ones((3, 4, 5))).shape
    (3, 4, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "BatchApply",
    "arbitrary_mergeable_leaf",
    "merge_leading_dims",
    "ndim_at_least",
    "split_leading_dim",
]


def ndim_at_least(x: Any, num_dims: int) -> bool:
    """Whether ``x`` (an array or array-like) has at least ``num_dims`` axes."""
    if not isinstance(x, jax.Array | np.ndarray):
        x = jnp.asarray(x)
    return x.ndim >= num_dims


def arbitrary_mergeable_leaf(min_num_dims: int, args: Any, kwargs: Any) -> Any:
    """The first leaf of ``args`` then ``kwargs`` with ``min_num_dims`` axes, or None."""
    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        if ndim_at_least(leaf, min_num_dims):
            return leaf
    return None


def merge_leading_dims(x: Any, num_dims: int) -> Any:
    """``x`` with its first ``num_dims`` axes merged (unchanged if it has fewer)."""
    if not ndim_at_least(x, num_dims):
        return x
    return x.reshape((int(np.prod(x.shape[:num_dims])),) + x.shape[num_dims:])


def split_leading_dim(x: Any, to_dim: tuple[int, ...]) -> Any:
    """``x`` with its first axis split into ``to_dim``."""
    return x.reshape(tuple(to_dim) + x.shape[1:])


class BatchApply:
    """Wraps ``f`` to merge the ``num_dims`` leading axes of its inputs.

    Every input leaf with at least ``num_dims`` axes is merged; the outputs'
    first axis is split back into the leading shape of the first such input.
    """

    def __init__(self, f: Callable[..., Any], num_dims: int = 2):
        self._f = f
        self.num_dims = num_dims

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        example = arbitrary_mergeable_leaf(self.num_dims, args, kwargs)
        if example is None:
            raise ValueError(
                f"BatchApply requires at least one input with ndim >= {self.num_dims}."
                "\nGive an input with the leading axes to merge, or lower num_dims."
            )
        args, kwargs = jax.tree_util.tree_map(
            lambda x: merge_leading_dims(x, self.num_dims), (args, kwargs)
        )
        outputs = self._f(*args, **kwargs)
        lead = example.shape[: self.num_dims]
        return jax.tree_util.tree_map(lambda x: split_leading_dim(x, lead), outputs)
