"""Variables across the bridge: Linen collections and boxes as nnx Variables and
back, and ``with_partitioning`` for either side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from lens.core.meta import AxisMetadata, Partitioned
from lens.nnx.spmd import with_partitioning as _nnx_with_partitioning
from lens.nnx.variablelib import Variable, variable_type_from_name


def to_nnx_var(collection: str, x: Any) -> Variable:
    vtype = variable_type_from_name(collection, allow_register=True)
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


def to_linen_var(v: Variable) -> Any:
    """An nnx Variable as a Linen value: boxed in ``nn.Partitioned`` when it has
    ``out_sharding`` metadata, else its plain value."""
    names = v.metadata.get("out_sharding")
    if names:
        return Partitioned(v.value, names=tuple(names), mesh=v.metadata.get("mesh"))
    return v.value


def with_partitioning(
    fn: Callable[..., Any], names: Any, mesh: jax.sharding.Mesh | None = None
) -> Callable[..., Any]:
    """An initializer whose nnx variables are annotated with ``names`` and come
    back to Linen as ``nn.Partitioned``."""
    return _nnx_with_partitioning(fn, names, mesh, linen_meta_type=Partitioned)
