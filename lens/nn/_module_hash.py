"""``nn.jit``'s cache key for a module: a static, hashable fingerprint of its
structure (fields, naming state, scope mutability, flags and rng counts), never
of its variables, held with a weak reference so the cache keeps no model alive.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from lens import serialization
from lens._facades import show_at_flax_paths
from lens.core import DenyList
from lens.nn._module import Module


@dataclasses.dataclass(frozen=True)
class _HashableProxy:
    """A static, hashable stand-in for a module (``nn.jit``'s cache key).

    It holds a weak reference to the module and a hash of its structure (fields,
    naming state, scope mutability, flags and rng counts): never the module's
    variables, so the cache keeps no model alive.
    """

    module_ref: weakref.ReferenceType
    hash_key: int
    # The naming state of this call's module, for the module rebuilt inside: a
    # retrace (new fingerprint) must use its own call's state, not the first's.
    state: Any = None

    @classmethod
    def from_module(cls, module: Module, state: Any = None) -> _HashableProxy:
        return cls(weakref.ref(module), hash(_fingerprint(module, (), {})), state)

    def __hash__(self) -> int:
        return self.hash_key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _HashableProxy) and self.hash_key == other.hash_key

    @property
    def module(self) -> Module:
        m = self.module_ref()
        assert m is not None, "nn.jit: the module was garbage collected mid-call"
        return m


def _check_hashable(path: tuple[str, ...], x: Any) -> None:
    try:
        hash(x)
    except Exception as e:
        raise ValueError(
            f"Value at '{'/'.join(path)}' is not hashable: {e}\nnn.jit keys its cache "
            "on the module's attributes; make them hashable (tuples, not lists), or "
            "pass the value as a call argument."
        ) from e


def _fingerprint(obj: Any, path: tuple[str, ...], seen: dict[Any, int]) -> Any:
    def sub(name: str, value: Any) -> tuple[str, Any]:
        return name, _fingerprint(value, (*path, name), seen)

    if isinstance(obj, str):
        return obj
    if isinstance(obj, Module):
        if obj._id in seen:
            return type(obj), seen[obj._id]
        seen[obj._id] = len(seen)
        parts: list[Any] = []
        for f in dataclasses.fields(obj):  # type: ignore[arg-type]
            if f.name not in ("parent", "name") and hasattr(obj, f.name):
                parts.append(sub(f.name, getattr(obj, f.name)))
        st = obj._state
        parts.append(
            (
                "_state",
                (
                    st.in_compact_method,
                    st.in_setup,
                    int(st.setup_called),
                    st.is_initialized,
                    tuple(sorted(st.autoname_cursor.items())),
                ),
            )
        )
        scope = obj.scope
        if scope is not None:
            static = (
                _fingerprint(scope.mutable, (*path, "mutable"), seen),
                tuple(sorted(scope.flags.items(), key=repr)),
                scope.rng_counters.snapshot(),
                tuple(
                    sorted(
                        (k, tuple(sorted(map(str, v))))
                        for k, v in scope.reservations.items()
                    )
                ),
            )
            _check_hashable((*path, "scope"), static)
            parts.append(("scope", static))
        return type(obj), tuple(parts)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return type(obj), tuple(
            sub(f.name, getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if hasattr(obj, f.name)
        )
    if isinstance(obj, DenyList):
        return DenyList, _fingerprint(obj.deny, path, seen)
    if isinstance(obj, dict):
        return tuple((k, sub(str(k), v)) for k, v in obj.items())
    if serialization.is_serializable(obj):
        return type(obj), _fingerprint(serialization.to_state_dict(obj), path, seen)
    if isinstance(obj, set | frozenset):
        return type(obj), tuple(sorted(map(repr, obj)))
    if isinstance(obj, tuple | list):
        return tuple(sub(str(i), v) for i, v in enumerate(obj))
    _check_hashable(path, obj)
    return obj


show_at_flax_paths(__name__)
