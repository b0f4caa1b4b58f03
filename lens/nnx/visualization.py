"""How nnx objects and States show in a notebook (flax.nnx's ``visualization``):
the variables by type and a title, which :mod:`lens.display` draws.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import jax

from lens.nnx._graph.ops import state
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Variable


def _ipython_running() -> bool:
    # A running IPython session has imported IPython: no need to import it here.
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


in_ipython: bool = _ipython_running()
"""Whether an IPython session was running when this module was imported."""


def render_object_constructor(
    object_type: type[Any],
    attributes: Mapping[str, Any],
    path: str | None,
    subtree_renderer: Any,
    roundtrippable: bool = False,
    color: str | None = None,
    first_line_annotation: Any = None,
) -> Any:
    """A treescope rendering of an object as ``Type(name=value, ...)``, for a
    ``__treescope_repr__``: ``attributes`` must be real attributes of the object
    (``obj.name``), as treescope builds each child's path from its name.

    Args:
      object_type: the type shown.
      attributes: the attributes shown, in order.
      path: the object's path (``__treescope_repr__``'s ``path``).
      subtree_renderer: renders each value (``__treescope_repr__``'s).
      roundtrippable: whether the text evaluates back to an equal object (else
        it is wrapped in ``<...>`` in roundtrip mode).
      color: a background color for the node (None: none).
      first_line_annotation: a rendering part shown after the first line when
        the node is expanded (a ``# Param: ...`` comment).
    """
    from treescope import rendering_parts as rp

    type_name = rp.maybe_qualified_type_name(object_type)
    if roundtrippable:
        prefix = rp.siblings(type_name, "(")
        suffix = rp.text(")")
    else:
        prefix = rp.siblings(
            rp.roundtrip_condition(roundtrip=rp.text("<")), type_name, "("
        )
        suffix = rp.siblings(")", rp.roundtrip_condition(roundtrip=rp.text(">")))
    children = []
    last = len(attributes) - 1
    for i, (name, value) in enumerate(attributes.items()):
        child_path = None if path is None else f"{path}.{name}"
        if i < last:  # a comma always; a space too when collapsed
            comma = rp.siblings(",", rp.fold_condition(collapsed=rp.text(" ")))
        else:  # the last: a comma only when expanded
            comma = rp.fold_condition(expanded=rp.text(","))
        line = rp.siblings_with_annotations(
            f"{name}=", subtree_renderer(value, path=child_path)
        )
        children.append(rp.build_full_line_with_annotations(line, comma))
    return rp.build_foldable_tree_node_from_children(
        prefix=prefix,
        children=children,
        suffix=suffix,
        path=path,
        background_color=color,
        first_line_annotation=first_line_annotation,
    )


def variables_by_type(s: State) -> dict[str, dict[Any, Any]]:
    """``{variable type name: nested dict of arrays}``: a State shown the way lens
    shows Linen collections (a value that is itself a pytree of arrays, like an
    optimizer state, is spread over sub-paths; one with no arrays in it, like the
    shapes of ``jax.tree.map(jnp.shape, state)``, is one row: its Python value)."""
    out: dict[str, dict[Any, Any]] = {}
    for path, v in s._flat_dict().items():
        kind = type(v).__name__ if isinstance(v, Variable) else "array"
        value = v._raw_value if isinstance(v, Variable) else v
        leaves = jax.tree_util.tree_leaves_with_path(value)
        if not any(hasattr(x, "shape") and hasattr(x, "dtype") for _, x in leaves):
            leaves = [((), value)]
        for sub, leaf in leaves:
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


def _front_end() -> bool:
    """Whether an IPython front end shows displays here: a Jupyter kernel or a
    terminal IPython; not a bare InteractiveShell some library (or a test)
    made in a plain Python process, where printing is what reaches the user."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    return (
        getattr(shell, "kernel", None) is not None or "Terminal" in type(shell).__name__
    )


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
    if not _front_end():
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
