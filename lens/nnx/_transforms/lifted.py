"""Small records the lifted transforms pass through JAX, under flax.nnx's names:
``Broadcasted`` (a value every step of a scan sees unchanged), ``ValueMetadata``
(a Variable as a pytree of its value, with its type and metadata as static
data) and ``LiftedModule`` (the base of a module whose calls go through a
transform of a submodule).
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from typing import Any, Generic, TypeVar

import jax

from lens import struct
from lens._facades import show_at_flax_paths
from lens.nnx._objects.module import Module
from lens.nnx._variables.variable import Variable
from lens.nnx.proxy_caller import CallableProxy, DelayedAccessor

M = TypeVar("M", bound=Module)


class Broadcasted(struct.PyTreeNode):
    """A value broadcast to every step of ``nnx.scan`` (flax.nnx's marker): the
    loop carries it unchanged, so each step reads ``data`` as it was before the
    loop."""

    data: Any


@dataclasses.dataclass(frozen=True)
class ValueMetadata:
    """A Variable as a pytree: its ``value`` is the one leaf, its ``var_type``
    and ``metadata`` are static (flax.nnx's record for ``eval_shape`` and the
    other transforms that return Variables through JAX)."""

    var_type: type[Variable]
    value: Any
    metadata: dict[str, Any]


jax.tree_util.register_pytree_node(
    ValueMetadata,
    lambda vm: ((vm.value,), (vm.var_type, tuple(sorted(vm.metadata.items())))),
    lambda aux, children: ValueMetadata(aux[0], children[0], dict(aux[1])),
)


def to_value_metadata(node: Any) -> Any:
    """``node`` with each Variable replaced by its :class:`ValueMetadata`."""

    def convert(x: Any) -> Any:
        if isinstance(x, Variable):
            return ValueMetadata(x.var_type, x.get_value(), dict(x.get_metadata()))
        return x

    return jax.tree.map(convert, node, is_leaf=lambda x: isinstance(x, Variable))


def to_variable(node: Any) -> Any:
    """The inverse of :func:`to_value_metadata`: each :class:`ValueMetadata` as a
    new Variable of its type, value and metadata."""

    def convert(x: Any) -> Any:
        if isinstance(x, ValueMetadata):
            return x.var_type.from_metadata(x.value, x.metadata)
        return x

    return jax.tree.map(convert, node, is_leaf=lambda x: isinstance(x, ValueMetadata))


class LiftedModule(Generic[M], Module):
    """A module whose calls run a transform over a submodule (flax.nnx's base
    class): a subclass gives the submodule (``_submodule``) and how one call
    goes through the transform (``_call(accessor, *args, **kwargs)``, where
    ``accessor(submodule)`` is the method called). ``lifted.call.method(x)``
    calls another method of the innermost submodule through every lifted level.
    """

    @abstractmethod
    def _call(self, accessor: DelayedAccessor, *args: Any, **kwargs: Any) -> Any:
        pass

    @property
    @abstractmethod
    def _submodule(self) -> M:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)

    @property
    def call(self) -> Any:
        """A proxy: ``call(x)`` calls the submodule, ``call.method(x)`` one of
        its methods, through the transform of every lifted level."""
        proxy: Any = CallableProxy(self._call)
        inner = self._submodule
        while isinstance(inner, LiftedModule):  # each level is reached by .call
            proxy = proxy.call
            inner = inner._submodule
        return proxy


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
