"""The per-variable specs that ``nnx.prefix`` gives and lens's transforms read:
a :class:`PrefixAxes` is a :class:`~lens.nnx.StateAxes` (one filter per distinct
prefix) that also reads like the object (``specs.linear.kernel``).

Below both :mod:`lens.nnx.extract` (which builds them) and
:mod:`lens.nnx._transforms.recipe` (which reads a tree-mode prefix through
:func:`tree_prefix_axes`), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax

from lens.nnx._transforms.specs import StateAxes


class _AtPaths:
    """A filter: the variables at exactly these paths."""

    def __init__(self, *paths: tuple):
        self.paths = frozenset(paths)

    def __call__(self, path: tuple, x: Any) -> bool:
        return tuple(path) in self.paths

    def __repr__(self) -> str:
        return f"AtPaths{tuple(sorted(self.paths, key=repr))!r}"


class PrefixAxes(StateAxes):
    """An object's specs made by :func:`prefix` (flax.nnx's tree-shaped prefix:
    transforms take it in every mode). Read like the object (``specs.kernel``,
    ``specs.linear.bias``) or, as flax's graph-mode result, by ``specs.state``."""

    from_prefix = True

    def __init__(self, filter_axes: Any, by_path: Mapping[tuple, Any] = {}):  # noqa: B006
        super().__init__(filter_axes)
        self._by_path = dict(by_path)

    @property
    def state(self) -> dict[Any, Any]:
        """The prefixes as a nested dict of the object's attributes."""
        out: dict[Any, Any] = {}
        for path, value in self._by_path.items():
            d = out
            for k in path[:-1]:
                d = d.setdefault(k, {})
            d[path[-1]] = value
        return out

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        sub = self.state
        if name not in sub:
            raise AttributeError(f"{type(self).__name__} has no variable {name!r}")
        return _as_attrs(sub[name])


class _Attrs(dict):
    """A nested dict also read by attribute (``specs.linear.kernel``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return _as_attrs(self[name])
        except KeyError:
            raise AttributeError(name) from None


def _as_attrs(x: Any) -> Any:
    return _Attrs(x) if isinstance(x, dict) else x


def axes_by_path(by_path: dict[tuple, Any], cls: type[PrefixAxes]) -> PrefixAxes:
    """A PrefixAxes of ``{variable path: prefix}``: one filter per prefix."""
    groups: dict[Any, list[tuple]] = {}
    order: list[Any] = []
    for path, p in by_path.items():
        key = _hashable(p)
        if key not in groups:
            groups[key] = []
            order.append(p)
        groups[key].append(path)
    if len(order) == 1:
        return cls({...: order[0]}, by_path)
    return cls({_AtPaths(*groups[_hashable(p)]): p for p in order}, by_path)


def tree_prefix_axes(tree_prefix: Any) -> PrefixAxes:
    """A tree-mode :func:`prefix` result (the object's own pytree with a prefix
    for each Variable) as the per-variable spec lens's transforms read."""
    leaves = jax.tree_util.tree_flatten_with_path(
        tree_prefix, is_leaf=lambda x: x is None
    )[0]
    return axes_by_path({key_path(kp): p for kp, p in leaves}, PrefixAxes)


def key_path(keypath: Any) -> tuple:
    return tuple(_key(k) for k in keypath)


def _hashable(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return id(x)


def _key(k: Any) -> Any:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return k
