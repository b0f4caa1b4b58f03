"""``tabulate``: a table of a model's module calls, shapes and variables.

The model is run abstractly (``jax.eval_shape``), so tabulating costs no compute.
Each row is one module call: its path, class (and method), inputs, outputs, its
own variables per collection, and optionally the FLOPs of the call and of its VJP.
The table is Flax's (same columns, rows, totals and caption), rendered with rich;
the returned ``str`` also renders as an HTML table in a notebook.
"""

from __future__ import annotations

import dataclasses
import enum
import html
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens.core._filters import DenyList, Filter
from lens.core._freeze import unfreeze
from lens.core._partitioning import Partitioned
from lens.core._rng import LazyRng
from lens.nn import _context

# ------------------------------------------------------------ call records


@dataclasses.dataclass
class _CallInfo:
    index: int
    path: tuple[str, ...]
    module: Any
    rngs: dict[str, Any] | None
    mutable: Any
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outputs: Any


@dataclasses.dataclass
class _CallInfoContext:
    index: int
    calls: list[_CallInfo]

    def get_call_index(self) -> int:
        index = self.index
        self.index += 1
        return index


def record_call(
    ctx: _CallInfoContext,
    index: int,
    module: Any,
    fun: Any,
    args: tuple,
    kwargs: dict,
    outputs: Any,
) -> None:
    """Records one module method call for the table (called by the Module)."""
    a, k, y = _represent_tree((args, kwargs, outputs))
    scope = module.scope
    ctx.calls.append(
        _CallInfo(
            index,
            module.path,
            module.clone(),
            scope.rngs,
            scope.mutable,
            getattr(fun, "__name__", "<lambda>"),
            a,
            k,
            y,
        )
    )


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


# ------------------------------------------------------------------- table


@dataclasses.dataclass
class Row:
    """One row of the table: one call of one module.

    Attributes:
      path: the module's path.
      module_copy: an unbound copy of the module.
      method: the method called.
      inputs: its inputs (as shapes and dtypes).
      outputs: its outputs (as shapes and dtypes).
      module_variables: the module's own variables (not its submodules').
      counted_variables: the variables counted for this row (with ``depth``, a
        collapsed row counts its hidden submodules' variables too).
      flops: FLOPs of the call (-1 when not computed).
      vjp_flops: FLOPs of its VJP (-1 when not computed).
    """

    path: tuple[str, ...]
    module_copy: Any
    method: str
    inputs: Any
    outputs: Any
    module_variables: dict[str, dict[str, Any]]
    counted_variables: dict[str, dict[str, Any]]
    flops: int
    vjp_flops: int

    def size_and_bytes(self, collections: Iterable[str]) -> dict[str, tuple[int, int]]:
        """``{collection: (values, bytes)}`` counted for this row."""
        return {
            col: (
                _size_and_bytes(self.counted_variables[col])
                if col in self.counted_variables
                else (0, 0)
            )
            for col in collections
        }


class Table(list[Row]):
    """The rows, with the module summarized and its collections."""

    def __init__(self, module: Any, collections: Sequence[str], rows: Iterable[Row]):
        super().__init__(rows)
        self.module = module
        self.collections = collections


class Tabulation(str):
    """The text of a table; it also displays as an HTML table in notebooks."""

    _html: str = ""

    def _repr_html_(self) -> str:
        return self._html

    def __repr__(self) -> str:
        return str(self)


