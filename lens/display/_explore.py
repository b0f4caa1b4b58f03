"""``lens.explore(model, variables)``: browse collections and modules in a widget.

Built on ipywidgets (the better-kept choice: it is Jupyter's own widget protocol,
ships with JupyterLab's widget manager, needs no front-end build; anywidget is a
layer on top of it for custom front-end code, which this widget does not need).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lens.display import _stacked
from lens.display._base import e, wrap
from lens.display._leaf import Leaf, fmt_num, human_bytes, human_count, iter_leaves


def _histogram_html(leaf: Leaf, bins: int = 20) -> str:
    """A histogram of the leaf's values as plain HTML bars (inline styles, no SVG:
    JupyterLab's sanitizer drops SVG from untrusted notebooks), the range below."""
    if leaf.value is None or leaf.stats is None:
        return "<div class='m'>no histogram for this leaf</div>"
    a = np.asarray(leaf.value, dtype=np.float64).ravel()
    counts, edges = np.histogram(a[np.isfinite(a)], bins=bins)
    top = max(int(counts.max()), 1)
    h = 60
    bars = "".join(
        f"<span title='{int(c)} values in [{e(fmt_num(lo))}, {e(fmt_num(hi))})' "
        f"style='display:inline-block;width:11px;margin-right:1px;"
        f"height:{max(1, round(h * c / top)) if c else 0}px;background:#1f77b4'></span>"
        for c, lo, hi in zip(counts, edges[:-1], edges[1:])
    )
    return (
        f"<div style='display:inline-block;width:{bins * 12}px'>"
        f"<div style='display:flex;align-items:flex-end;height:{h}px;"
        f"border-bottom:1px solid rgba(128,128,128,.6)'>{bars}</div>"
        f"<div style='display:flex;justify-content:space-between'>"
        f"<span>{e(fmt_num(edges[0]))}</span><span>{e(fmt_num(edges[-1]))}</span>"
        "</div></div>"
    )


def leaf_details_html(leaf: Leaf) -> str:
    """Stats and histogram of one leaf (HTML, every style inline)."""
    stats = leaf.values or ""  # a small array's values, a Python value's text
    if leaf.stats is not None:
        m, s, lo, hi = leaf.stats
        stats = f"mean {fmt_num(m)} · std {fmt_num(s)} · min {fmt_num(lo)} · max {fmt_num(hi)}"
    size = (
        ""
        if leaf.python
        else f" · {human_count(leaf.count)} values ({human_bytes(leaf.nbytes)})"
    )
    stack = ""
    if leaf.stack is not None:
        stack = f"<div>{_stacked.spark_html(leaf.stack)}</div>"
    return wrap(
        f"<div class='c'>{e(leaf.collection)}:/{e('/'.join(leaf.path + (leaf.name,)))}</div>"
        f"<div>{e(leaf.type_str)} {e(leaf.axes_str)}{size}</div>"
        f"<div class='m'>{e(stats)}</div>{stack}{_histogram_html(leaf)}"
    )


class Explorer:
    """The explorer's state, independent of the widget (testable without a kernel)."""

    def __init__(self, model: Any, variables: Mapping[str, Any]):
        self.model = model
        self.variables = variables
        self.leaves = list(iter_leaves(variables))
        self.collections = sorted({x.collection for x in self.leaves})
        stacked = _stacked.stacked_leaves(self.leaves)
        for leaf in self.leaves:
            if id(leaf) in stacked:
                leaf.stack = _stacked.profile(leaf.value)

    def paths(self, collection: str | None = None, query: str = "") -> list[str]:
        """Leaf paths (``collection:/a/b/kernel``) matching a collection and search text."""
        q = query.lower()
        out = []
        for x in self.leaves:
            if collection and x.collection != collection:
                continue
            p = f"{x.collection}:/{'/'.join(x.path + (x.name,))}"
            if q in p.lower():
                out.append(p)
        return out

    def leaf(self, path: str) -> Leaf:
        """The leaf for a path from :meth:`paths`."""
        for x in self.leaves:
            if f"{x.collection}:/{'/'.join(x.path + (x.name,))}" == path:
                return x
        raise KeyError(path)

    def widget(self) -> Any:
        """The ipywidgets UI: collection picker, search box, leaf list, details."""
        import ipywidgets as w

        col = w.Dropdown(options=["(all)"] + self.collections, description="collection")
        search = w.Text(placeholder="search by path", description="search")
        leaves = w.Select(options=self.paths(), rows=12, layout=w.Layout(width="420px"))
        details = w.HTML()

        def refresh(_: Any = None) -> None:
            c = None if col.value == "(all)" else col.value
            leaves.options = self.paths(c, search.value)

        def pick(change: Any) -> None:
            # a filter that drops the shown leaf clears the selection: clear the
            # details too, never leave another leaf's numbers on screen
            new = change.get("new")
            details.value = leaf_details_html(self.leaf(new)) if new else ""

        pick({"new": leaves.value})  # the list starts with its first leaf selected
        col.observe(refresh, names="value")
        search.observe(refresh, names="value")
        leaves.observe(pick, names="value")
        title = w.HTML(
            f"<b>{e(type(self.model).__name__)}</b> · {len(self.leaves)} arrays"
        )
        box = w.VBox([title, w.HBox([col, search]), w.HBox([leaves, details])])
        return self._with_static_forms(box)

    def static_text(self) -> str:
        """What the explorer says where no widget can run (no kernel, untrusted)."""
        return (
            f"lens.explore: {type(self.model).__name__} · {len(self.leaves)} arrays "
            "(run the cell in a live kernel to browse them)"
        )

    def _with_static_forms(self, box: Any) -> Any:
        """``box`` whose display also carries text/html (the variables table) and a
        readable text/plain: a saved notebook opened untrusted, nbconvert and GitHub
        show those instead of a widget's repr (JupyterLab runs no widget there)."""
        from lens.display._variables import VariablesView

        widget_bundle = box._repr_mimebundle_
        title = f"lens.explore of {type(self.model).__name__}"
        note = (
            "a static copy: run the cell in a live kernel to browse its leaves "
            "(search, statistics and a histogram per leaf)"
        )
        html = VariablesView(self.variables, title=title, note=note).html()
        text = self.static_text()

        def _repr_mimebundle_(**kwargs: Any) -> dict[str, Any]:
            data = dict(widget_bundle(**kwargs))
            data["text/plain"] = text
            data["text/html"] = html
            return data

        box._repr_mimebundle_ = _repr_mimebundle_
        return box


def explore(model: Any, variables: Mapping[str, Any]) -> Any:
    """An interactive browser of ``variables`` (an ipywidgets widget)."""
    return Explorer(model, variables).widget()
