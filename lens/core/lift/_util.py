"""Small helpers shared by the lifted transforms."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import jax
import jax.numpy as jnp
import numpy as np

from lens import errors
from lens.core import _meta
from lens.typing import In, Out

A = TypeVar("A")


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


def id_fn(x: Any) -> Any:
    """The identity (the default mapping of ``map_variables``)."""
    return x


def _unzip2(xs: Any) -> tuple[tuple, tuple]:
    ys = tuple(zip(*xs))
    return ys if ys else ((), ())  # type: ignore[return-value]


def split_in_out_axes(xs: Mapping[Any, Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """``variable_axes`` split into the axes going in and going out.

    ``In(axis)`` applies to the inputs only, ``Out(axis)`` to the outputs only.
    """
    unpack = lambda v: v.axis if isinstance(v, In | Out) else v  # noqa: E731
    in_axes = {k: unpack(v) for k, v in xs.items() if not isinstance(v, Out)}
    out_axes = {k: unpack(v) for k, v in xs.items() if not isinstance(v, In)}
    return in_axes, out_axes


def is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def tree_map_rngs(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Maps ``fn`` over the keys of a tree of rngs (typed keys, or legacy uint32)."""
    return jax.tree_util.tree_map(fn, tree, is_leaf=is_key)


def split_keys(group: Any, n: int) -> Any:
    """Splits every key of an rng group into ``n`` keys (new leading axis)."""

    def split(k: Any) -> Any:
        if hasattr(jax.random, "clone"):
            k = jax.random.clone(k)
        return jax.random.split(k, n)

    return tree_map_rngs(split, group)


def prefix_map(f: Callable[..., Any], prefix: Any, *trees: Any) -> Any:
    """Maps ``f(prefix_leaf, *subtrees)`` where ``prefix`` is a prefix of ``trees``.

    ``None`` and :data:`broadcast` count as prefix leaves.
    """
    return jax.tree_util.tree_map(
        f, prefix, *trees, is_leaf=lambda x: x is None or x is broadcast
    )


def _check_mapped_leaf(leaf: Any, axis: int, what: str) -> int:
    if callable(leaf) and not hasattr(leaf, "shape"):
        raise errors.JaxTransformError(
            f"A function ({getattr(leaf, '__name__', leaf)!r}) was passed as a mapped "
            "argument of a lifted transform; closures hide the modules and arrays they "
            "capture from the transform.\nPass a pytree instead: e.g. "
            "Partial(fn, [module]) with lens.struct (see the lifecycle guide)."
        )
    shape = jnp.shape(cast(Any, leaf))  # not callable: an array or scalar
    if not -len(shape) <= axis < len(shape):
        # NumPy's AxisError: a ValueError and, as Flax's (JAX's IndexError), an
        # IndexError
        raise np.exceptions.AxisError(
            f"{what}: axis {axis} is out of range for a value of shape {shape}.\n"
            "Use an axis the value has, or None to broadcast it."
        )
    return shape[axis]


def mapped_sizes(axes: Any, trees: Any, what: str) -> set[int]:
    """The sizes of the mapped axes of ``trees`` under the prefix ``axes``."""
    sizes: set[int] = set()

    def visit(axis: Any, sub: Any) -> None:
        if axis is None or axis is broadcast:
            return
        for leaf in jax.tree_util.tree_leaves(sub):
            sizes.add(_check_mapped_leaf(leaf, axis, what))

    prefix_map(visit, axes, trees)
    return sizes


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


def check_variable_axes(
    groups: Sequence[Any], axes: Sequence[Any], transform: str, out: bool = False
) -> None:
    """A clear error when a variable lacks the axis ``variable_axes`` maps.

    With ``out``, ``groups`` are the variables coming out of one step: the axis
    is inserted, so a rank-``n`` value takes axes ``-(n + 1)`` to ``n``.
    """
    for group, axis in zip(groups, axes):
        if axis is None:
            continue
        for root in group:
            for col, tree in root.items():
                for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
                    ndim = jnp.ndim(leaf) + (1 if out else 0)
                    if -ndim <= axis < ndim:
                        continue
                    where = "/" + "/".join(str(getattr(k, "key", k)) for k in path)
                    if out:
                        detail = (
                            f"inside {transform} has shape {jnp.shape(leaf)}: axis "
                            f"{axis} cannot be added to it (a rank-{ndim - 1} value "
                            f"takes axes {-ndim} to {ndim - 1})"
                        )
                    else:
                        detail = (
                            f"has shape {jnp.shape(leaf)}, which has no axis {axis} "
                            "to map"
                        )
                    raise ValueError(
                        f'{transform}: variable {where} of collection "{col}" '
                        f"{detail} (variable_axes={{'{col}': {axis}}}).\nUse an axis "
                        "the variables have, or None to broadcast the collection."
                    )


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


class TransformContext(Generic[A]):
    """A stack of values a transform hands to the function it traces.

    Kept in a ``contextvars.ContextVar`` (Flax: a thread-local), so threads and
    interleaved async tasks each see their own; each starts from ``stack`` (empty
    by default).
    """

    def __init__(self, stack: list[A] | None = None) -> None:
        self._stack: contextvars.ContextVar[tuple[A, ...]] = contextvars.ContextVar(
            f"lens_transform_context_{id(self)}", default=tuple(stack or ())
        )

    @property
    def stack(self) -> list[A]:
        """The values pushed in this context, innermost last (a copy)."""
        return list(self._stack.get())

    @contextlib.contextmanager
    def push(self, a: A) -> Iterator[None]:
        token = self._stack.set(self._stack.get() + (a,))
        try:
            yield
        finally:
            self._stack.reset(token)

    def get(self) -> A:
        return self._stack.get()[-1]


def set_from_dict(original: dict[Any, Any], updates: Mapping[Any, Any]) -> None:
    """Writes ``updates`` into the nested dict ``original`` in place."""
    for k, v in updates.items():
        if k in original and isinstance(v, dict):
            set_from_dict(original[k], v)
        else:
            original[k] = v


class CountsHolder:
    """Flat rng counts (``{path: count}``) with ``sub`` and ``add`` (Flax's helper).

    Example:
        >>> a = CountsHolder.make({"params": 3, "child": {"dropout": 1}})
        >>> a.sub(CountsHolder.make({"params": 1})).flat_d[("params",)]
        2
    """

    def __init__(self, flat_d: dict[Any, int]):
        self.flat_d = flat_d

    @classmethod
    def make(cls, d: Any) -> CountsHolder:
        from lens.traverse_util import flatten_dict

        return cls(dict(flatten_dict(d)))

    def sub(self, other: CountsHolder) -> CountsHolder:
        return CountsHolder(
            {k: v - other.flat_d.get(k, 0) for k, v in self.flat_d.items()}
        )

    def add(self, other: CountsHolder) -> CountsHolder:
        return CountsHolder(
            {k: v + other.flat_d.get(k, 0) for k, v in self.flat_d.items()}
        )

    def unflat(self) -> dict[str, Any]:
        from lens.traverse_util import unflatten_dict

        return unflatten_dict(self.flat_d)
