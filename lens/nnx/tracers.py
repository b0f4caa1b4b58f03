"""Transform frames and the structure epoch (flax.nnx's ``tracers``).

Objects and variables remember the transform level ("frame") they were made in: one
made outside a transform cannot be mutated inside it
(:class:`lens.errors.TraceContextError`), and, as flax.nnx's, an object remembers the
JAX trace it was made in (:class:`TraceState`): one made outside a ``jax.jit``
cannot be mutated inside it. The structure epoch counts structural changes, so
cached graph walks know when to walk again.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

import jax

# jax.extend.core's function, from its home: importing the jax.extend package
# loads Pallas (~12 ms of a first model).
try:
    from jax._src.core import get_opaque_trace_state
except ImportError:  # pragma: no cover - a JAX that moved it
    from jax.extend.core import get_opaque_trace_state

from lens import errors
from lens.nnx import reprlib


class Frame:
    """One level of a lens.nnx transform (a fresh token per transformed call)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


# The innermost transform frame of this thread / task (None outside transforms).
# A context variable, so that a transform running in one thread never makes another
# thread's eager objects look captured.
_FRAME: contextvars.ContextVar[Frame | None] = contextvars.ContextVar(
    "lens_nnx_frame", default=None
)


def current_frame() -> Frame | None:
    return _FRAME.get()


@contextlib.contextmanager
def frame(name: str) -> Iterator[Frame]:
    f = Frame(name)
    token = _FRAME.set(f)
    try:
        yield f
    finally:
        _FRAME.reset(token)


# The structure epoch: bumped by every change that can alter an object graph's
# structure (an attribute set or deleted, a container item, variable metadata). A
# transform that cached a graph walk reuses it while the epoch is unchanged. This is
# a cache-invalidation counter (not per-call context), shared by all threads; a hot
# path may read ``STRUCTURE_EPOCH[0]`` directly.
STRUCTURE_EPOCH = [0]


_EPOCH_LOCK = threading.Lock()


def structure_epoch() -> int:
    return STRUCTURE_EPOCH[0]


def structure_changed() -> None:
    with _EPOCH_LOCK:
        STRUCTURE_EPOCH[0] += 1


def frame_of(x: Any) -> Any:
    """The frame ``x`` (an Object or Variable) was made in; a hijax Variable's
    tracer answers through its aval (it reports None: updatable anywhere)."""
    try:
        return object.__getattribute__(x, "_lens_frame")
    except AttributeError:
        return x._lens_frame


def check_mutable(
    owner: Any, what: str, structural: bool = True, variable: bool = False
) -> None:
    """Refuses ``what`` (``"set 'x'"``) on ``owner`` inside an nnx transform other
    than the one it was made in. The message starts as flax.nnx's for the JAX
    trace check that catches the same thing there (a Variable's wording differs
    from an object's), then says which transform and what was tried."""
    if structural:
        structure_changed()
    here = current_frame()
    made = frame_of(owner)
    if here is not None and made is not here:
        name = type(owner).__name__
        first = (
            f"Cannot mutate {name} from a different trace level"
            if variable
            else f"Cannot mutate '{name}' from different trace level"
        )
        raise errors.TraceContextError(
            f"{first} (tried to {what} inside nnx.{here.name}): it was created "
            "outside the transform and captured.\nPass it as an argument to the "
            "transformed function; its updates then come back out."
        )


def current_jax_trace() -> Any:
    """The JAX trace running now, as an opaque token that compares equal only to
    a token of the same trace (``jax.jit``, ``jax.grad``, ``jax.vmap`` each open
    a new one)."""
    return get_opaque_trace_state(convention="nnx")


class TraceState(reprlib.Representable):
    """The JAX trace an object was made in; :meth:`is_valid` says whether the
    code running now is in that same trace (and may mutate the object)."""

    __slots__ = ("_jax_trace", "_lens_frame")

    def __init__(self) -> None:
        self._jax_trace = current_jax_trace()
        # lens's addition: the nnx transform frame (see ``check_mutable``)
        self._lens_frame = current_frame()

    @property
    def jax_trace(self) -> Any:
        return self._jax_trace

    def is_valid(self) -> bool:
        return self._jax_trace == current_jax_trace()

    def __nnx_repr__(self) -> Iterator[reprlib.Object | reprlib.Attr]:
        yield reprlib.Object(type(self).__name__)
        yield reprlib.Attr("jax_trace", self._jax_trace)

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from treescope import repr_lib

        return repr_lib.render_object_constructor(
            object_type=type(self),
            attributes={"jax_trace": self._jax_trace},
            path=path,
            subtree_renderer=subtree_renderer,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TraceState) and self._jax_trace == other._jax_trace

    __hash__ = None  # type: ignore[assignment]  # equal by trace, mutable owner

    # A copy or an unpickled one belongs to the trace that makes it.
    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return TraceState, ()

    def __setstate__(self, state: Any) -> None:
        # flax.nnx pickles a TraceState as the class and an empty state: loaded
        # under lens (``flax`` resolving to lens), it belongs to the trace now.
        self._jax_trace = current_jax_trace()
        self._lens_frame = current_frame()


# As a pytree a TraceState has no leaves; rebuilt, it takes the current trace
# (an object passed into a jax.jit is rebuilt inside, and may be mutated there).
jax.tree_util.register_pytree_node(
    TraceState, lambda t: ((), None), lambda _aux, _children: TraceState()
)
