"""Variable collections: grouped by collection, then module; stats, totals, boxes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.display._base import View, e
from lens.display._leaf import Leaf, fmt_num, human_bytes, human_count, iter_leaves


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


class VariablesView(View):
    """A display of variables ``{collection: nested dict}`` (see :func:`lens.show`)."""

    def __init__(
        self, variables: Mapping[str, Any], title: str = "Variables", stats: bool = True
    ):
        self.variables = variables
        self.title = title
        self.leaves = list(iter_leaves(variables, with_stats=stats))

    def _groups(self) -> dict[str, dict[tuple[str, ...], list[Leaf]]]:
        groups: dict[str, dict[tuple[str, ...], list[Leaf]]] = {}
        for leaf in self.leaves:
            groups.setdefault(leaf.collection, {}).setdefault(leaf.path, []).append(
                leaf
            )
        return groups

    def _header(self) -> str:
        n = sum(x.count for x in self.leaves)
        b = sum(x.nbytes for x in self.leaves)
        cols = len({x.collection for x in self.leaves})
        return (
            f"{self.title}: {cols} collection{'s' if cols != 1 else ''}, {len(self.leaves)} arrays, "
            f"{human_count(n)} values ({human_bytes(b)})"
        )

    def text(self) -> str:
        """Plain text, one line per variable."""
        lines = [self._header()]
        for col, mods in self._groups().items():
            leaves = [x for ls in mods.values() for x in ls]
            lines.append(
                f"{col} · {human_count(sum(x.count for x in leaves))} ({human_bytes(sum(x.nbytes for x in leaves))})"
            )
            for path, ls in mods.items():
                indent = "  "
                if path:
                    lines.append(
                        f"  /{'/'.join(path)} · {human_count(sum(x.count for x in ls))} ({human_bytes(sum(x.nbytes for x in ls))})"
                    )
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
                    lines.append(indent + "  ".join(parts))
        return "\n".join(lines)

    def html_body(self) -> str:
        """Collapsible per collection and per module (``<details>``; no scripts).

        Kept compact (a 1,000-leaf collection is well under 200 KB).
        """
        sharded = any(x.sharding for x in self.leaves)
        out = [f"<div>{e(self._header())}</div>"]
        for col, mods in self._groups().items():
            leaves = [x for ls in mods.values() for x in ls]
            out.append(
                f"<details open><summary><span class=c>{e(col)}</span> <span class=m>· "
                f"{human_count(sum(x.count for x in leaves))} ({human_bytes(sum(x.nbytes for x in leaves))})"
                "</span></summary>"
            )
            for path, ls in mods.items():
                if path:
                    out.append(
                        f"<details><summary>/{e('/'.join(path))} <span class=m>· "
                        f"{human_count(sum(x.count for x in ls))} ({human_bytes(sum(x.nbytes for x in ls))})"
                        "</span></summary>"
                    )
                out.append("<table>")
                for x in ls:
                    axes = (
                        f" <span class=ax>{e(x.axes_str)}</span>" if x.axes_str else ""
                    )
                    shard = (
                        f"<td class=sh>{e(x.sharding or '')}</td>" if sharded else ""
                    )
                    out.append(
                        f"<tr><td>{e(x.name)}<td>{e(x.type_str)}{axes}{shard}"
                        f"<td class=m>{human_count(x.count)} ({human_bytes(x.nbytes)})"
                        f"<td class=m>{e(_stats_str(x))}</tr>"
                    )
                out.append("</table>")
                if path:
                    out.append("</details>")
            out.append("</details>")
        return "".join(out)

    def rich(self) -> Any:
        """A ``rich`` tree."""
        from rich.markup import escape
        from rich.tree import Tree

        tree = Tree(escape(self._header()))
        for col, mods in self._groups().items():
            leaves = [x for ls in mods.values() for x in ls]
            node = tree.add(
                f"[bold]{escape(col)}[/] [dim]· {human_count(sum(x.count for x in leaves))} ({human_bytes(sum(x.nbytes for x in leaves))})[/]"
            )
            for path, ls in mods.items():
                sub = node.add(escape("/" + "/".join(path))) if path else node
                for x in ls:
                    extra = f" [cyan]{escape(x.axes_str)}[/]" if x.axes_str else ""
                    sub.add(
                        f"{escape(x.name)} {x.type_str}{extra} [dim]{human_count(x.count)} {escape(_stats_str(x))}[/]"
                    )
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
