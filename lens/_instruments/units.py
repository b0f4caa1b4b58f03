"""How lens writes sizes and dtypes: ``1.5 MiB`` (binary units, one decimal),
``f32`` for ``float32``. Imports nothing of lens, so any layer may use it."""

from __future__ import annotations


def fmt_bytes(n: int | None) -> str:
    """``1.5 MiB``, ``512 B``; ``?`` when unknown."""
    if n is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def short_dtype(dtype: str) -> str:
    """``float32`` -> ``f32``, ``int8`` -> ``i8``, ``bfloat16`` -> ``bf16``."""
    for long, short in (
        ("bfloat", "bf"),
        ("float", "f"),
        ("uint", "u"),
        ("int", "i"),
        ("complex", "c"),
    ):
        if dtype.startswith(long):
            return short + dtype[len(long) :]
    return dtype
