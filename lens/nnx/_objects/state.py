"""An nnx object's own state (flax.nnx's ``PytreeState``, an object's
``_pytree__state``): the JAX trace it was made in and its bridge flags."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax

from lens._facades import show_at_flax_paths
from lens.nnx import reprlib
from lens.nnx.tracers import TraceState


class PytreeState(reprlib.Representable):
    """An object's own state (its ``_pytree__state``): the JAX trace it was made
    in, and whether it is being initialized (a bridge ``lazy_init``) or was set
    up (a bridge module's ``setup`` ran)."""

    __slots__ = ("_trace_state", "_initializing", "_is_setup")

    def __init__(self, initializing: bool = False, is_setup: bool = False):
        self._trace_state = TraceState()
        self._initializing = initializing
        self._is_setup = is_setup

    @property
    def trace_state(self) -> TraceState:
        return self._trace_state

    @property
    def initializing(self) -> bool:
        return self._initializing

    @property
    def is_setup(self) -> bool:
        return self._is_setup

    def set_initializing(self, initializing: bool) -> None:
        """Marks the object as being initialized (what the bridge's
        ``lazy_init`` does to every object of a module's graph for its call)."""
        self._initializing = initializing

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        yield reprlib.Object(type(self))
        yield reprlib.Attr("trace_state", self._trace_state)

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from treescope import repr_lib

        return repr_lib.render_object_constructor(
            object_type=type(self),
            attributes={"trace_state": self._trace_state},
            path=path,
            subtree_renderer=subtree_renderer,
        )

    # A copy or an unpickled one belongs to the trace that makes it.
    def __reduce__(self) -> tuple[Any, tuple[bool, bool]]:
        return PytreeState, (self._initializing, self._is_setup)


# As a pytree: no leaves; the flags are the structure, the trace is the one the
# rebuilt state is made in.
jax.tree_util.register_pytree_node(
    PytreeState,
    lambda s: ((), (s.initializing, s.is_setup)),
    lambda flags, _: PytreeState(*flags),
)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
