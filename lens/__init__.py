"""lens: a Jupyter-first neural-network library on JAX.

Submodules load lazily so that ``import lens`` stays cheap: ``lens.core`` (scopes,
``pack`` and the lifted transforms), ``lens.nn`` (the Module API, like
``flax.linen``), ``lens.struct``, ``lens.serialization`` and ``lens.errors``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = {"core", "nn", "struct", "serialization", "errors"}
_ATTRS = {
    "trace": ("lens.core._trace", "trace_packs"),
    "trace_packs": ("lens.core._trace", "trace_packs"),
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
