"""flax.nnx's ``variablelib`` module: Variable types and their metadata."""

from lens.nnx._variables import (
    BatchStat,
    Cache,
    Intermediate,
    OptState,
    Param,
    Perturbation,
    RngCount,
    RngKey,
    RngState,
    Variable,
    VariableMetadata,
    register_variable_name,
    use_eager_sharding,
    using_eager_sharding,
    variable_name_from_type,
    variable_type_from_name,
    with_metadata,
)

VariableState = Variable  # flax.nnx's former name for a detached variable

__all__ = [
    "BatchStat",
    "Cache",
    "Intermediate",
    "OptState",
    "Param",
    "Perturbation",
    "RngCount",
    "RngKey",
    "RngState",
    "Variable",
    "VariableMetadata",
    "VariableState",
    "register_variable_name",
    "use_eager_sharding",
    "using_eager_sharding",
    "variable_name_from_type",
    "variable_type_from_name",
    "with_metadata",
]
