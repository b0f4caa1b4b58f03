"""Variable collections: grouped by collection, then module; stats, totals, boxes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from lens.display import _stacked, _walk
from lens.display._base import View, e
from lens.display._glossary import Gloss, meaning
from lens.display._leaf import (
    Leaf,
    fmt_num,
    human_bytes,
    human_count,
    measure,
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
    """The statistics of a leaf, or its values when it shows them (small)."""
    if leaf.values is not None:
        return leaf.values
    if leaf.stats is None:
        return ""
    mean, std, lo, hi = leaf.stats
    return f"mean {fmt_num(mean)} std {fmt_num(std)} [{fmt_num(lo)}, {fmt_num(hi)}]"


MAX_ROWS = 200
"""Variables listed one per row before a display summarises the rest."""
OPEN_ALL = 20
"""A display of at most this many variables shows every module open (a small model
is read at a glance, as treescope shows it); a larger one opens only the modules
with a stacked axis (their charts are the point)."""


def _size(n: int, nbytes: int, py: int = 0) -> str:
    """``64 (256 B)``; with Python values (which have no bytes): ``2 Python
    values``, or ``64 (256 B) + 2 Python values``."""
    arrays = f"{human_count(n)} ({human_bytes(nbytes)})"
    if not py:
        return arrays
    words = f"{human_count(py)} Python value{'s' if py != 1 else ''}"
    return words if not n else f"{arrays} + {words}"


class VariablesView(View):
    """A display of variables ``{collection: nested dict}`` (see :func:`lens.show`).

    Large collections stay light and paint fast: every variable is counted, but
    only the first ``max_rows`` get a row (with statistics when ``stats``); the
    modules after them are summed up per collection, the first of them named in a
    collapsed section. ``max_rows=None`` lists everything. ``note``, when given, is
    a line of the HTML form under its header (the explorer's static copy says how
    to browse it). ``types`` names the class of the module at a path (an nnx
    model's ``('conv1',) -> 'Conv'``); it is shown after the module's path.
    """

    def __init__(
        self,
        variables: Mapping[str, Any],
        title: str = "Variables",
        stats: bool = True,
        max_rows: int | None = MAX_ROWS,
        note: str = "",
        types: Mapping[tuple[str, ...], str] | None = None,
    ):
        if not isinstance(variables, Mapping):
            raise TypeError(
                "VariablesView takes variables as {collection: nested dict} (what "
                f"init returns), got a {type(variables).__name__}; lens.show(x) "
                "displays any value"
            )
        self.variables = variables
        self.title = title
        self.note = note
        self.types = dict(types or {})
        self.max_rows = max_rows
        self.collections = _walk.collect(variables, max_rows)
        self.leaves = [x for c in self.collections for m in c.shown for x in m.leaves]
        if stats:  # only for the rows shown: statistics cost a pass over each array
            stacked = _stacked.stacked_leaves(self.leaves)
            for leaf in self.leaves:
                measure(leaf)  # a small array's values, else its statistics
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
        py = sum(c.py for c in cols)
        arrays = sum(c.n for c in cols) - py
        parts = [f"{len(cols)} collection{'s' if len(cols) != 1 else ''}"]
        if arrays or not py:
            parts += [
                f"{human_count(arrays)} array{'s' if arrays != 1 else ''}",
                f"{human_count(sum(c.count for c in cols))} values "
                f"({human_bytes(sum(c.nbytes for c in cols))})",
            ]
        if py:
            parts.append(f"{human_count(py)} Python value{'s' if py != 1 else ''}")
        return f"{self.title}: {', '.join(parts)}"

    def _type(self, path: tuple[str, ...]) -> str:
        """`` Conv``: the class of the module at ``path``, when known."""
        t = self.types.get(path)
        return f" {t}" if t else ""

    def text(self) -> str:
        """Plain text, one line per variable."""
        lines = [self._header()]
        for c in self.collections:
            lines.append(f"{c.name} · {_size(c.count, c.nbytes, c.py)}")
            for m in c.shown:
                indent = "  "
                if m.path:
                    lines.append(
                        f"  /{'/'.join(m.path)}{self._type(m.path)} · "
                        f"{_size(m.count, m.nbytes, m.py)}"
                    )
                    indent = "    "
                width = max(len(x.name) for x in m.leaves)
                lines += [indent + _text_row(x, width) for x in m.leaves]
            if c.hidden_n:
                lines.append("  " + self._more(c) + "; " + HOW_TO_SEE_ALL)
        return "\n".join(lines)

    def html_body(self) -> str:
        """Collapsible per collection and per module (``<details>``; no scripts).

        Kept compact: at most ``max_rows`` rows, whatever the number of variables;
        the first modules after them are named in a collapsed section. Every row
        uses the same column widths (``_Columns``), so the columns line up across
        modules and collections; in a narrow cell a row continues on a second line,
        and its sharding and per-slice chart sit on lines of their own under it.
        """
        cells = [_cells(x) for x in self.leaves]
        cols = _Columns.of(cells)
        row = iter(cells)
        gloss = Gloss()
        small = len(self.leaves) <= OPEN_ALL and not any(
            c.hidden_n for c in self.collections
        )
        out = [f"<div>{e(self._header())}</div>"]
        if self.note:
            out.append(f"<div class=hint>{e(self.note)}</div>")
        for c in self.collections:
            out.append(
                f"<details open class=top><summary><span class=c>{e(c.name)}</span> "
                f"<span class=m>· {_size(c.count, c.nbytes, c.py)}</span></summary>"
            )
            for m in c.shown:
                if m.path:
                    # a small display opens all; a larger one, the modules with a
                    # stacked axis: their charts are the point
                    opened = (
                        " open"
                        if small or any(x.stack is not None for x in m.leaves)
                        else ""
                    )
                    kind = self._type(m.path)
                    out.append(
                        f"<details{opened}><summary>{_path_html(m.path)}"
                        + (f" <span class=ty>{e(kind.strip())}</span>" if kind else "")
                        + f" <span class=m>· {_size(m.count, m.nbytes, m.py)}</span>"
                        "</summary>"
                    )
                # rows directly in a collection start where a module's do
                out.append("<div class=vars>" if m.path else "<div class='vars flat'>")
                out += [_html_row(x, next(row), cols, gloss) for x in m.leaves]
                out.append("</div>")
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
                f"[bold]{escape(c.name)}[/] [dim]· {_size(c.count, c.nbytes, c.py)}[/]"
            )
            for m in c.shown:
                sub = (
                    node.add(escape("/" + "/".join(m.path) + self._type(m.path)))
                    if m.path
                    else node
                )
                for x in m.leaves:
                    extra = f" [cyan]{escape(x.axes_str)}[/]" if x.axes_str else ""
                    if x.stack is not None:
                        extra += f" [magenta]{escape(_stacked.describe(x.stack))}[/]"
                    size = "" if x.python else f"{human_count(x.count)} "
                    sub.add(
                        f"{escape(x.name)} {escape(x.type_str)}{extra} "
                        f"[dim]{size}{escape(_stats_str(x))}[/]"
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
    if not x.python:
        parts.append(f"{human_count(x.count)} ({human_bytes(x.nbytes)})")
    if x.values is not None or x.stats is not None:
        parts.append(_stats_str(x))
    if x.stack is not None:
        parts.append(_stacked.describe(x.stack))
    return "  ".join(parts)


CH_EM = 0.6
"""One character of the monospace font (``1ch``) in em. Column widths are grid tracks
in ch, exact in any monospace font; JupyterLab's sanitizer keeps ch only there, so
the one width outside a track (a wrapped line's indent) is in em."""
GAP_EM = 0.8
"""The space between two columns, in em (the ``column-gap`` of ``var`` and ``cols``
in ``_base.CLASS_STYLE``)."""
WIDEST = 28
"""The widest a name, type or axis-name column grows (ch); a longer text wraps in
its cell instead of pushing every row's numbers to the right."""
VALUES_MAX = 40
"""The widest (ch) a small array's values make their column; longer ones wrap in it."""
INDENT = 16
"""A row's second line starts under its type column, or this many ch in when the
name column is wider (so that the statistics fit beside the indent at 600 px)."""


class _Cells(NamedTuple):
    """One variable's texts, one per column of the HTML form."""

    name: str
    type: str
    axes: str
    size: str
    stats: tuple[str, str, str] | None  # "mean ...", "std ...", "[min, max]"
    values: str | None  # the values themselves, in place of the statistics


def _cells(x: Leaf) -> _Cells:
    stats = None
    if x.stats is not None:
        mean, std, lo, hi = x.stats
        stats = (
            f"mean {fmt_num(mean)}",
            f"std {fmt_num(std)}",
            f"[{fmt_num(lo)}, {fmt_num(hi)}]",
        )
    size = "" if x.python else _size(x.count, x.nbytes)
    return _Cells(x.name, x.type_str, x.axes_str, size, stats, x.values)


class _Columns(NamedTuple):
    """The columns of one display, shared by all of its rows (so they line up from
    one module and collection to the next) as the ``grid-template-columns`` of each
    group of cells: widths in ch, from the widest text shown."""

    head: str  # name and type; the name column gives way in a narrow cell
    axes: str | None  # axis names, when a variable has them
    size: str
    stats: str | None  # mean, std, range; each gives way in a narrow cell
    values: str | None  # a small array's values, in the statistics' place
    indent: str  # em: where a row's second line starts

    @classmethod
    def of(cls, rows: Iterable[_Cells]) -> _Columns:
        """The view's columns. The statistics' group and the values' group are
        one width (``VALUES_MAX`` ch at most past the statistics'), so that both
        move to a row's second line at the same cell width: their gaps are in
        their tracks (``column-gap:0``), whose widths then add up exactly."""
        rows = list(rows)
        texts = [(r.name, r.type, r.axes, r.size) for r in rows]
        name, type_, axes, size = (
            max((len(t[i]) for t in texts), default=0) for i in range(4)
        )
        name, type_, axes = (min(w, WIDEST) for w in (name, type_, axes))
        measured = [r.stats for r in rows if r.stats is not None]
        listed = [len(r.values) for r in rows if r.values is not None]
        widths = (
            [max(len(s[i]) for s in measured) for i in range(3)] if measured else []
        )
        # each statistic but the last followed by a 1 ch gap
        width = max(
            sum(widths) + 2 if widths else 0, min(max(listed, default=0), VALUES_MAX)
        )
        stats = None
        if widths:
            a, b, c = widths
            last = width - a - b - 2  # the last statistic, and any room left over
            stats = f"minmax(0,{a + 1}ch) minmax(0,{b + 1}ch) minmax(0,{last}ch)"
        indent = f"{min(name, INDENT) * CH_EM + GAP_EM:.2f}".rstrip("0").rstrip(".")
        return cls(
            f"minmax(0,{name}ch) {type_}ch",
            f"{axes + 1}ch" if axes else None,  # and the highlight's padding
            f"{size}ch",
            stats,
            f"minmax(0,{width}ch)" if listed else None,
            indent,
        )


def _html_row(x: Leaf, c: _Cells, cols: _Columns, gloss: Gloss) -> str:
    """One variable: name and type, axis names, size, statistics, each group of
    cells in the view's shared columns; then its sharding and per-slice chart on
    lines of their own.

    A row is a wrapping flex line, indented, whose first group hangs back into the
    indent: in a cell too narrow for the whole row, what does not fit goes on a
    second line that starts under the type column."""
    out = [
        f"<div class=var style='padding-left:{cols.indent}em'>"
        f"<span class=cols style='grid-template-columns:{cols.head};"
        f"margin-left:-{cols.indent}em'><span>{e(c.name)}</span> "
        f"<span>{e(c.type)}</span></span>"
    ]
    if cols.axes is not None:
        axes = f"<span class=ax>{e(c.axes)}</span>" if c.axes else ""
        out.append(
            f" <span class=cols style='grid-template-columns:{cols.axes}'>"
            f"<span>{axes}</span></span>"
        )
    out.append(
        f" <span class='cols m' style='grid-template-columns:{cols.size}'>"
        f"{c.size}</span>"
    )
    if c.values is not None and cols.values is not None:
        # where the statistics go, wrapping inside its cell when longer; float
        # values are marked (fv): their last digits are the CPU's, and a stored
        # notebook's sanitizer (tests/nbval_sanitize.cfg) leaves them out
        kind = "cols v fv" if _floating(x) else "cols v"
        out.append(
            f" <span class='{kind}' style='grid-template-columns:{cols.values}'>"
            f"<span>{e(c.values)}</span></span>"
        )
    elif c.stats is not None and cols.stats is not None:
        out.append(
            f" <span class='cols m' style='column-gap:0;"
            f"grid-template-columns:{cols.stats}'>"
            + " ".join(f"<span>{e(s)}</span>" for s in c.stats)
            + "</span>"
        )
    if x.sharding:
        out.append(
            f" <span class=under><span class=sh title='{e(_sharding_title(x.sharding))}'>"
            f"{_sharding_html(x.sharding)}</span></span>"
        )
    if x.stack is not None:
        # the chart under the numbers, seen at 600 px, its label wrapping if need be
        out.append(
            " <span class='under m' style='padding-bottom:2px'>"
            f"{_stacked.spark_html(x.stack, gloss=gloss)}</span>"
        )
    out.append("</div>")
    return "".join(out)


def _floating(x: Leaf) -> bool:
    """Whether a leaf's values are floating-point numbers (their last digits
    differ between CPUs); ints, bools and Python values are exact."""
    return not x.python and x.dtype.startswith(("float", "bfloat", "complex"))


def _sharding_title(text: str) -> str:
    """The hover text of a sharding: what its parts mean, in plain words."""
    words = [f"sharding: {meaning('sharded')}"]
    if re.search(r"\bwhole d", text):
        words.append(f"whole: replicated, {meaning('replicated')}")
    return "; ".join(words)


def _sharding_html(text: str) -> str:
    """A sharding (``P('model',) on 2x4 mesh: [0:8] d0,4 · [8:16] d1,5``) that wraps
    only between its parts, after ``: `` and `` · `` (never inside ``[0:8] d0,4``)."""
    parts = re.split(r"(: | · )", text)
    return "".join(
        p if p == ": " else "\u00a0· " if p == " · " else e(p).replace(" ", "\u00a0")
        for p in parts
    )


def _path_html(path: tuple[str, ...]) -> str:
    """``/a/b/c``, breakable before each ``/`` but the first in a narrow cell."""
    return "/" + "<wbr>/".join(e(p) for p in path)


def _more_html(line: str, c: _walk.Collection) -> str:
    """The hidden modules: a collapsed section naming the first of them, one per
    row (path, arrays, size), the path breakable between its parts."""
    rows = "".join(
        "<div class=var style='padding-left:2em'><span style='margin-left:-2em'>"
        f"{_path_html(m.path)}</span> <span class=m>{m.n} array{'s' if m.n != 1 else ''}"
        f" · {_size(m.count, m.nbytes)}</span></div>"
        for m in c.more
    )
    rest = c.hidden_modules - len(c.more)
    tail = (
        f"<div class=hint>and {human_count(rest)} more modules</div>"
        if rest > 0
        else ""
    )
    return (
        f"<details><summary class=hint>{e(line)}</summary><div class=vars>{rows}</div>"
        f"{tail}<div class=hint>{e(HOW_TO_SEE_ALL)}</div></details>"
    )
