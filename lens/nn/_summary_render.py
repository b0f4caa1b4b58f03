"""How ``tabulate`` shows a table: value representations (shape and dtype, not
values), sizes in bytes, YAML-like cells, and the rich text and HTML renderings.
"""

from __future__ import annotations

import dataclasses
import enum
import html
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens._facades import show_at_flax_paths
from lens._instruments.call_cost import CAPTION as COST_CAPTION
from lens._instruments.call_cost import RICH_COLUMN, Column, fit_rich
from lens.core import Partitioned

# ------------------------------------------------------- value representations


class _ValueRepresentation:
    def render(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclasses.dataclass
class _ArrayRepresentation(_ValueRepresentation):
    shape: tuple[int, ...]
    dtype: Any

    @classmethod
    def from_array(cls, x: Any) -> _ArrayRepresentation:
        return cls(jnp.shape(x), jnp.result_type(x))

    @classmethod
    def render_array(cls, x: Any) -> str:
        return cls.from_array(x).render()

    def render(self) -> str:
        return f"[dim]{self.dtype}[/dim][{','.join(str(d) for d in self.shape)}]"


@dataclasses.dataclass
class _PartitionedArrayRepresentation(_ValueRepresentation):
    array_representation: _ArrayRepresentation
    names: Any

    @classmethod
    def from_partitioned(cls, p: Partitioned) -> _PartitionedArrayRepresentation:
        return cls(_ArrayRepresentation.from_array(p.value), p.names)

    def render(self) -> str:
        return self.array_representation.render() + f" [dim]P[/dim]{self.names}"


@dataclasses.dataclass
class _ObjectRepresentation(_ValueRepresentation):
    obj: Any

    def render(self) -> str:
        return repr(self.obj)


def _get_value_representation(x: Any) -> _ValueRepresentation:
    if isinstance(x, int | float | bool | type(None)) or (
        isinstance(x, np.ndarray) and np.isscalar(x)
    ):
        return _ObjectRepresentation(x)
    if isinstance(x, Partitioned):
        return _PartitionedArrayRepresentation.from_partitioned(x)
    try:
        return _ArrayRepresentation.from_array(x)
    except Exception:  # noqa: BLE001 - anything that is not an array
        return _ObjectRepresentation(x)


def _from_value_representation(x: Any) -> Any:
    if isinstance(x, _ArrayRepresentation):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)
    if isinstance(x, _PartitionedArrayRepresentation):
        a = x.array_representation
        return jax.ShapeDtypeStruct(a.shape, a.dtype)
    if isinstance(x, _ObjectRepresentation):
        return x.obj
    raise TypeError(x, type(x))


def _represent_tree(x: Any) -> Any:
    return jax.tree_util.tree_map(
        _get_value_representation,
        x,
        is_leaf=lambda v: v is None or isinstance(v, Partitioned),
    )


def _maybe_render(x: Any) -> str:
    return x.render() if hasattr(x, "render") else repr(x)


class Tabulation(str):
    """The text of a table; it also displays as an HTML table in notebooks."""

    _html: str = ""

    def _repr_html_(self) -> str:
        return self._html

    def __repr__(self) -> str:
        return str(self)


# ------------------------------------------------------------------ render


def _size_and_bytes(tree: Any) -> tuple[int, int]:
    leaves = jax.tree_util.tree_leaves(tree)
    size = sum(x.size for x in leaves if hasattr(x, "size"))
    nbytes = sum(x.size * x.dtype.itemsize for x in leaves if hasattr(x, "size"))
    return size, nbytes


def _bytes_repr(num_bytes: int) -> str:
    if num_bytes > 1e9:
        return f"{num_bytes / 1e9:,.1f} GB"
    if num_bytes > 1e6:
        return f"{num_bytes / 1e6:,.1f} MB"
    if num_bytes > 1e3:
        return f"{num_bytes / 1e3:,.1f} KB"
    return f"{num_bytes:,} B"


def _size_and_bytes_repr(size: int, num_bytes: int) -> str:
    if not size:
        return ""
    return f"{size:,} [dim]({_bytes_repr(num_bytes)})[/dim]"


