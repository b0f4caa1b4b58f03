"""``tabulate``: a table of a model's module calls, shapes and variables.

The model is run abstractly (``jax.eval_shape``), so tabulating costs no compute.
Each row is one module call: its path, class (and method), inputs, outputs, its
own variables per collection, and optionally the FLOPs of the call and of its VJP.
The table is Flax's (same columns, rows, totals and caption), rendered with rich;
the returned ``str`` also renders as an HTML table in a notebook.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import jax

from lens.core.frozen_dict import unfreeze
from lens.core.scope import DenyList, Filter, LazyRng
from lens.nn import _context
from lens.nn._summary_render import (
    _from_value_representation,
    _render_table,
    _represent_tree,
    _size_and_bytes,
)

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