def tabulate(
    module: Any,
    rngs: Any,
    depth: int | None = None,
    show_repeated: bool = False,
    mutable: Filter = DenyList("intermediates"),
    console_kwargs: Mapping[str, Any] | None = None,
    table_kwargs: Mapping[str, Any] = {},  # noqa: B006 - read only
    column_kwargs: Mapping[str, Any] = {},  # noqa: B006 - read only
    compute_flops: bool = False,
    compute_vjp_flops: bool = False,
    **kwargs: Any,
) -> Callable[..., str]:
    """``f(*args, **kw)`` returning the summary table of ``module`` called on them.

    Args:
      module: the module.
      rngs: the rngs of ``init``.
      depth: how many levels of submodules to show; a hidden submodule's
        variables count in its shown ancestor's row. None: all.
      show_repeated: also show repeated calls of one module.
      mutable: the collections ``init`` may create.
      console_kwargs: for ``rich.console.Console`` (default: a terminal).
      table_kwargs, column_kwargs: for ``rich.table.Table`` and its columns.
      compute_flops, compute_vjp_flops: add columns with the XLA cost estimate of
        each call and of its VJP (compiles each call: slower).
      **kwargs: more arguments for ``init`` (e.g. ``method``).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> print(nn.tabulate(nn.Dense(2), jax.random.key(0),
        ...                   console_kwargs={"force_terminal": False})(jnp.ones((1, 3))))
        ... # doctest: +ELLIPSIS
        <BLANKLINE>
        ...Dense Summary...
    """
    if mutable != DenyList("intermediates"):
        kwargs["mutable"] = mutable

    def _tabulate_fn(*fn_args: Any, **fn_kwargs: Any) -> str:
        table = _get_module_table(
            module,
            depth=depth,
            show_repeated=show_repeated,
            compute_flops=compute_flops,
            compute_vjp_flops=compute_vjp_flops,
        )(rngs, *fn_args, **fn_kwargs, **kwargs)
        cols = ["path", "module", "inputs", "outputs"]
        if compute_flops:
            cols.append("flops")
        if compute_vjp_flops:
            cols.append("vjp_flops")
        return _render_table(table, console_kwargs, table_kwargs, column_kwargs, cols)

    return _tabulate_fn


def _get_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    cost = jax.jit(fn).lower(*args, **kwargs).cost_analysis()
    if cost is None:
        return 0
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else {}
    return int(cost["flops"]) if "flops" in cost else 0


def _get_call_flops(
    c: _CallInfo, compute_flops: bool, compute_vjp_flops: bool
) -> tuple[int, int]:
    if not compute_flops and not compute_vjp_flops:
        return -1, -1
    rngs = jax.tree_util.tree_map(
        lambda x: x.rng, c.rngs, is_leaf=lambda x: isinstance(x, LazyRng)
    )
    args = jax.tree_util.tree_map(_from_value_representation, c.args)
    kwargs = jax.tree_util.tree_map(_from_value_representation, c.kwargs)
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    dyn_idx = [i for i, x in enumerate(leaves) if isinstance(x, jax.ShapeDtypeStruct)]
    dyn = [leaves[i] for i in dyn_idx]

    def inputs(dynamic: Any) -> Any:
        new = list(leaves)
        for i, x in zip(dyn_idx, dynamic):
            new[i] = x
        return treedef.unflatten(new)

    def init(rngs: Any, dynamic: Any) -> Any:
        a, k = inputs(dynamic)
        return c.module.init(rngs, *a, method=c.method, mutable=c.mutable, **k)

    variables = jax.eval_shape(init, rngs, dyn)

    def apply(variables: Any, rngs: Any, dynamic: Any) -> Any:
        a, k = inputs(dynamic)
        return c.module.apply(
            variables, *a, rngs=rngs, method=c.method, mutable=c.mutable, **k
        )

    flops = _get_flops(apply, variables, rngs, dyn) if compute_flops else -1
    if compute_vjp_flops:

        def apply_vjp(variables: Any, rngs: Any, dynamic: Any) -> Any:
            out, vjp_fn = jax.vjp(apply, variables, rngs, dynamic)
            return vjp_fn(out)

        vjp_flops = _get_flops(apply_vjp, variables, rngs, dyn)
    else:
        vjp_flops = -1
    return flops, vjp_flops


def _get_module_table(
    module: Any,
    depth: int | None,
    show_repeated: bool,
    compute_flops: bool,
    compute_vjp_flops: bool,
) -> Callable[..., Table]:
    """``f(rngs, *args, **kwargs)`` (``init``'s signature) returning the :class:`Table`."""

    def table_fn(*args: Any, **kwargs: Any) -> Table:
        ctx = _CallInfoContext(0, [])
        token = _context.push(_context._call_info, ctx)
        try:
            with jax.check_tracer_leaks(False):
                variables = jax.eval_shape(lambda: module.init(*args, **kwargs))
        finally:
            _context.pop(_context._call_info, token)
        calls = sorted(ctx.calls, key=lambda c: c.index)
        # Columns in the variables' order (Flax takes a set: the order changes
        # from one process to the next).
        collections = tuple(variables.keys())
        rows = []
        all_paths = {c.path for c in calls}
        visited: set[tuple[str, ...]] = set()
        for c in calls:
            inputs = _process_inputs(c.args, c.kwargs)
            if c.path in visited or not hasattr(c.module, c.method):
                if not show_repeated:
                    continue
                module_vars: dict[str, Any] = {}
                counted: dict[str, Any] = {}
            elif depth is not None:
                if len(c.path) > depth:
                    continue
                module_vars, _ = _get_module_variables(c.path, variables, all_paths)
                counted = (
                    _get_path_variables(c.path, variables)
                    if len(c.path) == depth
                    else module_vars
                )
            else:
                module_vars, _ = _get_module_variables(c.path, variables, all_paths)
                counted = module_vars
            visited.add(c.path)
            rows.append(
                Row(
                    c.path,
                    c.module.copy(parent=None),
                    c.method,
                    inputs,
                    c.outputs,
                    module_vars,
                    counted,
                    *_get_call_flops(c, compute_flops, compute_vjp_flops),
                )
            )
        return Table(module, collections, rows)

    return table_fn


