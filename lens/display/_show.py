"""``lens.show``, ``lens.show_lifting`` and ``%load_ext lens``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.display._base import View
from lens.display._safe import plain_repr, safe


def view_of(obj: Any) -> Any:
    """The lens display for ``obj`` (or ``obj`` itself when lens has none)."""
    if isinstance(obj, View):
        return obj
    view = _registered_view(obj)
    if view is not None:
        return view
    return _variables_view(obj)


@safe("object")
def _registered_view(obj: Any) -> Any:
    from lens._views import view_for

    return view_for(obj)


@safe("object")
def _variables_view(obj: Any) -> Any:
    from lens.display._variables import VariablesView, looks_like_variables

    if isinstance(obj, Mapping) and looks_like_variables(obj):
        return VariablesView(obj)
    return obj


def show(obj: Any) -> Any:
    """Displays ``obj`` with lens's renderers (variables, modules, scopes, boxes, traces).

    In IPython it displays the rich output; elsewhere it prints the text form.

    Returns:
      The view (``text()``, ``html()``, ``rich()`` give its forms), or ``None``
      when lens has no display for ``obj`` (it is shown with its own repr). In a
      notebook, ``lens.show(x)`` as a cell's last line is shown once, not twice.

    Example:
        >>> import numpy as np, lens
        >>> w, b = np.zeros((4, 3), np.float32), np.arange(3, dtype=np.float32)
        >>> view = lens.show({"params": {"w": w, "b": b}})
        Variables: 1 collection, 2 arrays, 15 values (60 B)
        params · 15 (60 B)
          w  f32[4,3]  12 (48 B)  mean 0 std 0 [0, 0]
          b  f32[3]  3 (12 B)  [0, 1, 2]
        >>> type(view).__name__, "f32[4,3]" in view.html()
        ('VariablesView', True)

        (An array of at most eight values shows them, a larger one its mean,
        standard deviation and range.)
    """
    view = view_of(obj)
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is not None:
        from IPython.display import display

        display(view)
        if isinstance(view, View):
            _skip_echo(view, ip)
    else:
        print(view if isinstance(view, View) else plain_repr(view))
    return view if isinstance(view, View) else None


def _skip_echo(view: View, ip: Any) -> None:
    """Keeps IPython from showing ``view`` again as this cell's result.

    IPython asks an object's ``_ipython_display_`` first: a one-shot instance
    attribute swallows the echo in this cell, then removes itself, so the view
    displays normally anywhere after.
    """
    cell = getattr(ip, "execution_count", None)

    def once() -> None:
        try:
            del view.__dict__["_ipython_display_"]
        except (KeyError, AttributeError):
            pass
        if getattr(ip, "execution_count", None) != cell:
            from IPython.display import display

            display(view._repr_mimebundle_(), raw=True)

    try:
        view.__dict__["_ipython_display_"] = once
    except (AttributeError, TypeError):  # a view without an instance dict
        pass


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

    from lens.core import trace_packs

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
    ``print(variables)`` still prints the raw dict. ``%lens_recompiles`` is
    registered too (each cell's retraces shown under it).
    """
    from lens.display._recompiles import load_magic

    load_magic(ipython)
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(dict, _html_formatter)
    plain = formatters["text/plain"]
    prev = plain.type_printers.get(dict)
    if not isinstance(prev, _TextPrinter):
        plain.for_type(dict, _TextPrinter(prev))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext lens``."""
    from lens.display._recompiles import unload_magic

    unload_magic(ipython)
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].type_printers.pop(dict, None)
    plain = formatters["text/plain"]
    current = plain.type_printers.get(dict)
    if isinstance(current, _TextPrinter):
        if current.prev is not None:
            plain.for_type(dict, current.prev)
        else:
            plain.type_printers.pop(dict, None)
