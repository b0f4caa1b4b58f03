"""The defaults new Variables take: ``nnx.var_defaults`` (whether a new Variable is
hijax and/or ref-backed) and ``nnx.use_eager_sharding`` (shard a Variable with
``out_sharding`` at creation), as flax.nnx's ``variablelib`` has them.

The defaults are stacks per context (thread, task), kept in context variables as
immutable tuples; ``VARIABLE_CONTEXT`` reads them (flax.nnx keeps the same stacks
in a thread-local ``VariableContext``).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from lens._facades import show_at_flax_paths
from lens.configurations import config

F = TypeVar("F", bound=Callable[..., Any])


# None: no use_eager_sharding in this context, so the global option decides
# (``config.update('flax_always_shard_variable', False)``, as in flax.nnx).
_EAGER_SHARDING: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "lens_nnx_eager_sharding", default=None
)


class use_eager_sharding:  # noqa: N801 - Flax's name
    """Turns eager sharding of new variables on or off.

    Called plainly it sets the default for this context (thread, task); used as
    ``with nnx.use_eager_sharding(False): ...`` it applies to the block only.
    """

    def __init__(self, value: bool):
        self._token = _EAGER_SHARDING.set(bool(value))

    def __enter__(self) -> use_eager_sharding:
        return self

    def __exit__(self, *exc: Any) -> None:
        _EAGER_SHARDING.reset(self._token)


def using_eager_sharding() -> bool:
    """Whether variables created now with ``out_sharding`` are sharded at once.

    ``nnx.use_eager_sharding`` decides where it was called; elsewhere the option
    ``flax_always_shard_variable`` (``lens.config``, default True) does.
    """
    value = _EAGER_SHARDING.get()
    if value is None:
        return bool(config.flax_always_shard_variable)
    return value


@dataclasses.dataclass(frozen=True)
class VarDefaults(Mapping[str, Any]):
    """The defaults new Variables take (``nnx.var_defaults()``)."""

    hijax: bool
    ref: bool

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(("hijax", "ref"))

    def __len__(self) -> int:
        return 2


# The stacks of hijax / ref defaults set in this context (innermost last).
_HIJAX_STACK: contextvars.ContextVar[tuple[bool, ...]] = contextvars.ContextVar(
    "lens_nnx_hijax_stack", default=()
)
_REF_STACK: contextvars.ContextVar[tuple[bool, ...]] = contextvars.ContextVar(
    "lens_nnx_ref_stack", default=()
)


class VariableContext:
    """The Variable defaults set in a context, as flax.nnx's ``VariableContext``
    has them: ``variable_hijax_stack``, ``variable_ref_stack`` and
    ``eager_shard_stack`` (innermost last).

    ``VARIABLE_CONTEXT`` (made with no arguments) is a live view of the current
    context (thread, task): each read returns a snapshot list; change the
    defaults with ``nnx.var_defaults`` and ``nnx.use_eager_sharding``. Made with
    stacks, a VariableContext holds those lists (flax's dataclass fields).
    """

    def __init__(
        self,
        variable_hijax_stack: list[bool] | None = None,
        variable_ref_stack: list[bool] | None = None,
        eager_shard_stack: list[bool] | None = None,
    ):
        self._fixed = (variable_hijax_stack, variable_ref_stack, eager_shard_stack)

    @property
    def variable_hijax_stack(self) -> list[bool]:
        fixed = self._fixed[0]
        return list(_HIJAX_STACK.get()) if fixed is None else fixed

    @property
    def variable_ref_stack(self) -> list[bool]:
        fixed = self._fixed[1]
        return list(_REF_STACK.get()) if fixed is None else fixed

    @property
    def eager_shard_stack(self) -> list[bool]:
        fixed = self._fixed[2]
        if fixed is not None:
            return fixed
        value = _EAGER_SHARDING.get()
        return [] if value is None else [value]

    def __repr__(self) -> str:
        return (
            f"VariableContext(variable_hijax_stack={self.variable_hijax_stack}, "
            f"variable_ref_stack={self.variable_ref_stack}, "
            f"eager_shard_stack={self.eager_shard_stack})"
        )


VARIABLE_CONTEXT = VariableContext()


def _replace_top(
    var: contextvars.ContextVar[tuple[bool, ...]], new: bool | None
) -> bool | None:
    """Sets the top of ``var``'s stack to ``new`` (pushes it on an empty stack);
    returns the value it replaced (None if there was none)."""
    if new is None:
        return None
    stack = var.get()
    var.set((*stack[:-1], bool(new)))
    return stack[-1] if stack else None


def _pop(var: contextvars.ContextVar[tuple[bool, ...]]) -> None:
    var.set(var.get()[:-1])


class VarDefaultsContext:
    """What ``nnx.var_defaults(hijax=..., ref=...)`` returns. The new defaults
    are set at once (they replace the current ones in this context); as a context
    manager the previous ones come back when the block ends, as a decorator the
    new ones apply only during calls of the function."""

    def __init__(
        self,
        *,
        hijax_prev: bool | None,
        hijax_new: bool | None,
        ref_prev: bool | None,
        ref_new: bool | None,
    ):
        self.hijax_prev = hijax_prev
        self.hijax_new = hijax_new
        self.ref_prev = ref_prev
        self.ref_new = ref_new

    def _pairs(self) -> Iterator[tuple[contextvars.ContextVar, Any, Any]]:
        yield _HIJAX_STACK, self.hijax_prev, self.hijax_new
        yield _REF_STACK, self.ref_prev, self.ref_new

    def __enter__(self) -> VarDefaultsContext:
        for var, prev, new in self._pairs():
            if new is not None and prev is not None:  # keep prev under the new one
                stack = var.get()
                var.set((*stack[:-1], prev, *stack[-1:]))
        return self

    def __exit__(self, *exc: Any) -> None:
        for var, _, new in self._pairs():
            if new is not None:
                _pop(var)

    def __call__(self, f: F) -> F:
        for var, prev, new in self._pairs():  # a decorator: undo the change now
            if new is not None:
                _pop(var)
                if prev is not None:
                    var.set((*var.get(), prev))

        @functools.wraps(f)
        def with_defaults(*args: Any, **kwargs: Any) -> Any:
            pushed = [(v, n) for v, _, n in self._pairs() if n is not None]
            for var, new in pushed:
                var.set((*var.get(), bool(new)))
            try:
                return f(*args, **kwargs)
            finally:
                for var, _ in pushed:
                    _pop(var)

        return with_defaults  # type: ignore[return-value]


def var_defaults(*, hijax: bool | None = None, ref: bool | None = None) -> Any:
    """The current Variable defaults, or (given ``hijax``/``ref``) sets them.

    ``nnx.var_defaults()`` returns a :class:`VarDefaults`;
    ``nnx.var_defaults(hijax=True)`` sets the default for this context (thread,
    task) and returns a :class:`VarDefaultsContext`: used in ``with`` it restores
    the previous default after the block, used as a decorator it applies only
    while the function runs.

    >>> from lens import nnx
    >>> with nnx.var_defaults(ref=True):
    ...     nnx.Param(1.0).ref
    True
    >>> nnx.var_defaults().ref
    False
    """
    if hijax is None and ref is None:
        hijax_stack, ref_stack = _HIJAX_STACK.get(), _REF_STACK.get()
        return VarDefaults(
            hijax=hijax_stack[-1] if hijax_stack else bool(config.flax_hijax_variable),
            ref=ref_stack[-1] if ref_stack else False,
        )
    return VarDefaultsContext(
        hijax_prev=_replace_top(_HIJAX_STACK, hijax),
        hijax_new=hijax,
        ref_prev=_replace_top(_REF_STACK, ref),
        ref_new=ref,
    )


# How a Variable records its modes and sharding metadata.
def _remap_sharding_metadata(metadata: dict[str, Any]) -> None:
    for old in ("sharding", "sharding_names"):
        if old in metadata:
            warnings.warn(
                f"'{old}' is deprecated, use 'out_sharding' instead.",
                DeprecationWarning,
                stacklevel=4,
            )
            metadata["out_sharding"] = metadata.pop(old)


_FLAGS = ("hijax", "ref", "eager_sharding")
_FLAG_DEFAULTS = {"hijax": False, "ref": False, "eager_sharding": True}


def _store_flags(metadata: dict[str, Any], flags: Mapping[str, Any]) -> None:
    """Records the mode flags in ``metadata``, only where they differ from the
    defaults (so a plain Variable's metadata holds none of them)."""
    for flag in _FLAGS:
        metadata.pop(flag, None)
        if flag in flags and bool(flags[flag]) != _FLAG_DEFAULTS[flag]:
            metadata[flag] = bool(flags[flag])


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