def _get_module_variables(
    path: tuple[str, ...], variables: Mapping[str, Any], all_paths: set[tuple[str, ...]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(own variables, submodules' variables)`` at ``path``."""
    own = _get_path_variables(path, variables)
    sub: dict[str, Any] = {col: {} for col in own}
    keys = {k for col in own.values() for k in col}
    for key in keys:
        if path + (key,) in all_paths:
            for col in own:
                if key in own[col]:
                    sub[col][key] = own[col].pop(key)
    return own, sub


def _get_path_variables(
    path: tuple[str, ...], variables: Mapping[str, Any]
) -> dict[str, Any]:
    out = {}
    for col in variables:
        d: Any = variables[col]
        for name in path:
            if not isinstance(d, Mapping) or name not in d:
                d = None
                break
            d = d[name]
        if d is not None:
            out[col] = unfreeze(d)
    return out


def _process_inputs(args: tuple, kwargs: dict) -> Any:
    if args and kwargs:
        return (*args, kwargs)
    if args:
        return args[0] if len(args) == 1 else args
    if kwargs:
        return kwargs
    return ()


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
    table: Table,
    console_extras: Mapping[str, Any] | None,
    table_kwargs: Mapping[str, Any],
    column_kwargs: Mapping[str, Any],
    non_params_cols: list[str],
) -> str:
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
    for col in table.collections:
        rich_table.add_column(col, **column_kwargs)
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
        values = [
            _as_yaml_str(
                _summary_tree_map(_maybe_render, _normalize_structure(getattr(row, c)))
            )
            for c in non_params_cols[2:]
        ]
        first = ["/".join(row.path), type(row.module_copy).__name__ + method]
        rich_table.add_row(*first, *values, *cells)
        html_rows.append(first + values + cells)
    n = len(non_params_cols)
    rich_table.columns[n - 1].footer = rich.text.Text.from_markup(
        "Total", justify="right"
    )
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
    buf = io.StringIO()
    rich.console.Console(file=buf, **console_kwargs).print(rich_table)
    out = Tabulation("\n" + buf.getvalue() + "\n")
    out._html = _html_table(
        table, non_params_cols, html_rows, totals, (all_size, all_bytes)
    )
    return out


def _plain(markup: str) -> str:
    from rich.text import Text

    return Text.from_markup(markup).plain


def _html_table(
    table: Table,
    cols: list[str],
    rows: list[list[str]],
    totals: Mapping[str, tuple[int, int]],
    grand: tuple[int, int],
) -> str:
    head = "".join(
        f"<th style='text-align:left;padding:2px 8px'>{html.escape(c)}</th>"
        for c in list(cols) + list(table.collections)
    )
    body = []
    for r in rows:
        tds = "".join(
            "<td style='vertical-align:top;padding:2px 8px;white-space:pre'>"
            f"{html.escape(_plain(c))}</td>"
            for c in r
        )
        body.append(f"<tr>{tds}</tr>")
    foot = ["<td></td>"] * (len(cols) - 1) + ["<td style='text-align:right'>Total</td>"]
    foot += [
        f"<td style='padding:2px 8px'>{html.escape(_plain(_size_and_bytes_repr(*totals[c])))}</td>"
        for c in table.collections
    ]
    title = html.escape(f"{type(table.module).__name__} Summary")
    caption = html.escape(_plain(f"Total Parameters: {_size_and_bytes_repr(*grand)}"))
    return (
        f"<div><b>{title}</b><table style='border-collapse:collapse;"
        "font-family:monospace;font-size:12px'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        f"<tfoot><tr>{''.join(foot)}</tr></tfoot></table><b>{caption}</b></div>"
    )
