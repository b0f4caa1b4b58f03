"""The one place lens objects find their notebook views.

lens.core, lens.nn and lens.nnx do not import lens.display. Each displayable class
is *installed* here (it gets ``_repr_mimebundle_``, ``__rich__`` and
``__treescope_repr__``), and lens.display, when it loads, *registers* one view
factory per type, by qualified name (so registering imports nothing). The first
display of an object loads lens.display by name; a failing view falls back to the
plain repr with a ``DisplayWarning``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# type "module.QualName" -> view factory. Filled once when lens.display is
# imported (static configuration, not per-call context).
_FACTORIES: dict[str, Callable[[Any], Any]] = {}


def register(qualified_name: str, factory: Callable[[Any], Any]) -> None:
    """Shows instances of the type ``qualified_name`` (and its subclasses) with
    ``factory(obj)`` (a lens.display View)."""
    _FACTORIES[qualified_name] = factory


def view_for(obj: Any) -> Any | None:
    """The registered view of ``obj`` (the closest class in its MRO), or None."""
    importlib.import_module("lens.display")  # registers the factories
    for klass in type(obj).__mro__:
        factory = _FACTORIES.get(f"{klass.__module__}.{klass.__qualname__}")
        if factory is not None:
            return factory(obj)
    return None


def _safe(kind: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    safe = importlib.import_module("lens.display._safe").safe
    return safe(kind)(fn)


def _bundle(obj: Any) -> dict[str, Any]:
    view = view_for(obj)
    return view._repr_mimebundle_() if view is not None else {"text/plain": repr(obj)}


def _rich(obj: Any) -> Any:
    view = view_for(obj)
    return view.__rich__() if view is not None else repr(obj)


_ALL = ("bundle", "rich", "treescope")


def install(cls: type, protocols: tuple[str, ...] = _ALL) -> type:
    """Gives ``cls`` the notebook protocols (``bundle``: ``_repr_mimebundle_``,
    ``rich``: ``__rich__``, ``treescope``: ``__treescope_repr__``), each answered
    by its registered view."""

    def _repr_mimebundle_(self: Any, include: Any = None, exclude: Any = None) -> Any:
        return _safe("bundle", _bundle)(self)

    def __rich__(self: Any) -> Any:  # noqa: N807 - rich's protocol name
        return _safe("text", _rich)(self)

    def __treescope_repr__(  # noqa: N807 - treescope's protocol name
        self: Any, path: str | None, subtree_renderer: Any
    ) -> Any:
        view = view_for(self)
        if view is None:
            return NotImplemented
        return view.__treescope_repr__(path, subtree_renderer)

    methods = {
        "bundle": ("_repr_mimebundle_", _repr_mimebundle_),
        "rich": ("__rich__", __rich__),
        "treescope": ("__treescope_repr__", __treescope_repr__),
    }
    for protocol in protocols:
        name, method = methods[protocol]
        setattr(cls, name, method)
    return cls


__all__ = ["install", "register", "view_for"]
