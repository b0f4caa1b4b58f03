"""Dataclasses that are JAX pytrees (``lens.struct``, like ``flax.struct``).

Fields are pytree children unless marked ``field(pytree_node=False)``, in which case
they are static metadata (part of the tree structure).

Example:
    >>> import jax
    >>> class Partial(PyTreeNode):
    ...     fn: object = field(pytree_node=False)
    ...     args: tuple = ()
    ...     def __call__(self, *a):
    ...         return self.fn(*(tuple(self.args) + a))
    >>> p = Partial(lambda x, y: x + y, (1,))
    >>> jax.tree_util.tree_leaves(p), p(2)
    ([1], 3)
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform

import jax

T = TypeVar("T")


def field(pytree_node: bool = True, **kwargs: Any) -> Any:
    """A dataclass field; ``pytree_node=False`` makes it static metadata."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["pytree_node"] = pytree_node
    return dataclasses.field(metadata=metadata, **kwargs)


@dataclass_transform(field_specifiers=(field,))
def dataclass(clz: type[T] | None = None, **kwargs: Any) -> Any:
    """Makes a frozen dataclass that is registered as a JAX pytree.

    Instances get ``replace(**updates)``.
    """
    if clz is None:
        return lambda c: dataclass(c, **kwargs)
    if "_lens_dataclass" in clz.__dict__:
        return clz
    kwargs.setdefault("frozen", True)
    data_clz = dataclasses.dataclass(**kwargs)(clz)  # type: ignore[call-overload]
    data_fields, meta_fields = [], []
    for f in dataclasses.fields(data_clz):
        if not f.init:
            continue
        (data_fields if f.metadata.get("pytree_node", True) else meta_fields).append(
            f.name
        )

    def replace(self: Any, **updates: Any) -> Any:
        return dataclasses.replace(self, **updates)

    data_clz.replace = replace  # type: ignore[attr-defined]
    jax.tree_util.register_dataclass(
        data_clz, data_fields=data_fields, meta_fields=meta_fields
    )
    data_clz._lens_dataclass = True  # type: ignore[attr-defined]
    return data_clz


@dataclass_transform(field_specifiers=(field,))
class PyTreeNode:
    """Base class: subclasses are frozen pytree dataclasses (see :func:`dataclass`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(cls)

    def replace(self: T, **updates: Any) -> T:
        """Returns a copy with the given fields replaced."""
        return dataclasses.replace(self, **updates)  # type: ignore[type-var]
