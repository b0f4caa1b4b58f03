"""``vmap``: map a function over an axis of its arguments, variables and rngs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax

from lens import errors
from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import (
    add_axis_groups,
    infer_size,
    remove_axis_groups,
    split_keys,
    variable_hint,
)


def vmap(
    fn: Callable[..., Any],
    variable_axes: Mapping[Filter, int | None],
    split_rngs: Mapping[Filter, bool],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    spmd_axis_name: Any = None,
    metadata_params: Mapping[Any, Any] | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.vmap``: ``fn(scope, *args, **kwargs)`` mapped over an axis.

    Args:
      fn: the function to map; its first argument is a scope.
      variable_axes: collection filter -> axis: the axis of the variables in that
        collection (``None`` broadcasts: one copy shared by every element).
      split_rngs: rng filter -> bool: whether each element gets its own key.
        Streams not named here are invisible inside.
      in_axes, out_axes, axis_name, spmd_axis_name: as in ``jax.vmap``.
      axis_size: the mapped size, needed when no argument is mapped.
      metadata_params: passed to ``AxisMetadata.add_axis``/``remove_axis``.

    Keyword arguments of the mapped function are passed through unmapped.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.core import init
        >>> def f(scope, x):
        ...     return x * scope.param("w", jax.nn.initializers.normal(), ())
        >>> vf = vmap(f, variable_axes={"params": 0}, split_rngs={"params": True})
        >>> y, v = init(vf)(jax.random.key(0), jnp.ones((3,)))
        >>> v["params"]["w"].shape
        (3,)
    """
    var_filters = tuple(variable_axes.keys())
    var_axes = tuple(variable_axes.values())
    rng_filters = tuple(split_rngs.keys())
    rng_splits = tuple(split_rngs.values())
    params = dict(metadata_params or {})
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        size = infer_size(in_axes, args, axis_size, "vmap", "size along its in_axes")
        if size is None:
            size = infer_size(
                var_axes, variable_groups, None, "vmap", "size along its variable_axes"
            )
        if size is None:
            raise errors.TransformAxisSizeError(
                "vmap cannot tell the mapped size: no argument or variable is mapped.\n"
                "Pass axis_size=N, or map an argument with in_axes."
            )
        rng_in = tuple(
            split_keys(g, size) if split else g
            for g, split in zip(rng_groups, rng_splits)
        )
        rng_axes = tuple(0 if split else None for split in rng_splits)
        variable_groups = remove_axis_groups(variable_groups, var_axes, params)

        @functools.partial(
            jax.vmap,
            in_axes=(var_axes, rng_axes, in_axes),
            out_axes=(out_axes, var_axes),
            axis_name=axis_name,
            axis_size=size,
            spmd_axis_name=spmd_axis_name,
        )
        def mapped(variable_groups, rng_groups, args):
            scope = scope_fn(variable_groups, rng_groups)
            y = fn(scope, *args, **kwargs)
            return y, repack_fn(scope)

        y, out = mapped(variable_groups, rng_in, args)
        return y, add_axis_groups(out, var_axes, params)

    return pack(
        inner,
        var_filters,
        var_filters,
        rng_filters,
        name="vmap",
        hint=variable_hint("variable_axes", "0"),
        trace_options=dict(
            variable_axes=variable_axes,
            split_rngs=split_rngs,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_size=axis_size,
            axis_name=axis_name,
            metadata_params=params,
        ),
        group_labels=[f"axis {a}" if a is not None else "broadcast" for a in var_axes],
        rng_labels=["split" if s else "shared" for s in rng_splits],
    )
