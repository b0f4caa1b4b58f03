"""``tabulate``: a table of a model's module calls, shapes and variables.

The model is run abstractly (``jax.eval_shape``), so tabulating costs no compute.
Each row is one module call: its path, class (and method), inputs, outputs, its
own variables per collection, and optionally the FLOPs of the call and of its VJP.
The table is Flax's (same columns, rows, totals and caption), rendered with rich;
the returned ``str`` also renders as an HTML table in a notebook. lens's
``compute_cost`` adds bytes accessed, parameter and activation bytes, with units
and totals (lens._instruments.call_cost says how they are measured).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import jax

from lens._facades import show_at_flax_paths
from lens._frozen_dict import unfreeze
from lens._instruments import call_cost
from lens._instruments.call_cost import CallCost, Lowerings, Options
from lens.core import DenyList, Filter, LazyRng
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


@contextlib.contextmanager
def _tabulate_context() -> Iterator[None]:
    """Records every module call made in the ``with`` block, as ``tabulate`` does.

    Flax's private name (``flax.linen.module._tabulate_context``), which projects
    use to walk a model's calls: inside the block,
    ``module._context.call_info_stack[-1].calls`` lists a :class:`_CallInfo`
    per call, in the order the calls ended (sort by ``index`` for the order they
    started).
    """
    with _context.pushed(_context._call_info, _CallInfoContext(0, [])):
        yield


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
      cost: lens's costs of the call (None when none was asked for); not a
        constructor argument (Flax's Row has none).
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
    cost: CallCost | None = dataclasses.field(default=None, init=False)

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
    """The rows, with the module summarized and its collections.

    ``total`` (lens's, with any cost option): the whole call's costs, the
    activation bytes summed over the calls that call no other module.
    ``lowerings``: how many calls were lowered to measure them.
    """

    def __init__(self, module: Any, collections: Sequence[str], rows: Iterable[Row]):
        super().__init__(rows)
        self.module = module
        self.collections = collections
        self.total: CallCost | None = None
        self.lowerings = 0


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
    *,
    compute_cost: bool = False,
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
      compute_flops, compute_vjp_flops: add Flax's columns with XLA's FLOPs
        count of each call and of its VJP (forward and backward), from the call
        lowered alone (no compile; one lowering per distinct call).
      compute_cost: lens's: add the bytes accessed of each call (and of its VJP
        with ``compute_vjp_flops``), the bytes of its parameters (its
        submodules' included) and of its outputs; every cost column then reads
        with units (``6.66 MFLOP``, ``36.5 KiB``) and has a total, the whole
        call's.
      **kwargs: more arguments for ``init`` (e.g. ``method``).

    Raises:
      TabulateOptionError: a cost option is not a bool.
      TabulateCostError: a call could not be lowered (or differentiated) alone.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> print(nn.tabulate(nn.Dense(2), jax.random.key(0),
        ...                   console_kwargs={"force_terminal": False})(jnp.ones((1, 3))))
        ... # doctest: +ELLIPSIS
        <BLANKLINE>
        ...Dense Summary...
        >>> table = nn.tabulate(nn.Dense(2), jax.random.key(0), compute_flops=True,
        ...                     compute_cost=True,
        ...                     console_kwargs={"force_terminal": False, "width": 200})
        >>> print(table(jnp.ones((1, 3))))  # doctest: +ELLIPSIS
        <BLANKLINE>
        ...flops ┃ bytes accessed ┃ param bytes ┃ activation bytes ┃ params...
        ...14 FLOP │          108 B │        32 B │              8 B │...
    """
    call_cost.Options.checked(
        "nn.tabulate", compute_flops, compute_vjp_flops, compute_cost
    )
    if mutable != DenyList("intermediates"):
        kwargs["mutable"] = mutable

    def _tabulate_fn(*fn_args: Any, **fn_kwargs: Any) -> str:
        table = _get_module_table(
            module,
            depth=depth,
            show_repeated=show_repeated,
            compute_flops=compute_flops,
            compute_vjp_flops=compute_vjp_flops,
            compute_cost=compute_cost,
        )(rngs, *fn_args, **fn_kwargs, **kwargs)
        cols = ["path", "module", "inputs", "outputs"]
        if compute_cost:
            costs = call_cost.columns(compute_flops, compute_vjp_flops)
            return _render_table(
                table, console_kwargs, table_kwargs, column_kwargs, cols, costs
            )
        if compute_flops:
            cols.append("flops")
        if compute_vjp_flops:
            cols.append("vjp_flops")
        return _render_table(table, console_kwargs, table_kwargs, column_kwargs, cols)

    return _tabulate_fn


def _attributes(obj: Any, seen: dict[int, int]) -> Any:
    """The hashable content of a module's attributes (submodules', lists' and
    dicts' within; not the module's name nor its parent): what two modules must
    share to cost the same on the same inputs. Raises TypeError when a value
    does not hash (an array attribute)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if id(obj) in seen:  # a submodule met twice (or a cycle): its index
            return type(obj), seen[id(obj)]
        seen[id(obj)] = len(seen)
        skip = ("parent", "name") if hasattr(obj, "scope") else ()  # a module's
        fields = [
            (f.name, _attributes(getattr(obj, f.name), seen))
            for f in dataclasses.fields(obj)
            if f.name not in skip and hasattr(obj, f.name)
        ]
        return type(obj), tuple(fields)
    if isinstance(obj, Mapping):
        return tuple((k, _attributes(v, seen)) for k, v in obj.items())
    if isinstance(obj, list | tuple):
        return type(obj), tuple(_attributes(v, seen) for v in obj)
    return call_cost.static_key(obj)  # functions by what they compute


def _call_key(c: _CallInfo, args: Any, own_variables: Any) -> Any:
    """What the cost of ``c`` depends on: the module's class and attributes (not
    its name), the method, the inputs' and variables' shapes and dtypes, the
    mutable collections and the rng streams. None: never deduplicated."""
    try:
        module = _attributes(c.module, {})
        mutable = _attributes(c.mutable, {})
    except TypeError:  # an attribute that does not hash
        return None
    rngs = tuple(sorted(c.rngs)) if c.rngs else ()
    inputs = call_cost.signature(args)
    variables = call_cost.signature(own_variables)
    if inputs is None or variables is None:
        return None
    return call_cost.hashable((module, c.method, inputs, variables, mutable, rngs))


def _call_cost(
    c: _CallInfo, flags: Options, lowerings: Lowerings, own_variables: Any
) -> CallCost:
    """The costs of the call ``c`` (lowered once per distinct call)."""
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

    def apply(variables: Any, rngs: Any, dynamic: Any) -> Any:
        a, k = inputs(dynamic)
        return c.module.apply(
            variables, *a, rngs=rngs, method=c.method, mutable=c.mutable, **k
        )

    def apply_vjp(variables: Any, rngs: Any, dynamic: Any) -> Any:
        out, vjp_fn = jax.vjp(apply, variables, rngs, dynamic)
        return vjp_fn(out)

    variables: list[Any] = []  # made on the first lowering this call needs

    def lower(fn: Callable[..., Any]) -> Callable[[], Any]:
        def run() -> Any:
            if not variables:
                variables.append(jax.eval_shape(init, rngs, dyn))
            return jax.jit(fn).lower(variables[0], rngs, dyn)

        return run

    key = _call_key(c, (args, kwargs), own_variables)
    where = f"{_path_text(c.path)} ({type(c.module).__name__}.{c.method})"
    fwd = vjp = None
    if flags.flops or flags.cost:
        fwd = lowerings.analysis(
            key and ("forward", key),
            lower(apply),
            where=where,
            option="compute_flops" if flags.flops else "compute_cost",
        )
    if flags.vjp:
        vjp = lowerings.analysis(
            key and ("vjp", key),
            lower(apply_vjp),
            where=where,
            option="compute_vjp_flops",
        )
    return CallCost(
        flops=fwd.flops if fwd is not None and flags.flops else None,
        vjp_flops=vjp.flops if vjp is not None else None,
        bytes_accessed=fwd.bytes_accessed if fwd is not None and flags.cost else None,
        vjp_bytes_accessed=vjp.bytes_accessed
        if vjp is not None and flags.cost
        else None,
        param_bytes=call_cost.nbytes(own_variables.get("params", {}))
        if flags.cost
        else None,
        activation_bytes=call_cost.nbytes(
            jax.tree_util.tree_map(_from_value_representation, c.outputs)
        )
        if flags.cost
        else None,
    )


def _get_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """XLA's FLOPs of ``fn(*args, **kwargs)`` lowered (not run). Flax's private name."""
    return call_cost.analyze(jax.jit(fn).lower(*args, **kwargs)).flops


def _get_call_flops(
    c: _CallInfo, compute_flops: bool, compute_vjp_flops: bool
) -> tuple[int, int]:
    """The FLOPs of the recorded call ``c`` and of its VJP, -1 for one not asked for.

    Flax's private name (``flax.linen.summary._get_call_flops``): the call is
    lowered, never run, as ``tabulate(compute_flops=..., compute_vjp_flops=...)``
    lowers it.
    """
    if not compute_flops and not compute_vjp_flops:
        return -1, -1
    flags = Options(bool(compute_flops), bool(compute_vjp_flops), False)
    cost = _call_cost(c, flags, Lowerings("nn.tabulate"), {})
    return (
        cost.flops if cost.flops is not None else -1,
        cost.vjp_flops if cost.vjp_flops is not None else -1,
    )


def _path_text(path: tuple[str, ...]) -> str:
    return "/" + "/".join(path)


def _leaf_activation_bytes(calls: Sequence[_CallInfo]) -> int:
    """The output bytes of every call that called no other module. ``calls`` is
    in the order the calls ended: a call had calls inside it exactly when the
    call that ended just before it started after it."""
    total = 0
    for i, c in enumerate(calls):
        if i == 0 or calls[i - 1].index < c.index:
            total += call_cost.nbytes(
                jax.tree_util.tree_map(_from_value_representation, c.outputs)
            )
    return total


def _get_module_table(
    module: Any,
    depth: int | None,
    show_repeated: bool,
    compute_flops: bool,
    compute_vjp_flops: bool,
    compute_cost: bool = False,
) -> Callable[..., Table]:
    """``f(rngs, *args, **kwargs)`` (``init``'s signature) returning the :class:`Table`."""
    flags = Options(compute_flops, compute_vjp_flops, compute_cost)

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
        costs: dict[int, CallCost | None] = {}  # by call index
        lowerings = Lowerings("nn.tabulate")

        def cost_of(c: _CallInfo) -> CallCost | None:
            if not flags.any:
                return None
            own = _get_path_variables(c.path, variables)
            return _call_cost(c, flags, lowerings, own)

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
            cost = costs[c.index] = cost_of(c)
            rows.append(
                Row(
                    c.path,
                    c.module.copy(parent=None),
                    c.method,
                    inputs,
                    c.outputs,
                    module_vars,
                    counted,
                    -1 if cost is None or cost.flops is None else cost.flops,
                    -1 if cost is None or cost.vjp_flops is None else cost.vjp_flops,
                )
            )
            rows[-1].cost = cost
        table = Table(module, collections, rows)
        if flags.any and calls:  # the top call's, shown or not
            top = (
                costs[calls[0].index] if calls[0].index in costs else cost_of(calls[0])
            )
            table.total = call_cost.total(top, _leaf_activation_bytes(ctx.calls))
        table.lowerings = lowerings.count
        return table

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


show_at_flax_paths(__name__)
