"""How the instruments write sizes: ``1.5 MiB`` (binary units, one decimal)."""

from __future__ import annotations


def fmt_bytes(n: int | None) -> str:
    """``1.5 MiB``, ``512 B``; ``?`` when unknown."""
    if n is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
