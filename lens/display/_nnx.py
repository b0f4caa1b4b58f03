"""What a lens.nnx module or State displays: its variables by type, a title, and the
class of each submodule by path (``/conv1 Conv``), as treescope names them."""

from __future__ import annotations

from typing import Any

from lens.display._variables import VariablesView

MAX_NODES = 50_000
"""Graph nodes looked at for submodule classes; past this a display names no more
(the variables are all shown still), so a huge model paints as fast as before."""


def module_types(obj: Any) -> dict[tuple[str, ...], str]:
    """``{('conv1',): 'Conv', ('dropout', 'rngs'): 'RngStream', ...}``: the class of
    every nnx object under ``obj`` (not ``obj`` itself); empty for a State."""
    from lens import nnx

    if not isinstance(obj, nnx.Pytree) or isinstance(obj, nnx.State):
        return {}
    out: dict[tuple[str, ...], str] = {}
    for seen, (path, node) in enumerate(nnx.iter_graph(obj)):
        if seen >= MAX_NODES:
            break
        if path and isinstance(node, nnx.Pytree):
            out[tuple(str(p) for p in path)] = type(node).__name__
    return out


def nnx_view(obj: Any) -> VariablesView:
    """The display of a lens.nnx module, object or State."""
    from lens.nnx.visualization import view_title

    variables, title = view_title(obj)
    return VariablesView(variables, title=title, types=module_types(obj))
