"""Process-wide options (``lens.config``, like ``flax.config``).

Options keep Flax's names, so code that sets ``config.update("flax_...", v)`` ports
unchanged. Each can also be set by an environment variable of the same name in
capitals (``FLAX_RETURN_FROZENDICT=1``). Options are process settings, like
``jax.config``: they are not per-call context.

Example:
    >>> from lens import config
    >>> config.flax_return_frozendict
    False
    >>> with config.temp_flip_flag("return_frozendict", True):
    ...     config.flax_return_frozendict
    True
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING as TYPE_CHECKING  # a name flax's module has
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Config:
    """The option values; read them as attributes, change them with :meth:`update`."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_help", {})

    def _add_option(self, name: str, default: Any, help: str) -> None:
        if name in self._values:
            raise RuntimeError(f"Config option {name} already defined")
        self._values[name] = default
        self._help[name] = help

    def _read(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise LookupError(f"Unrecognized config option: {name}") from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._read(name)
        except LookupError as e:
            raise AttributeError(str(e)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):  # internals (tests patch _values)
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"Use config.update({name!r}, value) to change an option.")

    def update(self, name_or_holder: Any, value: Any, /) -> None:
        """Sets option ``name`` (or a :class:`FlagHolder`'s option) to ``value``."""
        name = getattr(name_or_holder, "name", name_or_holder)
        if name not in self._values:
            raise LookupError(f"Unrecognized config option: {name}")
        self._values[name] = value

    @contextlib.contextmanager
    def temp_flip_flag(self, var_name: str, var_value: bool) -> Iterator[None]:
        """Sets ``flax_<var_name>`` to ``var_value`` inside a ``with`` (or decorator)."""
        name = f"flax_{var_name}"
        old = self._read(name)
        try:
            self.update(name, var_value)
            yield
        finally:
            self.update(name, old)

    def __repr__(self) -> str:
        values = ", ".join(f"\n  {k}={v!r}" for k, v in self._values.items())
        return f"Config({values}\n)"


config = Config()


class FlagHolder(Generic[T]):
    """A handle on one option: ``holder.value`` reads it."""

    def __init__(self, name: str, help: str):
        self.name = name
        self.__name__ = name[5:] if name.startswith("flax_") else name
        self.__doc__ = f"Flag holder for `{name}`.\n\n{help}"

    def __bool__(self) -> bool:
        raise TypeError(
            f"bool() not supported for instances of type '{type(self).__name__}' "
            f"(did you mean to use '{type(self).__name__}.value' instead?)"
        )

    @property
    def value(self) -> T:
        """The option's current value."""
        return config._read(self.name)


def _env_bool(name: str, default: bool, upper: bool = True) -> bool:
    name = name.upper() if upper else name
    val = os.getenv(name, str(default)).lower()
    if val in ("y", "yes", "t", "true", "on", "1"):
        return True
    if val in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(f"invalid truth value {val!r} for environment {name!r}")


def bool_flag(name: str, *, default: bool, help: str) -> FlagHolder[bool]:
    """Defines a boolean option (its environment variable is ``name.upper()``)."""
    name = name.lower()
    config._add_option(name, _env_bool(name, default), help)
    return FlagHolder(name, help)


def int_flag(name: str, *, default: int | None, help: str) -> FlagHolder[int | None]:
    """Defines an integer option (its environment variable is ``name.upper()``)."""
    name = name.lower()
    raw = os.getenv(name.upper())
    config._add_option(name, int(raw) if raw not in (None, "") else default, help)
    return FlagHolder(name, help)


flax_filter_frames = bool_flag(
    "flax_filter_frames",
    default=True,
    help="Hide lens's own stack frames from tracebacks of user errors.",
)
flax_profile = bool_flag(
    "flax_profile",
    default=True,
    help="Run Module methods under jax.named_scope, so profiles name modules.",
)
flax_use_orbax_checkpointing = bool_flag(
    "flax_use_orbax_checkpointing",
    default=True,
    help="Accepted for compatibility; lens has no checkpoint manager of its own.",
)
flax_preserve_adopted_names = bool_flag(
    "flax_preserve_adopted_names",
    default=False,
    help="When adopting modules created outside, keep their names.",
)
flax_return_frozendict = bool_flag(
    "flax_return_frozendict",
    default=False,
    help="Return FrozenDicts (instead of plain dicts) from init and apply.",
)
flax_fix_rng_separator = bool_flag(
    "flax_fix_rng_separator",
    default=False,
    help="Separate the entries folded into rng keys (avoids ('ab','c') == ('a','bc')).",
)
flax_max_repr_depth = int_flag(
    "flax_max_repr_depth",
    default=None,
    help="Maximum depth of nested module reprs (None: no limit).",
)
flax_fix_rng = flax_fix_rng_separator  # Flax's Python name for this flag
flax_use_flaxlib = bool_flag(
    "flax_use_flaxlib",
    default=False,
    help="Accepted for compatibility (Flax's C++ acceleration); lens ignores it.",
)
flax_array_ref = bool_flag(
    "flax_array_ref",
    default=False,
    help="Accepted for compatibility (Flax's array refs); lens ignores it.",
)
flax_pytree_module = bool_flag(
    "flax_pytree_module",
    default=True,
    help="Whether lens.nnx Modules are pytrees by default.",
)
flax_always_shard_variable = bool_flag(
    "flax_always_shard_variable",
    default=True,
    help="Shard a lens.nnx Variable with sharding metadata when it is created.",
)
flax_hijax_variable = bool_flag(
    "flax_hijax_variable",
    default=False,
    help="Accepted for compatibility (HiJAX nnx Variables); lens ignores it.",
)
lens_strict = bool_flag(
    "lens_strict",
    default=False,
    help=(
        "Strict mode: raise or warn where Flax accepts a likely mistake silently "
        "(lens.strict; docs/reliability.md#strict-mode)."
    ),
)
nnx_graph_mode = bool_flag(
    "nnx_graph_mode",
    default=True,
    help="Whether lens.nnx APIs default to graph mode (True) or tree mode (False).",
)
nnx_graph_updates = bool_flag(
    "nnx_graph_updates",
    default=True,
    help="Whether graph mode uses dynamic (True) or simple (False) graph traversal.",
)


def static_bool_env(varname: str, default: bool) -> bool:
    """The boolean environment variable ``varname`` (read once; prefer bool_flag).

    True values: y, yes, t, true, on, 1; false values: n, no, f, false, off, 0
    (case-insensitive).

    Raises:
      ValueError: for any other value.
    """
    return _env_bool(varname, default, upper=False)


def static_int_env(varname: str, default: int | None) -> int | None:
    """The integer environment variable ``varname`` (``default`` if unset).

    Raises:
      ValueError: if it is set and not an integer.
    """
    raw = os.getenv(varname)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"invalid integer value {raw!r} for environment {varname!r}"
        ) from None
