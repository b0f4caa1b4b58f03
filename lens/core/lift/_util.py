"""Small helpers shared by the lifted transforms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from lens import errors
from lens.core import _meta


class _Broadcast:
    """Marks an argument of ``scan`` that is passed whole to every iteration."""

    _instance: _Broadcast | None = None

    def __new__(cls) -> _Broadcast:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "broadcast"

    def __reduce__(self) -> str:
        return "broadcast"


broadcast = _Broadcast()


def prefix_map(f: Callable[..., Any], prefix: Any, *trees: Any) -> Any:
    """Maps ``f(prefix_leaf, *subtrees)`` where ``prefix`` is a prefix of ``trees``.

    ``None`` and :data:`broadcast` count as prefix leaves.
    """
    return jax.tree_util.tree_map(
        f, prefix, *trees, is_leaf=lambda x: x is None or x is broadcast
    )


def _full_prefix(prefix: Any, args: tuple) -> Any:
    if isinstance(prefix, list):
        prefix = tuple(prefix)
    if isinstance(prefix, tuple):
        if len(prefix) != len(args):
            raise ValueError(
                f"in_axes has {len(prefix)} entries but the function got {len(args)} "
                "positional arguments; give one axis per argument (or a single int)."
            )
        return prefix
    return (prefix,) * len(args)


def axis_sizes(in_axes: Any, args: tuple) -> list[int]:
    """The sizes of the mapped axes of ``args`` under ``in_axes``."""
    sizes: list[int] = []

    def visit(axis: Any, sub: Any) -> None:
        if axis is None or axis is broadcast:
            return
        for leaf in jax.tree_util.tree_leaves(sub):
            if callable(leaf) and not hasattr(leaf, "shape"):
                raise errors.JaxTransformError(
                    f"A function ({getattr(leaf, '__name__', leaf)!r}) was passed as a mapped "
                    "argument of a lifted transform. Closures hide the modules and arrays "
                    "they capture from the transform.\nPass a pytree instead: e.g. "
                    "Partial(fn, [module]) with lens.struct (see the lifecycle guide)."
                )
            shape = jnp.shape(leaf)
            if not shape:
                raise ValueError(
                    f"Cannot map over axis {axis} of a scalar argument; use None (or "
                    "broadcast) in in_axes for arguments that are not mapped."
                )
            sizes.append(shape[axis])

    prefix = _full_prefix(in_axes, args)
    for a, x in zip(prefix, args):
        prefix_map(visit, a, x)
    return sizes


def infer_size(
    in_axes: Any, args: tuple, given: int | None, transform: str, what: str
) -> int | None:
    """The mapped size from ``given`` or the arguments; checks they agree."""
    sizes = axis_sizes(in_axes, args)
    if given is not None:
        sizes.append(given)
    if not sizes:
        return None
    if len(set(sizes)) != 1:
        raise errors.TransformAxisSizeError(
            f"{transform} got inconsistent sizes {sorted(set(sizes))} for the mapped "
            f"axis.\nEvery mapped argument must have the same {what}."
        )
    return sizes[0]


def remove_axis_groups(
    groups: Sequence[Any], axes: Sequence[Any], params: dict[Any, Any]
) -> tuple:
    """Calls ``remove_axis`` on the boxes of every group that has an axis."""
    return tuple(
        _meta.remove_axis(g, ax, params) if ax is not None else g
        for g, ax in zip(groups, axes)
    )


def add_axis_groups(
    groups: Sequence[Any], axes: Sequence[Any], params: dict[Any, Any]
) -> tuple:
    """Calls ``add_axis`` on the boxes of every group that has an axis."""
    return tuple(
        _meta.add_axis(g, ax, params) if ax is not None else g
        for g, ax in zip(groups, axes)
    )


def split_keys(group: Any, n: int) -> Any:
    """Splits every key of an rng group into ``n`` keys (new leading axis)."""
    return jax.tree_util.tree_map(lambda k: jax.random.split(k, n), group)


def variable_hint(option: str, example: str) -> Callable[[str, str], str]:
    """A ``pack`` hint for transforms whose variable option is a mapping."""

    def hint(kind: str, name: str) -> str:
        if kind == "rng":
            return (
                f'Add it to split_rngs: split_rngs={{"{name}": True}} for a different '
                f'key per step, or {{"{name}": False}} for the same key.'
            )
        return f'Add it to {option}, e.g. {option}={{"{name}": {example}}}.'

    return hint


def filter_hint(option: str, rng_option: str = "rngs") -> Callable[[str, str], str]:
    """A ``pack`` hint for transforms whose variable option is a filter."""

    def hint(kind: str, name: str) -> str:
        if kind == "rng":
            return f'Include "{name}" in the {rng_option}= filter of the transform (or use True).'
        return (
            f'Include "{name}" in the {option}= filter of the transform (or use True).'
        )

    return hint
