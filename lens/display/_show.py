"""``lens.show``, ``lens.show_lifting`` and ``%load_ext lens``."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from lens.display._base import View
from lens.display._safe import DisplayWarning, plain_repr, safe


def view_of(obj: Any) -> Any:
    """The lens display for ``obj`` (or ``obj`` itself when lens has none)."""
    from lens.core._meta import AxisMetadata
    from lens.core._scope import Scope
    from lens.core._trace import PackTrace
    from lens.display._module import BoxView, ModuleView, ScopeView
    from lens.display._pack import PackTraceView
    from lens.display._variables import VariablesView, looks_like_variables

    if isinstance(obj, View):
        return obj
    if isinstance(obj, PackTrace):
        return PackTraceView(obj)
    if isinstance(obj, Scope):
        return ScopeView(obj)
    if isinstance(obj, AxisMetadata):
        return BoxView(obj)
    try:
        from lens.nn._module import Module

        if isinstance(obj, Module):
            return ModuleView(obj)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Mapping) and looks_like_variables(obj):
        try:
            return VariablesView(obj)
        except Exception as e:  # noqa: BLE001 - a display must never raise
            warnings.warn(
                f"lens could not display {type(obj).__name__} ({type(e).__name__}: "
                f"{e}); showing repr() instead.",
                DisplayWarning,
                stacklevel=2,
            )
    return obj


def show(obj: Any) -> Any:
    """Displays ``obj`` with lens's renderers (variables, modules, scopes, boxes, traces).

    In IPython it displays the rich output; elsewhere it prints the text form.
    Returns the view, whose ``text()``/``html()`` give the forms directly.
    """
    view = view_of(obj)
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            from IPython.display import display

            display(view)
            return None
    except ImportError:
        pass
    print(view if isinstance(view, View) else plain_repr(view))
    return None


def show_lifting(
    module: Any,
    *args: Any,
    method: Any = None,
    mutable: Any = False,
    rngs: Any = None,
    variables: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Traces ``pack`` while running ``module`` (abstractly: no compute) and returns it.

    With ``variables``, traces ``apply``; without, traces ``init`` (with ``rngs``, by
    default ``jax.random.key(0)``). The result displays as the pack diagram.
    """
    import jax

    from lens.core._trace import trace_packs

    with trace_packs() as trace:
        if variables is None:
            keys = rngs if rngs is not None else jax.random.key(0)
            jax.eval_shape(
                lambda k, *a: module.init(k, *a, method=method, **kwargs), keys, *args
            )
        else:
            jax.eval_shape(
                lambda v, *a: module.apply(
                    v, *a, method=method, mutable=mutable, rngs=rngs, **kwargs
                ),
                variables,
                *args,
            )
    return trace


@safe("html")
def _variables_html(obj: Any) -> str:
    from lens.display._variables import VariablesView

    return VariablesView(obj)._repr_html_()


def _html_formatter(obj: Any) -> str | None:
    if _is_variables(obj):
        return _variables_html(obj)
    return None


def _is_variables(obj: Any) -> bool:
    from lens.display._variables import looks_like_variables

    try:
        return isinstance(obj, Mapping) and looks_like_variables(obj)
    except Exception:  # noqa: BLE001 - a display hook must never raise
        return False


@safe("text")
def _variables_text(obj: Any) -> str:
    from lens.display._variables import VariablesView

    return VariablesView(obj).text()


class _TextPrinter:
    """The ``text/plain`` form of variable dicts under ``%load_ext lens``.

    Other dicts go to the printer IPython had before (``prev``).
    """

    def __init__(self, prev: Any):
        self.prev = prev

    def __call__(self, obj: Any, p: Any, cycle: bool) -> None:
        if not cycle and _is_variables(obj):
            p.text(_variables_text(obj))
        elif self.prev is not None:
            self.prev(obj, p, cycle)
        else:  # pragma: no cover - IPython always has a dict printer
            p.text(plain_repr(obj))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lens``: plain variable dicts display as variable collections.

    Both forms change: ``text/html`` (the collapsible table) and ``text/plain`` (the
    same summary as text: shapes, sizes and statistics instead of every value).
    ``print(variables)`` still prints the raw dict.
    """
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(dict, _html_formatter)
    plain = formatters["text/plain"]
    prev = plain.type_printers.get(dict)
    if not isinstance(prev, _TextPrinter):
        plain.for_type(dict, _TextPrinter(prev))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext lens``."""
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].type_printers.pop(dict, None)
    plain = formatters["text/plain"]
    current = plain.type_printers.get(dict)
    if isinstance(current, _TextPrinter):
        if current.prev is not None:
            plain.for_type(dict, current.prev)
        else:
            plain.type_printers.pop(dict, None)
