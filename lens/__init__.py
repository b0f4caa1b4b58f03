"""lens: a Jupyter-first neural-network library on JAX.

Submodules load lazily so that ``import lens`` stays cheap: ``lens.core`` (scopes,
``pack`` and the lifted transforms), ``lens.nn`` (the Module API, like
``flax.linen``), ``lens.display``, ``lens.struct``, ``lens.serialization`` and
``lens.errors``. Displays: ``lens.show``, ``lens.trace``, ``lens.show_lifting``,
``lens.diff``, ``lens.explore``; ``%load_ext lens`` in a notebook.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = {"core", "nn", "struct", "serialization", "errors", "display"}
_ATTRS = {
    "trace": ("lens.core._trace", "trace_packs"),
    "trace_packs": ("lens.core._trace", "trace_packs"),
    "show": ("lens.display", "show"),
    "show_lifting": ("lens.display", "show_lifting"),
    "diff": ("lens.display", "diff"),
    "explore": ("lens.display", "explore"),
}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"lens.{name}")
    if name in _ATTRS:
        module, attr = _ATTRS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'lens' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | set(_ATTRS))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lens``: variable dicts display as variable collections."""
    from lens.display import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext lens``."""
    from lens.display import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds lens's pack-trace renderer (built into lens/labextension)."""
    return [{"src": "labextension", "dest": "lens-pack"}]
