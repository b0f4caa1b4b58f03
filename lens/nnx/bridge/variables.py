"""Variables across the bridge: Linen collections and boxes as nnx Variables and
back, and ``with_partitioning`` for either side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax

from lens.core.meta import AxisMetadata, Partitioned
from lens.nnx.spmd import get_var_pspec
from lens.nnx.spmd import with_partitioning as _nnx_with_partitioning
from lens.nnx.variablelib import Variable, variable_type_from_name
from lens.struct import PyTreeNode, field

A = TypeVar("A")
B = TypeVar("B")


def to_nnx_var(collection: str, x: Any) -> Variable:
    vtype = variable_type_from_name(collection, allow_register=True)
    if isinstance(x, NNXMeta):
        return x.to_nnx_variable()
    if isinstance(x, Partitioned):
        return vtype(
            x.value,
            out_sharding=tuple(x.names),
            mesh=x.mesh,
            eager_sharding=False,
            linen_meta_type=Partitioned,
        )
    if isinstance(x, AxisMetadata):
        return vtype(x.unbox(), linen_meta_type=type(x))
    return vtype(x)


class NNXMeta(PyTreeNode, AxisMetadata[A]):
    """An nnx Variable's value in Linen variables, boxed with its type and
    metadata (what a Variable with metadata becomes across the bridge); it
    knows its partition spec from ``out_sharding``."""

    var_type: type[Variable[Any]] = field(pytree_node=False)
    value: Any = field(pytree_node=True)
    metadata: dict[str, Any] = field(pytree_node=False)

    def unbox(self) -> A:
        return self.value

    def replace_boxed(self, val: B) -> NNXMeta[B]:
        return self.replace(value=val)  # type: ignore[return-value]

    def add_axis(self, index: int, params: dict[Any, Any]) -> NNXMeta[A]:
        return self  # as flax: variable hooks are not run across the bridge

    def remove_axis(self, index: int, params: dict[Any, Any]) -> NNXMeta[A]:
        return self

    def get_partition_spec(self) -> jax.sharding.PartitionSpec:
        spec = get_var_pspec(self.to_nnx_variable())
        return spec if spec is not None else jax.sharding.PartitionSpec()

    def to_nnx_variable(self) -> Variable:
        return self.var_type(self.value, **{"eager_sharding": False, **self.metadata})


# metadata every Variable may carry (flax's Variable.required_metadata): a
# Variable with only these is plain across the bridge
_REQUIRED_METADATA = frozenset({"eager_sharding", "hijax", "ref"})


def to_linen_var(v: Variable) -> Any:
    """An nnx Variable as a Linen value: back in its Linen box when it came
    from one (``nn.Partitioned`` with ``out_sharding``), its plain value when it
    has no metadata, else an :class:`NNXMeta`."""
    metadata = {k: x for k, x in v.metadata.items() if k not in _REQUIRED_METADATA}
    names = metadata.get("out_sharding")
    if metadata.get("linen_meta_type") is Partitioned and names:
        return Partitioned(v.value, names=tuple(names), mesh=metadata.get("mesh"))
    if "linen_meta_type" in metadata or not metadata:
        return v.value
    return NNXMeta(type(v), v.value, metadata)


def with_partitioning(
    fn: Callable[..., Any], names: Any, mesh: jax.sharding.Mesh | None = None
) -> Callable[..., Any]:
    """An initializer whose nnx variables are annotated with ``names`` and come
    back to Linen as ``nn.Partitioned``."""
    return _nnx_with_partitioning(fn, names, mesh, linen_meta_type=Partitioned)
