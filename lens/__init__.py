"""lens: a Jupyter-first neural-network library on JAX.

Submodules load lazily so that ``import lens`` stays cheap: ``lens.core`` (scopes,
``pack`` and the lifted transforms), ``lens.nn`` (the Module API, like
``flax.linen``; also reachable as ``lens.linen``), ``lens.nnx`` (eager modules),
``lens.display``, ``lens.struct``, ``lens.serialization``, ``lens.errors``,
``lens.traverse_util``, ``lens.training``, ``lens.typing``, ``lens.jax_utils`` and
``lens.config``. Displays: ``lens.show``, ``lens.trace``, ``lens.show_lifting``,
``lens.diff``, ``lens.explore``; ``%load_ext lens`` in a notebook. Strict mode
(``lens.strict``, ``LENS_STRICT=1``, ``%lens_strict on``) raises or warns where
Flax accepts a likely mistake silently (docs/reliability.md#strict-mode).

``lens.alias_flax()`` (or ``LENS_AS_FLAX=1`` in the environment before ``import
lens``) makes ``import flax`` resolve to lens's modules (docs/porting.md).
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from lens._flax_alias import alias_flax as alias_flax
from lens._flax_alias import alias_flax_if_requested as _alias_flax_if_requested
from lens.version import __version__ as __version__

_SUBMODULES = {
    "compilation_cache",
    "configurations",
    "core",
    "cursor",
    "display",
    "errors",
    "experimental",
    "ids",
    "io",
    "jax_utils",
    "metrics",
    "nn",
    "nnx",
    "serialization",
    "struct",
    "training",
    "traceback_util",
    "traverse_util",
    "typing",
    "version",
}
_ATTRS = {
    "config": ("lens.configurations", "config"),
    # Flax's name for the module API: `from lens import linen as nn` ports unchanged.
    "linen": ("lens", "nn"),
    "trace": ("lens.core._trace", "trace_packs"),
    "trace_packs": ("lens.core._trace", "trace_packs"),
    "show": ("lens.display", "show"),
    "show_lifting": ("lens.display", "show_lifting"),
    "diff": ("lens.display", "diff"),
    "explore": ("lens.display", "explore"),
    "strict": ("lens._strict", "strict"),
    "is_strict": ("lens._strict", "is_strict"),
    "recompiles": ("lens._instruments.recompiles", "recompiles"),
    "memory": ("lens._instruments.memory", "memory"),
    "sharding": ("lens._instruments.sharding", "sharding"),
    "compile_time": ("lens._instruments.compile_time", "compile_time"),
}


def __getattr__(name: str) -> _Any:
    if name in _SUBMODULES:
        return _importlib.import_module(f"lens.{name}")
    if name in _ATTRS:
        module, attr = _ATTRS[name]
        return getattr(_importlib.import_module(module), attr)
    raise AttributeError(f"module 'lens' has no attribute {name!r}")


def __dir__() -> list[str]:
    public = {n for n in globals() if not n.startswith("_")} - {"annotations"}
    return sorted(public | _SUBMODULES | set(_ATTRS))


_alias_flax_if_requested()


def load_ipython_extension(ipython: _Any) -> None:
    """``%load_ext lens``: variable dicts display as variable collections, JAX's
    persistent compilation cache is on (see :mod:`lens.compilation_cache`), and
    ``%lens_strict [on|off]`` switches strict mode, ``%lens_recompiles [on|off]``
    explains each retrace under the cell that caused it."""
    from lens._strict import load_magic
    from lens.compilation_cache import enable_compilation_cache
    from lens.display import load_ipython_extension as load

    load(ipython)
    load_magic(ipython)
    enable_compilation_cache()


def unload_ipython_extension(ipython: _Any) -> None:
    """``%unload_ext lens``."""
    from lens._strict import unload_magic
    from lens.display import unload_ipython_extension as unload

    unload(ipython)
    unload_magic(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds lens's pack-trace renderer (built into lens/labextension)."""
    return [{"src": "labextension", "dest": "lens-pack"}]
