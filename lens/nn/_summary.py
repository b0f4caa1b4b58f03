"""``tabulate``: a table of a model's modules, shapes and variables.

The model is traced abstractly (``jax.eval_shape``), so tabulating costs no compute.
The result is a ``str`` (print it in a terminal) that also renders as an HTML table
in a notebook's output cell.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from lens.core import _meta
from lens.core._filters import DenyList, Filter
from lens.nn._module import Module, intercept_methods


class Tabulation(str):
    """The text of a tabulation; displays as an HTML table in notebooks."""

    _html: str = ""

    def _repr_html_(self) -> str:
        return self._html

    def __repr__(self) -> str:
        return str(self)


def _shape_str(tree: Any) -> str:
    leaves = jax.tree_util.tree_leaves(tree)
    parts = []
    for x in leaves:
        shape = getattr(x, "shape", None)
        dtype = getattr(x, "dtype", None)
        if shape is None:
            parts.append(repr(x))
        else:
            dt = (
                str(dtype)
                .replace("float", "f")
                .replace("int", "i")
                .replace("uint", "u")
            )
            parts.append(f"{dt}[{','.join(str(d) for d in shape)}]")
    return "\n".join(parts)


def _own_vars(
    variables: Mapping[str, Any], path: tuple[str, ...], child_names: set[str]
) -> dict[str, list]:
    out: dict[str, list] = {}
    for col, tree in variables.items():
        d: Any = tree
        for p in path:
            d = d.get(p, {}) if isinstance(d, Mapping) else {}
        if not isinstance(d, Mapping):
            continue
        leaves = []
        for name, v in d.items():
            if isinstance(v, Mapping) or name in child_names:
                continue
            leaves.append((name, v))
        if leaves:
            out[col] = leaves
    return out


def _sub_vars(variables: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, list]:
    """Every variable at or below ``path``, per collection (for collapsed rows)."""
    out: dict[str, list] = {}
    for col, tree in variables.items():
        d: Any = tree
        for p in path:
            d = d.get(p, {}) if isinstance(d, Mapping) else {}
        leaves = jax.tree_util.tree_leaves_with_path(d, is_leaf=_meta.is_axis_metadata)
        if leaves:
            out[col] = [(jax.tree_util.keystr(k), v) for k, v in leaves]
    return out


def _count(leaves: list) -> tuple[int, int]:
    n = nbytes = 0
    for _, v in leaves:
        v = _meta.unbox(v)
        size = int(np.prod(getattr(v, "shape", ())))
        n += size
        nbytes += size * np.dtype(getattr(v, "dtype", np.float32)).itemsize
    return n, nbytes


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def tabulate(
    module: Module,
    rngs: Any,
    depth: int | None = None,
    show_repeated: bool = False,
    mutable: Filter = DenyList("intermediates"),
    console_kwargs: Mapping[str, Any] | None = None,
    table_kwargs: Mapping[str, Any] | None = None,
    column_kwargs: Mapping[str, Any] | None = None,
    compute_flops: bool = False,
    compute_vjp_flops: bool = False,
    **kwargs: Any,
) -> Callable[..., Tabulation]:
    """Returns ``f(*args, **kw)`` giving a table of ``module``'s calls and variables.

    Args:
      module: the (unbound) module.
      rngs: the rngs for ``init``.
      depth: collapse modules deeper than this (their variables summed in).
      show_repeated: list every call of a module called several times.
      mutable: the collections ``init`` may create.
      console_kwargs: passed to ``rich.console.Console`` (e.g. ``width``).
      table_kwargs, column_kwargs: passed to ``rich.table.Table`` / ``add_column``.
      compute_flops, compute_vjp_flops: accepted for Flax compatibility (ignored).
    """
    del compute_flops, compute_vjp_flops

    def run(*args: Any, **call_kwargs: Any) -> Tabulation:
        rows: list[dict[str, Any]] = []

        def interceptor(
            next_fun: Callable[..., Any], a: tuple, k: dict, ctx: Any
        ) -> Any:
            if ctx.method_name.startswith("_") and ctx.method_name != "__call__":
                return next_fun(*a, **k)
            row = {
                "path": ctx.module.path,
                "cls": type(ctx.module).__name__,
                "method": ctx.method_name,
                "inputs": _shape_str((a, k)),
                "outputs": "",
            }
            rows.append(row)
            out = next_fun(*a, **k)
            row["outputs"] = _shape_str(out)
            return out

        def init(rngs: Any, *args: Any) -> Any:
            with intercept_methods(interceptor):
                return module.init(rngs, *args, mutable=mutable, **call_kwargs)

        variables = jax.eval_shape(init, rngs, *args)
        return _render(
            rows,
            variables,
            depth,
            show_repeated,
            console_kwargs,
            table_kwargs,
            column_kwargs,
        )

    del kwargs
    return run


def _render(
    rows: list[dict[str, Any]],
    variables: Mapping[str, Any],
    depth: int | None,
    show_repeated: bool,
    console_kwargs: Any,
    table_kwargs: Any,
    column_kwargs: Any,
) -> Tabulation:
    from rich.console import Console
    from rich.table import Table

    seen: set[tuple[tuple[str, ...], str]] = set()
    kept = []
    for r in rows:
        key = (r["path"], r["method"])
        if (key in seen and not show_repeated) or (
            depth is not None and len(r["path"]) > depth
        ):
            continue
        seen.add(key)
        kept.append(r)
    cols = sorted(variables)
    paths = {r["path"] for r in rows}
    table = Table(
        show_header=True,
        show_lines=True,
        title=f"{rows[0]['cls'] if rows else 'Module'} Summary",
        **dict(table_kwargs or {}),
    )
    for name in ["path", "module", "inputs", "outputs", *cols]:
        table.add_column(name, **dict(column_kwargs or {}))
    totals = {c: [0, 0] for c in cols}
    counted: set[tuple[tuple[str, ...], str]] = set()
    html_rows = []
    for r in kept:
        children = {
            p[len(r["path"])]
            for p in paths
            if len(p) > len(r["path"]) and p[: len(r["path"])] == r["path"]
        }
        collapsed = depth is not None and len(r["path"]) == depth
        own = (
            _sub_vars(variables, r["path"])
            if collapsed
            else _own_vars(variables, r["path"], children)
        )
        cells = []
        for c in cols:
            leaves = own.get(c, [])
            if not leaves:
                cells.append("")
                continue
            n, nb = _count(leaves)
            if (r["path"], c) not in counted:  # a repeated call shares its variables
                counted.add((r["path"], c))
                totals[c][0] += n
                totals[c][1] += nb
            if collapsed:  # summed over the collapsed submodules
                cells.append(f"{n:,} ({_human(nb)})")
                continue
            detail = "\n".join(
                f"{name}: {_shape_str(_meta.unbox(v))}" for name, v in leaves
            )
            cells.append(f"{detail}\n\n{n:,} ({_human(nb)})")
        path = "/".join(r["path"])
        method = r["cls"] if r["method"] == "__call__" else f"{r['cls']}.{r['method']}"
        table.add_row(path, method, r["inputs"], r["outputs"], *cells)
        html_rows.append((path, method, r["inputs"], r["outputs"], cells))
    footer = [f"{t[0]:,} ({_human(t[1])})" if t[0] else "" for t in totals.values()]
    table.add_row("", "", "", "Total", *footer)
    grand_n = sum(t[0] for t in totals.values())
    grand_b = sum(t[1] for t in totals.values())
    console = Console(
        file=io.StringIO(),
        force_terminal=False,
        force_jupyter=False,
        **({"width": 120} | dict(console_kwargs or {})),
    )
    console.print(table)
    console.print(
        f"\n Total Parameters: {grand_n:,} ({_human(grand_b)})\n", highlight=False
    )
    text = console.file.getvalue()  # type: ignore[attr-defined]
    out = Tabulation(text)
    out._html = _html_table(
        ["path", "module", "inputs", "outputs", *cols],
        html_rows,
        footer,
        grand_n,
        grand_b,
    )
    return out


def _html_table(
    header: list[str], rows: list, footer: list[str], n: int, nb: int
) -> str:
    e = html.escape

    def cell(s):
        return f"<td style='white-space:pre;vertical-align:top;text-align:left'>{e(s)}</td>"  # noqa: E731

    parts = [
        "<table class='lens-tabulate'>",
        "<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>",
    ]
    for path, method, ins, outs, cells in rows:
        parts.append(
            "<tr>"
            + "".join(cell(x) for x in (path, method, ins, outs, *cells))
            + "</tr>"
        )
    parts.append(
        "<tr>"
        + cell("")
        + cell("")
        + cell("")
        + cell("Total")
        + "".join(cell(f) for f in footer)
        + "</tr>"
    )
    parts.append(f"</table><p>Total Parameters: {n:,} ({e(_human(nb))})</p>")
    return "".join(parts)
