"""``vmap``: map a function over an axis of its arguments, variables and rngs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import jax

from lens import errors
from lens.core._axes import KEYWORD, CallAxes, arg_names, per_argument
from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import (
    _unzip2,
    add_axis_groups,
    check_variable_axes,
    mapped_sizes,
    remove_axis_groups,
    split_in_out_axes,
    split_keys,
    variable_hint,
)


def vmap(
    fn: Callable[..., Any],
    variable_axes: Mapping[Filter, Any],
    split_rngs: Mapping[Filter, bool],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    spmd_axis_name: str | None = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006 - read only
) -> Callable[..., Any]:
    """A lifted ``jax.vmap``: ``fn(scope, *args, **kwargs)`` mapped over an axis.

    Args:
      fn: the function to map; its first argument is a scope.
      variable_axes: collection filter -> axis of the variables in that collection
        (``None`` broadcasts: one copy shared by every element; ``In(axis)`` /
        ``Out(axis)`` apply to the inputs or the outputs only).
      split_rngs: rng filter -> bool: whether each element gets its own key.
        Streams not named here are invisible inside.
      in_axes, out_axes, axis_name, spmd_axis_name: as in ``jax.vmap``.
      axis_size: the mapped size, needed when nothing mapped gives it.
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
    var_in, var_out = split_in_out_axes(variable_axes)
    in_filters, in_var_axes = _unzip2(var_in.items())
    out_filters, out_var_axes = _unzip2(var_out.items())
    rng_filters, rng_splits = _unzip2(split_rngs.items())
    rng_axes = tuple(0 if s else None for s in rng_splits)
    params = dict(metadata_params or {})
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        variable_groups = remove_axis_groups(variable_groups, in_var_axes, params)
        check_variable_axes(variable_groups, in_var_axes, "vmap")
        size = _mapped_size(variable_groups, in_var_axes, args, in_axes, axis_size)
        rng_groups = tuple(
            split_keys(g, size) if s else g for g, s in zip(rng_groups, rng_splits)
        )
        mapped = _mapped_body(
            fn, scope_fn, repack_fn, kwargs, out_var_axes,
            in_axes=(in_var_axes, rng_axes, in_axes),
            out_axes=(out_axes, out_var_axes),
            axis_name=axis_name,
            axis_size=axis_size,
            spmd_axis_name=spmd_axis_name,
        )  # fmt: skip
        with _explained_axis_errors():
            y, out = mapped(variable_groups, rng_groups, args)
        return y, add_axis_groups(out, out_var_axes, params)

    options: dict[str, Any] = dict(variable_axes=variable_axes, split_rngs=split_rngs)
    options.update(in_axes=in_axes)
    options.update(out_axes=out_axes, axis_size=axis_size, axis_name=axis_name)
    return pack(
        inner, in_filters, out_filters, rng_filters,
        name="vmap",
        enable_kwargs=True,
        hint=variable_hint("variable_axes", "0"),
        trace_options=dict(options, metadata_params=params),
        group_labels=[f"axis {a}" if a is not None else "broadcast" for a in in_var_axes],
        rng_labels=["split" if s else "shared" for s in rng_splits],
        trace_args=lambda args, kwargs: _call_axes(fn, in_axes, args, kwargs),
    )  # fmt: skip


def _call_axes(
    fn: Callable[..., Any], in_axes: Any, args: tuple, kwargs: dict[str, Any]
) -> CallAxes:
    """How one call goes, for traces: each argument split along its ``in_axes``
    (``None``: not split), keyword arguments passed whole."""
    names = arg_names(fn, len(args))
    ins = list(zip(names, per_argument(in_axes, args)))
    return CallAxes(ins + [(k, KEYWORD) for k in kwargs])


def _mapped_body(fn, scope_fn, repack_fn, kwargs, out_var_axes, **vmap_kwargs):
    """``fn`` on a fresh scope per element, under ``jax.vmap(**vmap_kwargs)``."""

    def mapped(variable_groups, rng_groups, args):
        scope = scope_fn(variable_groups, rng_groups)
        y = fn(scope, *args, **kwargs)
        out = repack_fn(scope)
        check_variable_axes(out, out_var_axes, "vmap", out=True)
        return y, out

    return jax.vmap(mapped, **vmap_kwargs)


def _mapped_size(variable_groups, var_axes, args, in_axes, axis_size) -> int:
    """The one size of every mapped argument and variable, or ``axis_size``."""
    sizes = mapped_sizes((var_axes, in_axes), (variable_groups, args), "vmap")
    if len(sizes) > 1:
        raise errors.TransformAxisSizeError(
            f"Inconsistent batch axis sizes: {sizes}\nEvery mapped argument "
            "and variable must have the same size along its mapped axis."
        )
    if axis_size is not None:
        return axis_size
    if not sizes:
        raise errors.TransformAxisSizeError(
            "axis_size should be specified manually.\nvmap cannot tell the "
            "mapped size: no argument or variable is mapped; pass axis_size=N."
        )
    (size,) = sizes
    return size


@contextlib.contextmanager
def _explained_axis_errors():
    """Adds what to change to ``jax.vmap``'s axis errors, in lens's terms."""
    try:
        yield
    except ValueError as e:
        msg = str(e)
        if "vmap out_axes[1]" in msg and "got axis spec None" in msg:
            raise ValueError(
                f"{e}\nlens: a collection that vmap broadcasts (variable_axes "
                "None) was updated with a value that depends on the mapped "
                "axis. Map that collection (variable_axes={name: 0}) or do not "
                "update it inside vmap."
            ) from e
        if "vmap in_axes" in msg or "vmap out_axes" in msg:
            raise ValueError(
                f"{e}\nlens: in_axes covers the arguments after the scope or "
                "module; give one axis per argument, or a single int."
            ) from e
        raise
