"""How nnx objects and States show in a notebook (flax.nnx's ``visualization``):
the variables by type and a title, which :mod:`lens.display` draws.
"""

from __future__ import annotations

from typing import Any

import jax

from lens.nnx.graphlib import state
from lens.nnx.statelib import State
from lens.nnx.variablelib import Variable


def variables_by_type(s: State) -> dict[str, dict[Any, Any]]:
    """``{variable type name: nested dict of arrays}``: a State shown the way lens
    shows Linen collections (a value that is itself a pytree, like an optimizer
    state, is spread over sub-paths)."""
    out: dict[str, dict[Any, Any]] = {}
    for path, v in s._flat_dict().items():
        kind = type(v).__name__ if isinstance(v, Variable) else "array"
        value = v._value if isinstance(v, Variable) else v
        for sub, leaf in jax.tree_util.tree_leaves_with_path(value):
            full = tuple(str(p) for p in path) + tuple(
                jax.tree_util.keystr((k,)).strip(".[]'") for k in sub
            )
            d = out.setdefault(kind, {})
            for k in full[:-1]:
                d = d.setdefault(k, {})
            d[full[-1]] = leaf
    return out


def view_title(x: Any) -> tuple[dict[str, Any], str]:
    """What an nnx object or State displays: its variables by type, and a title."""
    s = x if isinstance(x, State) else state(x)
    return variables_by_type(s), "State" if isinstance(x, State) else type(x).__name__


def display(*args: Any) -> None:
    """Shows each argument as richly as the front end allows (flax.nnx's ``display``).

    In a notebook (IPython), a module, State or variable dict is shown with lens's
    display (variables by type, shapes, values and statistics), anything else with
    IPython's own display; in a terminal each argument is printed.

    Example:
        >>> from lens import nnx
        >>> nnx.display(nnx.Param(1.0))  # outside a notebook: printed
        Param(
          value=1.0
        )
    """
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is None:
        for x in args:
            print(x)
        return
    from IPython.display import display as ipython_display

    from lens._views import view_for

    for x in args:
        try:
            view = view_for(x)
        except Exception:  # noqa: BLE001 - a display never raises into a notebook
            view = None
        ipython_display(view if view is not None else x)
