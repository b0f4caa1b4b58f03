"""flax.nnx's ``filterlib`` module: state filters."""

from lens.nnx._filters import (
    All,
    Any,
    Everything,
    Not,
    Nothing,
    OfType,
    PathContains,
    WithTag,
    to_predicate,
)

__all__ = [
    "All",
    "Any",
    "Everything",
    "Not",
    "Nothing",
    "OfType",
    "PathContains",
    "WithTag",
    "to_predicate",
]
