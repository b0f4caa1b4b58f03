"""flax.nnx's ``proxy_caller``: delayed attribute/item access and the callable
proxy built on it, and :class:`ApplyCaller`, the object that
``nnx.call((graphdef, state)).method(...)`` returns (defined with ``call`` in
:mod:`lens.nnx.graphlib`).

>>> from lens.nnx.proxy_caller import CallableProxy
>>> proxy = CallableProxy(lambda accessor, x: accessor({"f": [abs]})(x))
>>> proxy["f"][0](-2)
2
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax

from lens.nnx._graph.ops import ApplyCaller as ApplyCaller


@dataclasses.dataclass(frozen=True)
class GetItem:
    """One ``x[key]`` step of a :class:`DelayedAccessor`."""

    key: Any


@dataclasses.dataclass(frozen=True)
class GetAttr:
    """One ``x.name`` step of a :class:`DelayedAccessor`."""

    name: str


@dataclasses.dataclass(frozen=True)
class DelayedAccessor:
    """A path of attribute and item accesses, recorded now (``acc.a[0].b``) and
    applied later to an object (``acc(x)`` is ``x.a[0].b``). A static pytree:
    it can be passed through ``jax.jit`` as part of the structure."""

    actions: tuple[GetItem | GetAttr, ...] = ()

    def __call__(self, x: Any) -> Any:
        for action in self.actions:
            x = (
                x[action.key]
                if isinstance(action, GetItem)
                else getattr(x, action.name)
            )
        return x

    def __getattr__(self, name: str) -> DelayedAccessor:
        if name.startswith("__") and name.endswith("__"):  # copy, pickle probes
            raise AttributeError(name)
        return DelayedAccessor((*self.actions, GetAttr(name)))

    def __getitem__(self, key: Any) -> DelayedAccessor:
        return DelayedAccessor((*self.actions, GetItem(key)))


jax.tree_util.register_static(DelayedAccessor)


class _AccessorCall(Protocol):
    def __call__(
        self, accessor: DelayedAccessor, /, *args: Any, **kwargs: Any
    ) -> Any: ...


class CallableProxy:
    """Records attribute and item accesses (``proxy.a["b"].method``) and, when
    called, calls ``callable(accessor, *args, **kwargs)`` with the recorded
    :class:`DelayedAccessor`."""

    def __init__(
        self, callable: _AccessorCall, accessor: DelayedAccessor | None = None
    ):
        self._callable = callable
        self._accessor = DelayedAccessor() if accessor is None else accessor

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._callable(self._accessor, *args, **kwargs)

    def __getattr__(self, name: str) -> CallableProxy:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return CallableProxy(self._callable, getattr(self._accessor, name))

    def __getitem__(self, key: Any) -> CallableProxy:
        return CallableProxy(self._callable, self._accessor[key])
