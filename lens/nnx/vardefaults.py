"""The defaults new Variables take: ``nnx.var_defaults`` (hijax/ref modes, recorded
for code that reads them) and ``nnx.use_eager_sharding`` (shard a Variable with
``out_sharding`` at creation), as flax.nnx's ``variablelib`` has them.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

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


_VAR_DEFAULTS: contextvars.ContextVar[VarDefaults] = contextvars.ContextVar(
    "lens_nnx_var_defaults",
    default=VarDefaults(hijax=False, ref=False),  # noqa: B039 - frozen dataclass
)


class VarDefaultsContext:
    """What ``nnx.var_defaults(hijax=...)`` returns: the new defaults are set at
    once; as a context manager they last for the block, as a decorator for the
    call."""

    def __init__(self, new: VarDefaults):
        self._new = new
        self._token = _VAR_DEFAULTS.set(new)

    def __enter__(self) -> VarDefaultsContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        _VAR_DEFAULTS.reset(self._token)

    def __call__(self, f: F) -> F:
        _VAR_DEFAULTS.reset(self._token)  # a decorator: only during calls of f

        @functools.wraps(f)
        def with_defaults(*args: Any, **kwargs: Any) -> Any:
            token = _VAR_DEFAULTS.set(self._new)
            try:
                return f(*args, **kwargs)
            finally:
                _VAR_DEFAULTS.reset(token)

        return with_defaults  # type: ignore[return-value]


def var_defaults(*, hijax: bool | None = None, ref: bool | None = None) -> Any:
    """The current Variable defaults, or (given ``hijax``/``ref``) sets them.

    ``nnx.var_defaults()`` returns a :class:`VarDefaults`;
    ``nnx.var_defaults(hijax=True)`` sets the default for this context (thread,
    task) and returns a context manager / decorator that restores it. lens's
    Variables are plain Python boxes whose updates nnx transforms carry out in
    both modes, so the defaults are recorded for code that reads them.
    """
    current = _VAR_DEFAULTS.get()
    if hijax is None and ref is None:
        return current
    return VarDefaultsContext(
        VarDefaults(
            hijax=current.hijax if hijax is None else bool(hijax),
            ref=current.ref if ref is None else bool(ref),
        )
    )
