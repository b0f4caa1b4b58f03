"""flax.nnx's ``spmd`` module: sharding annotations on variables."""

from lens.core.spmd import get_logical_axis_rules, logical_axis_rules
from lens.nnx._spmd import (
    PARTITION_NAME,
    add_axis,
    as_abstract,
    get_abstract_model,
    get_named_sharding,
    get_partition_spec,
    get_var_pspec,
    remove_axis,
    with_partitioning,
)

__all__ = [
    "PARTITION_NAME",
    "add_axis",
    "as_abstract",
    "get_abstract_model",
    "get_logical_axis_rules",
    "get_named_sharding",
    "get_partition_spec",
    "get_var_pspec",
    "logical_axis_rules",
    "remove_axis",
    "with_partitioning",
]
