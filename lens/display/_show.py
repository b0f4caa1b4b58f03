"""``lens.show``, ``lens.show_lifting`` and ``%load_ext lens``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.display._base import View
from lens.display._safe import plain_repr


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
        return VariablesView(obj)
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


def _html_formatter(obj: Any) -> str | None:
    from lens.display._variables import VariablesView, looks_like_variables

    if isinstance(obj, Mapping) and looks_like_variables(obj):
        return VariablesView(obj)._repr_html_()
    return None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lens``: plain variable dicts display as variable collections."""
    html = ipython.display_formatter.formatters["text/html"]
    html.for_type(dict, _html_formatter)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext lens``."""
    html = ipython.display_formatter.formatters["text/html"]
    html.type_printers.pop(dict, None)
