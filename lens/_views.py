"""The one place lens objects find their notebook views.

lens.core, lens.nn and lens.nnx do not import lens.display. A displayable class
derives from :class:`Displayable` (its notebook protocols, ``_repr_mimebundle_``,
``__rich__`` and ``__treescope_repr__``, visible on the class) and names its view
with a class attribute, ``__lens_view__ = "nnx state"``; lens.display, when it
loads, *registers* one view factory per name (so registering imports nothing).
The first display of an object loads lens.display by name; a failing view falls
back to the plain repr with a ``DisplayWarning``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

# view name -> view factory. Filled once when lens.display is imported (static
# configuration, not per-call context).
_FACTORIES: dict[str, Callable[[Any], Any]] = {}


def register(name: str, factory: Callable[[Any], Any]) -> None:
    """Shows instances of classes whose ``__lens_view__`` is ``name`` (and their
    subclasses, unless they name another) with ``factory(obj)`` (a View)."""
    _FACTORIES[name] = factory


def view_name(cls: type) -> str | None:
    """The view name of the closest class in ``cls``'s MRO that sets one."""
    for klass in cls.__mro__:
        name = vars(klass).get("__lens_view__")
        if name is not None:
            return name
    return None


def view_for(obj: Any) -> Any | None:
    """The registered view of ``obj``, or None."""
    name = view_name(type(obj))
    if name is None:
        return None
    importlib.import_module("lens.display")  # registers the factories
    factory = _FACTORIES.get(name)
    return factory(obj) if factory is not None else None


def _safe(kind: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    safe = importlib.import_module("lens.display._safe").safe
    return safe(kind)(fn)


def _bundle(obj: Any) -> dict[str, Any]:
    view = view_for(obj)
    return view._repr_mimebundle_() if view is not None else {"text/plain": repr(obj)}


def _rich(obj: Any) -> Any:
    view = view_for(obj)
    return view.__rich__() if view is not None else _plain(obj)


def _plain(obj: Any) -> Any:
    from rich.text import Text

    return Text(repr(obj))


ALL = ("bundle", "rich", "treescope")


class Displayable:
    """A lens object's notebook protocols, each answered by the view registered
    under the class's ``__lens_view__`` name.

    ``__lens_protocols__`` says which protocols the view answers ("bundle":
    ``_repr_mimebundle_``, "rich": ``__rich__``, "treescope":
    ``__treescope_repr__``); for the others the object shows as it would without
    lens (its repr; treescope's own rendering).
    """

    __slots__ = ()
    # declared for type checkers only: an annotation here would show in every
    # Module's typing.get_type_hints(), which Flax's lists as the user's fields
    if TYPE_CHECKING:
        __lens_view__: ClassVar[str]
        __lens_protocols__: ClassVar[tuple[str, ...]]
    __lens_protocols__ = ALL

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        if "bundle" not in type(self).__lens_protocols__:
            return {"text/plain": repr(self)}
        return _safe("bundle", _bundle)(self)

    def __rich__(self) -> Any:  # noqa: PLW3201 - rich's protocol name
        if "rich" not in type(self).__lens_protocols__:
            return _plain(self)
        return _safe("text", _rich)(self)

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        if "treescope" not in type(self).__lens_protocols__:
            return NotImplemented
        view = view_for(self)
        if view is None:
            return NotImplemented
        return view.__treescope_repr__(path, subtree_renderer)


__all__ = ["ALL", "Displayable", "install", "register", "view_for", "view_name"]


def install(cls: type, protocols: tuple[str, ...] = ALL) -> type:
    """Gives an existing class :class:`Displayable`'s protocols under the view
    name ``"module.QualName"`` (for a class that cannot derive from it)."""
    cls.__lens_view__ = f"{cls.__module__}.{cls.__qualname__}"  # type: ignore[attr-defined]
    cls.__lens_protocols__ = protocols  # type: ignore[attr-defined]
    for name in ("_repr_mimebundle_", "__rich__", "__treescope_repr__"):
        setattr(cls, name, vars(Displayable)[name])
    return cls
