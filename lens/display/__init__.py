"""Notebook displays (``lens.display``; the main names are also on ``lens``).

Every lens object displays in three forms: treescope (``__treescope_repr__``), rich
(``__rich__``) and a MIME bundle with ``text/plain`` and script-free ``text/html``.
Displays never raise into a notebook: on error they warn and fall back to ``repr``.
"""

from typing import Any as _Any

# fmt: off
# isort: off
from lens.display._base import View
from lens.display._compile_time import CompileTimeView
from lens.display._diff import DiffView, diff
from lens.display._explore import Explorer, explore
from lens.display._extension import extension_active, extension_status
from lens.display._memory import MemoryView
from lens.display._module import BoxView, ModuleView, ScopeView
from lens.display._pack import PackTraceView, pack_mimebundle
from lens.display._recompiles import RecompilesView
from lens.display._safe import DisplayWarning
from lens.display._sharding import ShardingView
from lens.display._show import (
    load_ipython_extension, show, show_lifting, unload_ipython_extension, view_of,
)
from lens.display._variables import VariablesView
# isort: on
# fmt: on


# The one registry (lens/_views.py): which view draws each view name that a class
# declares (``__lens_view__``); names, not classes, so loading lens.display imports
# none of lens.nn / lens.nnx.
def _register_views() -> None:
    from lens._views import register
    from lens.display._nnx import nnx_view

    register("axis metadata", BoxView)
    register("pack trace", PackTraceView)
    register("scope", ScopeView)
    register("linen module", ModuleView)
    register("nnx object", nnx_view)
    register("nnx state", nnx_view)
    register("nnx variable", BoxView)
    register("recompiles", RecompilesView)
    register("memory", MemoryView)
    register("compile time", CompileTimeView)
    register("sharding", ShardingView)


_register_views()


def __getattr__(name: str) -> _Any:
    """``live`` and ``Live`` load on first use (lens.display._live, threads and all)."""
    if name in ("live", "Live"):
        from lens.display import _live

        return getattr(_live, name)
    raise AttributeError(f"module 'lens.display' has no attribute {name!r}")
