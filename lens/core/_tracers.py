"""The current JAX trace, for code ported from ``flax.core.tracers``."""

from __future__ import annotations

from typing import Any

from lens._facades import show_at_flax_paths


def current_trace() -> Any:
    """The innermost active JAX trace (``EvalTrace`` outside any transform)."""
    from jax._src import core

    with core.take_current_trace() as trace:
        return trace


def check_trace_level(base_level: Any) -> None:
    """Kept for ported code: lens checks for leaked tracers when it commits state."""
    del base_level


show_at_flax_paths(__name__)
