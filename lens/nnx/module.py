"""flax.nnx's ``module`` module: :class:`Module` and its functions."""

from lens.nnx._module import (
    Module,
    capture,
    iter_children,
    iter_module_children,
    iter_modules,
    view,
    view_info,
    with_attributes,
)

__all__ = [
    "Module",
    "capture",
    "iter_children",
    "iter_module_children",
    "iter_modules",
    "view",
    "view_info",
    "with_attributes",
]
