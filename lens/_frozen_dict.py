"""``FrozenDict``, ``freeze``, ``unfreeze``, ``copy``, ``pop`` for code ported from Flax.

lens variables are plain dicts (``init``/``apply`` return them), so most code never
needs these. They exist so that ported code which builds or unpacks frozen dicts
keeps running: ``FrozenDict`` is an immutable mapping and a JAX pytree.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import jax

from lens._facades import show_at_flax_paths


class FrozenKeysView(collections.abc.KeysView):
    """The keys of a FrozenDict (repr ``frozen_dict_keys([...])``)."""

    def __repr__(self) -> str:
        return f"frozen_dict_keys({list(self)})"


class FrozenValuesView(collections.abc.ValuesView):
    """The values of a FrozenDict (repr ``frozen_dict_values([...])``)."""

    def __repr__(self) -> str:
        return f"frozen_dict_values({list(self)})"


K = TypeVar("K")
V = TypeVar("V")


class FrozenDict(Mapping[K, V]):
    """An immutable, hashable nested mapping (a JAX pytree, keys in sorted order).

    Example:
        >>> d = FrozenDict({"params": {"w": 1}})
        >>> d["params"]["w"], type(d["params"]).__name__
        (1, 'FrozenDict')
        >>> unfreeze(d.copy({"extra": 2}))
        {'params': {'w': 1}, 'extra': 2}
    """

    __slots__ = ("_dict", "_hash")

    def __init__(self, *args: Any, **kwargs: Any):
        raw = dict(*args, **kwargs)
        self._dict: dict[Any, Any] = {
            k: FrozenDict(v)
            if isinstance(v, Mapping) and not isinstance(v, FrozenDict)
            else v
            for k, v in raw.items()
        }
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._dict[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __setitem__(self, key: str, value: Any) -> None:
        raise ValueError(
            "FrozenDict is immutable; use .copy({key: value}) or unfreeze() to edit."
        )

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((k, v) for k, v in sorted(self._dict.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._dict == other._dict
        return isinstance(other, Mapping) and self._dict == dict(other)

    def __repr__(self) -> str:
        return self.pretty_repr()

    def keys(self) -> FrozenKeysView:  # type: ignore[override]
        """The keys (a view with a readable repr)."""
        return FrozenKeysView(self)

    def values(self) -> FrozenValuesView:  # type: ignore[override]
        """The values (a view with a readable repr)."""
        return FrozenValuesView(self)

    def pretty_repr(self, num_spaces: int = 4) -> str:
        """An indented repr, one key per line (Flax's ``FrozenDict`` repr)."""
        return f"FrozenDict({_pretty(self, num_spaces, 0)})"

    def copy(self, add_or_replace: Mapping[str, Any] | None = None) -> FrozenDict:
        """A new FrozenDict with ``add_or_replace`` merged in."""
        return FrozenDict({**self._dict, **(add_or_replace or {})})

    def pop(self, key: str) -> tuple[FrozenDict, Any]:
        """``(a FrozenDict without key, its value)``."""
        rest = dict(self._dict)
        value = rest.pop(key)
        return FrozenDict(rest), value

    def unfreeze(self) -> dict[str, Any]:
        """A plain nested dict."""
        return unfreeze(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # ``(FrozenDict, (plain dict,))`` as in Flax: with __slots__ and no
        # __getstate__, the default protocol-0/1 reduce fails.
        return FrozenDict, (self.unfreeze(),)

    def tree_flatten_with_keys(self) -> tuple[tuple, tuple]:
        keys = tuple(sorted(self._dict))
        return tuple((jax.tree_util.DictKey(k), self._dict[k]) for k in keys), keys

    @classmethod
    def tree_unflatten(cls, keys: tuple, values: tuple) -> FrozenDict:
        out = cls.__new__(cls)
        out._dict = dict(zip(keys, values))
        out._hash = None
        return out


jax.tree_util.register_pytree_with_keys_class(FrozenDict)


def unfreeze(x: Any) -> Any:
    """Returns a fresh plain nested dict with the same leaves.

    Example:
        >>> unfreeze({"params": {"w": 1}})
        {'params': {'w': 1}}
    """
    if isinstance(x, Mapping):
        return {k: unfreeze(v) for k, v in x.items()}
    return x


def freeze(xs: Mapping[str, Any]) -> FrozenDict:
    """A :class:`FrozenDict` of ``xs``."""
    return FrozenDict(xs)


def copy(x: Mapping[str, Any], add_or_replace: Mapping[str, Any] | None = None) -> Any:
    """A copy of ``x`` (dict or FrozenDict, same type back) with entries merged in."""
    if isinstance(x, FrozenDict):
        return x.copy(add_or_replace)
    return {**unfreeze(x), **(add_or_replace or {})}


def pop(x: Mapping[str, Any], key: str) -> tuple[Any, Any]:
    """``(x without key, x[key])``, keeping the type of ``x``."""
    if isinstance(x, FrozenDict):
        return x.pop(key)
    rest = unfreeze(x)
    value = rest.pop(key)
    return rest, value


def _register() -> None:
    from lens import serialization

    serialization.register_serialization_state(
        FrozenDict,
        serialization._dict_state_dict,
        serialization._restore_dict,
        override=True,
    )


_register()


def _pretty(d: Any, num_spaces: int, depth: int) -> str:
    if not isinstance(d, Mapping):
        return repr(d)
    if not d:
        return "{}"
    pad = " " * (num_spaces * (depth + 1))
    body = "".join(
        f"{pad}{k}: {_pretty(v, num_spaces, depth + 1)},\n" for k, v in d.items()
    )
    return "{\n" + body + " " * (num_spaces * depth) + "}"


def pretty_repr(x: Any, num_spaces: int = 4) -> str:
    """A readable, indented repr of a nested dict (one key per line).

    Example:
        >>> print(pretty_repr({"params": {"b": (2,), "w": (3, 2)}}))
        {
            params: {
                b: (2,),
                w: (3, 2),
            },
        }
    """
    if isinstance(x, FrozenDict):
        return x.pretty_repr(num_spaces)
    if not isinstance(x, Mapping):
        return repr(x)
    return _pretty(x, num_spaces, 0)


show_at_flax_paths(__name__)
