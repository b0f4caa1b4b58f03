"""Variable collections: grouped by collection, then module; stats, totals, boxes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.display import _stacked, _walk
from lens.display._base import View, e
from lens.display._leaf import (
    Leaf,
    fmt_num,
    human_bytes,
    human_count,
    stats_of,
)


def looks_like_variables(obj: Any, budget: int = 10_000) -> bool:
    """True for ``{collection: {name: array or dict}}`` (what init/apply return).

    Looks at no more than ``budget`` nested dicts, never recurses, and answers False
    for a dict that contains itself (a variable tree never does).
    """
    if not isinstance(obj, Mapping) or not obj:
        return False
    for col, tree in obj.items():
        if not isinstance(col, str) or not isinstance(tree, Mapping):
            return False
    seen = {id(obj)}
    stack = list(obj.values())
    while stack:
        t = stack.pop()
        if id(t) in seen or len(seen) > budget:
            return False
        seen.add(id(t))
        found = False
        for v in t.values():
            if isinstance(v, Mapping):
                stack.append(v)
            elif hasattr(v, "shape") or hasattr(v, "unbox"):
                found = True
            else:
                return False
        if found:
            return True
    return False


def _stats_str(leaf: Leaf) -> str:
    if leaf.stats is None:
        return ""
    mean, std, lo, hi = leaf.stats
    return f"mean {fmt_num(mean)} std {fmt_num(std)} [{fmt_num(lo)}, {fmt_num(hi)}]"


MAX_ROWS = 200
"""Variables listed one per row before a display summarises the rest."""


def _size(n: int, nbytes: int) -> str:
    return f"{human_count(n)} ({human_bytes(nbytes)})"


class VariablesView(View):
    """A display of variables ``{collection: nested dict}`` (see :func:`lens.show`).

    Large collections stay light and paint fast: every variable is counted, but
    only the first ``max_rows`` get a row (with statistics when ``stats``); the
    modules after them are summed up per collection, the first of them named in a
    collapsed section. ``max_rows=None`` lists everything.
    """

    def __init__(
        self,
        variables: Mapping[str, Any],
        title: str = "Variables",
        stats: bool = True,
        max_rows: int | None = MAX_ROWS,
    ):
        self.variables = variables
        self.title = title
        self.max_rows = max_rows
        self.collections = _walk.collect(variables, max_rows)
        self.leaves = [x for c in self.collections for m in c.shown for x in m.leaves]
        if stats:  # only for the rows shown: statistics cost a pass over each array
            stacked = _stacked.stacked_leaves(self.leaves)
            for leaf in self.leaves:
                leaf.stats = stats_of(leaf.value)
                if id(leaf) in stacked:
                    leaf.stack = _stacked.profile(leaf.value)

    def _more(self, c: _walk.Collection) -> str:
        n, mods = c.hidden_n, c.hidden_modules
        return (
            f"... {human_count(n)} more variable{'s' if n != 1 else ''} in "
            f"{human_count(mods)} module{'s' if mods != 1 else ''} · "
            f"{_size(c.hidden_count, c.hidden_nbytes)}"
        )

    def _header(self) -> str:
        cols = self.collections
        return (
            f"{self.title}: {len(cols)} collection{'s' if len(cols) != 1 else ''}, "
            f"{human_count(sum(c.n for c in cols))} arrays, "
            f"{human_count(sum(c.count for c in cols))} values "
            f"({human_bytes(sum(c.nbytes for c in cols))})"
        )

    def text(self) -> str:
        """Plain text, one line per variable."""
        lines = [self._header()]
        for c in self.collections:
            lines.append(f"{c.name} · {_size(c.count, c.nbytes)}")
            for m in c.shown:
                indent = "  "
                if m.path:
                    lines.append(f"  /{'/'.join(m.path)} · {_size(m.count, m.nbytes)}")
                    indent = "    "
                width = max(len(x.name) for x in m.leaves)
                lines += [indent + _text_row(x, width) for x in m.leaves]
            if c.hidden_n:
                lines.append("  " + self._more(c) + "; " + HOW_TO_SEE_ALL)
        return "\n".join(lines)

    def html_body(self) -> str:
        """Collapsible per collection and per module (``<details>``; no scripts).

        Kept compact: at most ``max_rows`` rows, whatever the number of variables;
        the first modules after them are named in a collapsed section.
        """
        sharded = any(x.sharding for x in self.leaves)
        # One width per column across every table, so the columns line up.
        name_w = max((len(x.name) for x in self.leaves), default=0)
        type_w = max((len(x.type_str) for x in self.leaves), default=0)
        # (in em: the sanitizer drops ch; a monospace digit is about 0.6 em)
        tds = (
            f"<td style='min-width:{0.6 * name_w:.1f}em'>",
            f"<td style='min-width:{0.6 * type_w:.1f}em'>",
        )
        out = [f"<div>{e(self._header())}</div>"]
        for c in self.collections:
            out.append(
                f"<details open class=top><summary><span class=c>{e(c.name)}</span> "
                f"<span class=m>· {_size(c.count, c.nbytes)}</span></summary>"
            )
            for m in c.shown:
                if m.path:
                    # a module with a stacked axis opens: its charts are the point
                    opened = (
                        " open" if any(x.stack is not None for x in m.leaves) else ""
                    )
                    out.append(
                        f"<details{opened}><summary>/{e('/'.join(m.path))} <span class=m>· "
                        f"{_size(m.count, m.nbytes)}</span></summary>"
                    )
                # tables directly in a collection start where a module's do
                out.append("<table>" if m.path else "<table class=flat>")
                out += [
                    _html_row(x, tds if i == 0 else None, sharded)
                    for i, x in enumerate(m.leaves)
                ]
                out.append("</table>")
                if m.path:
                    out.append("</details>")
            if c.hidden_n:
                out.append(_more_html(self._more(c), c))
            out.append("</details>")
        return "".join(out)

    def rich(self) -> Any:
        """A ``rich`` tree."""
        from rich.markup import escape
        from rich.tree import Tree

        tree = Tree(escape(self._header()))
        for c in self.collections:
            node = tree.add(
                f"[bold]{escape(c.name)}[/] [dim]· {_size(c.count, c.nbytes)}[/]"
            )
            for m in c.shown:
                sub = node.add(escape("/" + "/".join(m.path))) if m.path else node
                for x in m.leaves:
                    extra = f" [cyan]{escape(x.axes_str)}[/]" if x.axes_str else ""
                    if x.stack is not None:
                        extra += f" [magenta]{escape(_stacked.describe(x.stack))}[/]"
                    sub.add(
                        f"{escape(x.name)} {x.type_str}{extra} [dim]{human_count(x.count)} {escape(_stats_str(x))}[/]"
                    )
            if c.hidden_n:
                node.add(f"[dim]{escape(self._more(c) + '; ' + HOW_TO_SEE_ALL)}[/]")
        return tree

    def __getitem__(self, key: str) -> Any:
        return self.variables[key]

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from treescope import repr_lib

        # The collections themselves, so treescope's array view opens on expand.
        return repr_lib.render_dictionary_wrapper(
            object_type=type(self),
            wrapped_dict=dict(self.variables),
            path=path,
            subtree_renderer=subtree_renderer,
        )


HOW_TO_SEE_ALL = (
    "all of them: lens.display.VariablesView(variables, max_rows=None); "
    "one module: lens.show(variables[collection][name])"
)


def _text_row(x: Leaf, width: int) -> str:
    parts = [x.name.ljust(width), x.type_str]
    if x.axes_str:
        parts.append(x.axes_str)
    if x.sharding:
        parts.append(f"sharded {x.sharding}")
    parts.append(f"{human_count(x.count)} ({human_bytes(x.nbytes)})")
    if x.stats is not None:
        parts.append(_stats_str(x))
    if x.stack is not None:
        parts.append(_stacked.describe(x.stack))
    return "  ".join(parts)


def _html_row(x: Leaf, tds: tuple[str, str] | None, sharded: bool) -> str:
    """One variable's row; the first row of a table carries the column widths."""
    name_td, type_td = tds or ("<td>", "<td>")
    axes = f" <span class=ax>{e(x.axes_str)}</span>" if x.axes_str else ""
    shard = f"<td class=sh>{e(x.sharding or '')}</td>" if sharded else ""
    # a stack's per-slice chart on its own row under the numbers, across their
    # columns: seen at 600 px without scrolling, wrapping its label if need be
    spark = (
        f"<tr><td></td><td colspan={4 if sharded else 3} class=m "
        f"style='white-space:normal;padding-bottom:2px'>"
        f"{_stacked.spark_html(x.stack)}</td></tr>"
        if x.stack is not None
        else ""
    )
    return (
        f"<tr>{name_td}{e(x.name)}{type_td}{e(x.type_str)}{axes}{shard}"
        f"<td class=m>{human_count(x.count)} ({human_bytes(x.nbytes)})"
        f"<td class=m>{e(_stats_str(x))}</tr>{spark}"
    )


def _more_html(line: str, c: _walk.Collection) -> str:
    """The hidden modules: a collapsed section naming the first of them."""
    rows = "".join(
        f"<tr><td>/{e('/'.join(m.path))}<td class=m>{m.n} array{'s' if m.n != 1 else ''}"
        f"<td class=m>{_size(m.count, m.nbytes)}</tr>"
        for m in c.more
    )
    rest = c.hidden_modules - len(c.more)
    tail = (
        f"<div class=hint>and {human_count(rest)} more modules</div>"
        if rest > 0
        else ""
    )
    return (
        f"<details><summary class=hint>{e(line)}</summary><table>{rows}</table>{tail}"
        f"<div class=hint>{e(HOW_TO_SEE_ALL)}</div></details>"
    )
