"""Argument positions that a transform holds back: one way to read, check, split, rejoin.

Every transform with ``static_argnums``, ``donate_argnums`` or ``nondiff_argnums``
(lens.core's jit, checkpoint and custom_vjp/jvp; lens.nn's module-level transforms;
lens.nnx's jit and custom_vjp) reads the option with :func:`argnums`, finds positions a
call does not have with :func:`out_of_range`, and splits a call's values into the
traced part and the held part with :func:`partition`, rejoined by :func:`combine` (the
way Equinox's ``partition``/``combine`` is its one idea). Each caller keeps its own
error message (Flax's first sentence), since they differ per transform.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def argnums(x: int | Iterable[int] | None, what: str = "argnums") -> tuple[int, ...]:
    """``None`` -> ``()``, ``2`` -> ``(2,)``, an iterable -> a tuple of its ints.

    Raises:
      TypeError: if an entry is not an int.
    """
    out = () if x is None else (x,) if isinstance(x, int) else tuple(x)
    bad = [i for i in out if not isinstance(i, int) or isinstance(i, bool)]
    if bad:
        raise TypeError(f"{what} must be ints, got {x!r}.")
    return out


def argnames(x: str | Iterable[str] | None) -> tuple[str, ...]:
    """``None`` -> ``()``, ``'train'`` -> ``('train',)``, an iterable -> a tuple."""
    return () if x is None else (x,) if isinstance(x, str) else tuple(x)


def out_of_range(nums: Iterable[int], n: int) -> list[int]:
    """The positions (negative ones count from the end) that ``n`` arguments lack."""
    return [i for i in nums if not -n <= i < n]


def held_mask(n: int, nums: Iterable[int]) -> list[bool]:
    """``mask[i]`` is True where argument ``i`` of ``n`` is held (static, nondiff)."""
    held = {i % n for i in nums} if n else set()
    return [i in held for i in range(n)]


def partition(
    values: Sequence[Any], mask: Sequence[bool]
) -> tuple[list[Any], list[Any]]:
    """``(traced, held)``: the values where ``mask`` is False, and where it is True."""
    traced = [v for v, h in zip(values, mask, strict=True) if not h]
    held = [v for v, h in zip(values, mask, strict=True) if h]
    return traced, held


def combine(
    traced: Iterable[Any], held: Iterable[Any], mask: Sequence[bool]
) -> list[Any]:
    """The values in their original order again (the inverse of :func:`partition`)."""
    it_t, it_h = iter(traced), iter(held)
    return [next(it_h) if h else next(it_t) for h in mask]