def _normalize_structure(obj: Any) -> Any:
    if isinstance(obj, _ValueRepresentation):
        return obj
    if isinstance(obj, tuple | list):
        return tuple(_normalize_structure(x) for x in obj)
    if isinstance(obj, Mapping):
        return {
            _normalize_structure(k): _normalize_structure(v) for k, v in obj.items()
        }
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: _normalize_structure(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def _summary_tree_map(f: Callable[..., Any], tree: Any) -> Any:
    return jax.tree_util.tree_map(f, tree, is_leaf=lambda x: x is None)


def _yaml_scalar(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def _yaml_lines(value: Any, indent: int) -> list[str]:
    """Block-style YAML lines of dicts, sequences and scalars (keys in order)."""
    pad = " " * indent
    if isinstance(value, Mapping):
        if not value:
            return [pad + "{}"]
        lines = []
        for k, v in value.items():
            key = f"{pad}{_yaml_scalar(k)}:"
            if isinstance(v, Mapping) and v:
                lines.append(key)
                lines += _yaml_lines(v, indent + 2)
            elif isinstance(v, tuple | list) and v:
                lines.append(key)
                lines += _yaml_lines(v, indent)
            else:
                lines.append(f"{key} {_yaml_lines(v, 0)[0]}")
        return lines
    if isinstance(value, tuple | list):
        if not value:
            return [pad + "[]"]
        lines = []
        for v in value:
            sub = _yaml_lines(v, indent + 2)
            first = sub[0][indent + 2 :] if len(sub[0]) > indent + 2 else sub[0].strip()
            lines.append(f"{pad}- {first}")
            lines += sub[1:]
        return lines
    return [pad + _yaml_scalar(value)]


def _as_yaml_str(value: Any) -> str:
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        return ""
    return "\n".join(_yaml_lines(value, 0)).replace("'", "").strip()


def _render_table(
    table: Any,  # a lens.nn.summary.Table
    console_extras: Mapping[str, Any] | None,
    table_kwargs: Mapping[str, Any],
    column_kwargs: Mapping[str, Any],
    non_params_cols: list[str],
    cost_columns: Sequence[Column] = (),
) -> str:
    """Flax's table of ``table`` (rich text; HTML in a notebook). ``cost_columns``
    (lens's ``compute_cost``) follow ``non_params_cols``, with units and totals."""
    import rich.console
    import rich.table
    import rich.text

    console_kwargs: dict[str, Any] = {"force_terminal": True, "force_jupyter": False}
    if console_extras is not None:
        console_kwargs.update(console_extras)
    rich_table = rich.table.Table(
        show_header=True,
        show_lines=True,
        show_footer=True,
        title=f"{type(table.module).__name__} Summary",
        **table_kwargs,
    )
    for c in non_params_cols:
        rich_table.add_column(c, **column_kwargs)
    for cost_col in cost_columns:
        rich_table.add_column(cost_col.name, **{**RICH_COLUMN, **column_kwargs})
    for col in table.collections:
        rich_table.add_column(col, **column_kwargs)
    # Flax's FLOPs columns (without compute_cost) are cost columns in the HTML.
    flax_costs = [c for c in non_params_cols[2:] if c in _FLAX_COST_COLUMNS]
    io_cols = [c for c in non_params_cols if c not in _FLAX_COST_COLUMNS]
    html_rows = []
    for row in table:
        cells = []
        for collection, size_bytes in row.size_and_bytes(table.collections).items():
            text = ""
            if collection in row.module_variables:
                tree = _normalize_structure(
                    _represent_tree(row.module_variables[collection])
                )
                text += _as_yaml_str(_summary_tree_map(_maybe_render, tree))
                if text:
                    text += "\n\n"
            text += f"[bold]{_size_and_bytes_repr(*size_bytes)}[/bold]"
            cells.append(text)
        method = (
            f" [dim]({row.method})[/dim]"
            if row.method not in ("__call__", "<lambda>")
            else ""
        )
        values = {
            c: _as_yaml_str(
                _summary_tree_map(_maybe_render, _normalize_structure(getattr(row, c)))
            )
            for c in non_params_cols[2:]
        }
        costs = [values[c] for c in flax_costs]
        costs += [c.cell(row.cost) for c in cost_columns]
        first = ["/".join(row.path), type(row.module_copy).__name__ + method]
        rich_table.add_row(*first, *values.values(), *costs[len(flax_costs) :], *cells)
        html_rows.append(
            _HtmlRow(first, [values[c] for c in io_cols[2:]], costs, cells)
        )
    n = len(non_params_cols)
    rich_table.columns[n - 1].footer = rich.text.Text.from_markup(
        "Total", justify="right"
    )
    cost_totals = [c.cell(table.total) for c in cost_columns]
    for i, text in enumerate(cost_totals):
        rich_table.columns[n + i].footer = text
    n += len(cost_columns)
    totals = {col: (0, 0) for col in table.collections}
    for row in table:
        for col, (s, b) in row.size_and_bytes(table.collections).items():
            totals[col] = (totals[col][0] + s, totals[col][1] + b)
    for i, col in enumerate(table.collections):
        rich_table.columns[n + i].footer = _size_and_bytes_repr(*totals[col])
    all_size = sum(s for s, _ in totals.values())
    all_bytes = sum(b for _, b in totals.values())
    rich_table.caption_style = "bold"
    rich_table.caption = (
        f"\nTotal Parameters: {_size_and_bytes_repr(all_size, all_bytes)}"
    )
    if cost_columns:
        rich_table.caption += f"\n[not bold]{COST_CAPTION}[/not bold]"
    buf = io.StringIO()
    console = rich.console.Console(file=buf, **console_kwargs)
    fit_rich(console, rich_table, len(non_params_cols), len(cost_columns))
    console.print(rich_table)
    out = Tabulation("\n" + buf.getvalue() + "\n")
    flax_totals = [
        str(getattr(table.total, c)) if table.total is not None else ""
        for c in flax_costs
    ]
    out._html = _html_table(
        table,
        io_cols,
        flax_costs + [c.name for c in cost_columns],
        html_rows,
        flax_totals + cost_totals,
        totals,
        (all_size, all_bytes),
        note=COST_CAPTION if cost_columns else "",
    )
    return out


_FLAX_COST_COLUMNS = ("flops", "vjp_flops")


@dataclasses.dataclass
class _HtmlRow:
    """One row's cells (rich markup) for the HTML form."""

    first: list[str]  # path, module
    values: list[str]  # inputs, outputs
    costs: list[str]
    variables: list[str]


def _plain(markup: str) -> str:
    from rich.text import Text

    return Text.from_markup(markup).plain


# The HTML form fits a 600 px notebook cell. Flax's columns (path, module,
# inputs, outputs, a column per collection) make one table, as wide as Flax's
# without costs; the costs make a second one, path and module again, then the
# numbers. Cells wrap at spaces (a number before its unit, a variable's name
# before its shape), never inside a shape; headers between their words. A table
# still wider than its cell scrolls in its own box, never clipped.
_CELL = "vertical-align:top;padding:2px 6px;white-space:pre-wrap;text-align:left"
_NUMBER = "vertical-align:top;padding:2px 6px;white-space:pre-wrap;text-align:right"
_HEAD = "white-space:normal;vertical-align:bottom"


def _html_grid(
    heads: list[str],
    styles: list[str],
    rows: list[list[str]],
    foot: list[str],
) -> str:
    """One scroll-boxed table: its head, rows (rich markup) and foot (its
    "Total" right-aligned, by the first cell it fills)."""
    total = next(i for i, c in enumerate(foot) if c)
    foot_styles = [_NUMBER if i == total else s for i, s in enumerate(styles)]
    head = "".join(
        f"<th style='{s};{_HEAD}'>{html.escape(h)}</th>" for s, h in zip(styles, heads)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td style='{s}'>{html.escape(_plain(c))}</td>" for s, c in zip(styles, r)
        )
        + "</tr>"
        for r in rows
    )
    tail = "".join(
        f"<td style='{s}'>{html.escape(_plain(c))}</td>"
        for s, c in zip(foot_styles, foot)
    )
    return (
        "<div style='max-width:100%;overflow-x:auto'><table style='border-collapse:"
        "collapse;font-family:monospace;font-size:12px'>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
        f"<tfoot><tr>{tail}</tr></tfoot></table></div>"
    )


def _html_table(
    table: Any,  # a lens.nn.summary.Table
    cols: list[str],
    cost_cols: list[str],
    rows: list[_HtmlRow],
    cost_totals: list[str],
    totals: Mapping[str, tuple[int, int]],
    grand: tuple[int, int],
    note: str = "",
) -> str:
    collections = list(table.collections)
    main = _html_grid(
        [*cols, *collections],
        [_CELL] * (len(cols) + len(collections)),
        [r.first + r.values + r.variables for r in rows],
        [""] * (len(cols) - 1)
        + ["Total"]
        + [_size_and_bytes_repr(*totals[c]) for c in collections],
    )
    name = type(table.module).__name__
    title = html.escape(f"{name} Summary")
    caption = html.escape(_plain(f"Total Parameters: {_size_and_bytes_repr(*grand)}"))
    out = f"<div><b>{title}</b>{main}<b>{caption}</b>"
    if cost_cols:
        costs = _html_grid(
            ["path", "module", *cost_cols],
            [_CELL, _CELL] + [_NUMBER] * len(cost_cols),
            [r.first + r.costs for r in rows],
            ["", "Total", *cost_totals],
        )
        out += f"<div style='margin-top:10px'><b>{html.escape(name)} Cost</b></div>"
        out += costs
    if note:
        out += f"<div style='opacity:.72;max-width:60em'>{html.escape(note)}</div>"
    return out + "</div>"


show_at_flax_paths(__name__)
