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
from typing import Any, TypeVar, cast, dataclass_transform

import jax

T = TypeVar("T")


def field(
    pytree_node: bool = True, *, metadata: dict | None = None, **kwargs: Any
) -> Any:
    """A dataclass field; ``pytree_node=False`` makes it static metadata."""
    metadata = {**(metadata or {}), "pytree_node": pytree_node}
    return dataclasses.field(metadata=metadata, **kwargs)


@dataclass_transform(field_specifiers=(field,))
def dataclass(clz: type[T] | None = None, **kwargs: Any) -> Any:
    """Makes a frozen dataclass that is registered as a JAX pytree.

    Instances get ``replace(**updates)``.
    """
    if clz is None:
        return lambda c: dataclass(c, **kwargs)
    if "_flax_dataclass" in clz.__dict__:
        return clz
    kwargs.setdefault("frozen", True)
    data_clz = dataclasses.dataclass(**kwargs)(clz)  # type: ignore[call-overload]
    data_fields, meta_fields = [], []
    for f in dataclasses.fields(cast(Any, data_clz)):
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
    _register_state_dict(data_clz, tuple(data_fields))
    data_clz._flax_dataclass = True  # type: ignore[attr-defined]  # Flax's marker
    return data_clz


def _register_state_dict(clz: type, data_fields: tuple[str, ...]) -> None:
    """Registers ``clz`` with lens.serialization: its data fields are its state."""
    from lens import serialization

    def to_state(x: Any) -> dict[str, Any]:
        return {
            name: serialization.to_state_dict(getattr(x, name)) for name in data_fields
        }

    def from_state(x: Any, state: Any) -> Any:
        # Flax's messages, word for word; the fields are checked before any is
        # restored, so a wrong state fails before doing any work.
        where = serialization.current_path()
        for name in data_fields:
            if name not in state:
                raise serialization.SerializationError(
                    f"Missing field {name} in state dict while restoring an instance "
                    f"of {clz.__name__}, at path {where}\nRestore a state saved from "
                    f"a {clz.__name__} with fields {list(data_fields)}."
                )
        extra = [k for k in state if k not in data_fields]
        if extra:
            raise serialization.SerializationError(
                f'Unknown field(s) "{",".join(extra)}" in state dict while restoring '
                f"an instance of {clz.__name__} at path {where}\nIts fields are "
                f"{list(data_fields)}; restore a state saved from this class."
            )
        return x.replace(
            **{
                name: serialization.from_state_dict(getattr(x, name), state[name], name)
                for name in data_fields
            }
        )

    serialization.register_serialization_state(clz, to_state, from_state, override=True)


@dataclass_transform(field_specifiers=(field,))
class PyTreeNode:
    """Base class: subclasses are frozen pytree dataclasses (see :func:`dataclass`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Class keywords are dataclass options: class B(A, PyTreeNode, kw_only=True);
        # the other hooks (Generic's sets __parameters__) run without them.
        super().__init_subclass__()
        dataclass(cls, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # As flax's: each subclass's dataclass __init__ replaces this one.
        raise NotImplementedError(
            f"{type(self).__name__}(): PyTreeNode is a base class with no fields; "
            "subclass it (class Model(PyTreeNode): x: int) and build the subclass."
        )

    def replace(self: T, **updates: Any) -> T:
        """Returns a copy with the given fields replaced."""
        return dataclasses.replace(self, **updates)  # type: ignore[type-var]
