"""flax.nnx's graph-mode switches: ``nnx.set_graph_mode`` (the graph API and the
transforms walk objects as graphs, or as pytrees in tree mode) and
``nnx.set_graph_updates`` (transforms carry structure updates back). Each is a
setter, a context manager and a decorator; the values live per thread and task
(contextvars).
"""

from __future__ import annotations

import contextvars

from lens._facades import show_at_flax_paths
from lens.typing import BaseConfigContext

_MODE_STACKS: contextvars.ContextVar[dict[str, list[bool]] | None] = (
    contextvars.ContextVar("lens_nnx_graph_mode_stacks", default=None)
)


def _mode_stack(name: str) -> list[bool]:
    """This context's (thread's, task's) stack of values for one mode."""
    stacks = _MODE_STACKS.get()
    if stacks is None:
        stacks = {}
        _MODE_STACKS.set(stacks)
    return stacks.setdefault(name, [])


class set_graph_mode(BaseConfigContext):  # noqa: N801 - Flax's name
    """``nnx.set_graph_mode(False)``: the graph API (split, merge, state, clone,
    ...) defaults to tree mode from then on, walking objects as pytrees; ``with
    nnx.set_graph_mode(False): ...`` for one block, ``@nnx.set_graph_mode(False)``
    for a function's calls."""

    @classmethod
    def get_default(cls) -> bool:
        """Flax's default: graph mode with graph updates."""
        return True

    @classmethod
    def get_stack(cls) -> list:
        """This context's stack of values."""
        return _mode_stack("graph")


class set_graph_updates(BaseConfigContext):  # noqa: N801 - Flax's name
    """``nnx.set_graph_updates(False)``: transforms default to not carrying
    updates made inside them back to the objects (setter, context manager or
    decorator, as ``set_graph_mode``)."""

    @classmethod
    def get_default(cls) -> bool:
        """Flax's default: graph mode with graph updates."""
        return True

    @classmethod
    def get_stack(cls) -> list:
        """This context's stack of values."""
        return _mode_stack("graph_updates")


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
