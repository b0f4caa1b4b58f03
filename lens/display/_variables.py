"""Variable collections: grouped by collection, then module; stats, totals, boxes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from lens.display import _stacked
from lens.display._base import View, e
from lens.display._leaf import (
    Leaf,
    fmt_num,
    human_bytes,
    human_count,
    iter_leaves,
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


def _size(leaves: list[Leaf]) -> str:
    return (
        f"{human_count(sum(x.count for x in leaves))} "
        f"({human_bytes(sum(x.nbytes for x in leaves))})"
    )


class VariablesView(View):
    """A display of variables ``{collection: nested dict}`` (see :func:`lens.show`).

    Large collections stay light: the first ``max_rows`` variables get a row each
    (with statistics when ``stats``), the modules after them one summary line per
    collection. ``max_rows=None`` lists everything.
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
        self.leaves = list(iter_leaves(variables, with_stats=False))
        self.groups = self._groups()
        if stats:  # only for the rows shown: statistics cost a pass over each array
            stacked = _stacked.stacked_leaves(self.leaves)
            for leaf in self._shown():
                leaf.stats = stats_of(leaf.value)
                if id(leaf) in stacked:
                    leaf.stack = _stacked.profile(leaf.value)

    def _groups(self) -> dict[str, dict[tuple[str, ...], list[Leaf]]]:
        groups: dict[str, dict[tuple[str, ...], list[Leaf]]] = {}
        for leaf in self.leaves:
            groups.setdefault(leaf.collection, {}).setdefault(leaf.path, []).append(
                leaf
            )
        return groups

    def _layout(
        self,
    ) -> Iterator[
        tuple[str, list[Leaf], list[tuple[tuple[str, ...], list[Leaf]]], int]
    ]:
        """Per collection: its leaves, the modules shown, and how many are not."""
        budget = len(self.leaves) if self.max_rows is None else self.max_rows
        for col, mods in self.groups.items():
            leaves = [x for ls in mods.values() for x in ls]
            shown: list[tuple[tuple[str, ...], list[Leaf]]] = []
            for path, ls in mods.items():
                if budget <= 0:
                    break
                shown.append((path, ls[:budget]))
                budget -= len(ls)
            yield col, leaves, shown, len(leaves) - sum(len(ls) for _, ls in shown)

    def _shown(self) -> Iterator[Leaf]:
        for _, _, shown, _ in self._layout():
            for _, ls in shown:
                yield from ls

    def _more(self, col_leaves: list[Leaf], hidden: int) -> str:
        rest = col_leaves[len(col_leaves) - hidden :]
        mods = len({x.path for x in rest})
        return (
            f"... {human_count(hidden)} more variable{'s' if hidden != 1 else ''} in "
            f"{human_count(mods)} module{'s' if mods != 1 else ''} · {_size(rest)}; "
            "all of them: lens.display.VariablesView(variables, max_rows=None)"
        )

    def _header(self) -> str:
        cols = len(self.groups)
        return (
            f"{self.title}: {cols} collection{'s' if cols != 1 else ''}, "
            f"{human_count(len(self.leaves))} arrays, "
            f"{human_count(sum(x.count for x in self.leaves))} values "
            f"({human_bytes(sum(x.nbytes for x in self.leaves))})"
        )

    def text(self) -> str:
        """Plain text, one line per variable."""
        lines = [self._header()]
        for col, leaves, shown, hidden in self._layout():
            lines.append(f"{col} · {_size(leaves)}")
            for path, ls in shown:
                indent = "  "
                if path:
                    lines.append(f"  /{'/'.join(path)} · {_size(ls)}")
                    indent = "    "
                width = max(len(x.name) for x in ls)
                for x in ls:
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
                    lines.append(indent + "  ".join(parts))
            if hidden:
                lines.append("  " + self._more(leaves, hidden))
        return "\n".join(lines)

    def html_body(self) -> str:
        """Collapsible per collection and per module (``<details>``; no scripts).

        Kept compact: at most ``max_rows`` rows, whatever the number of variables.
        """
        sharded = any(x.sharding for x in self.leaves)
        # One width per column across every table, so the columns line up.
        name_w = max((len(x.name) for x in self.leaves), default=0)
        type_w = max((len(x.type_str) for x in self.leaves), default=0)
        # (in em: the sanitizer drops ch; a monospace digit is about 0.6 em)
        name_td = f"<td style='min-width:{0.6 * name_w:.1f}em'>"
        type_td = f"<td style='min-width:{0.6 * type_w:.1f}em'>"
        out = [f"<div>{e(self._header())}</div>"]
        for col, leaves, shown, hidden in self._layout():
            out.append(
                f"<details open class=top><summary><span class=c>{e(col)}</span> <span class=m>· "
                f"{_size(leaves)}</span></summary>"
            )
            for path, ls in shown:
                if path:
                    # a module with a stacked axis opens: its charts are the point
                    opened = " open" if any(x.stack is not None for x in ls) else ""
                    out.append(
                        f"<details{opened}><summary>/{e('/'.join(path))} <span class=m>· "
                        f"{_size(ls)}</span></summary>"
                    )
                # tables directly in a collection start where a module's do
                out.append("<table>" if path else "<table class=flat>")
                for row, x in enumerate(ls):
                    axes = (
                        f" <span class=ax>{e(x.axes_str)}</span>" if x.axes_str else ""
                    )
                    shard = (
                        f"<td class=sh>{e(x.sharding or '')}</td>" if sharded else ""
                    )
                    spark = (
                        f"<td class=m>{_stacked.spark_html(x.stack)}</td>"
                        if x.stack is not None
                        else ""
                    )
                    out.append(
                        f"<tr>{name_td if row == 0 else '<td>'}{e(x.name)}"
                        f"{type_td if row == 0 else '<td>'}{e(x.type_str)}{axes}{shard}"
                        f"<td class=m>{human_count(x.count)} ({human_bytes(x.nbytes)})"
                        f"<td class=m>{e(_stats_str(x))}{spark}</tr>"
                    )
                out.append("</table>")
                if path:
                    out.append("</details>")
            if hidden:
                out.append(f"<div class=hint>{e(self._more(leaves, hidden))}</div>")
            out.append("</details>")
        return "".join(out)

    def rich(self) -> Any:
        """A ``rich`` tree."""
        from rich.markup import escape
        from rich.tree import Tree

        tree = Tree(escape(self._header()))
        for col, leaves, shown, hidden in self._layout():
            node = tree.add(f"[bold]{escape(col)}[/] [dim]· {_size(leaves)}[/]")
            for path, ls in shown:
                sub = node.add(escape("/" + "/".join(path))) if path else node
                for x in ls:
                    extra = f" [cyan]{escape(x.axes_str)}[/]" if x.axes_str else ""
                    if x.stack is not None:
                        extra += f" [magenta]{escape(_stacked.describe(x.stack))}[/]"
                    sub.add(
                        f"{escape(x.name)} {x.type_str}{extra} [dim]{human_count(x.count)} {escape(_stats_str(x))}[/]"
                    )
            if hidden:
                node.add(f"[dim]{escape(self._more(leaves, hidden))}[/]")
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
