"""``nnx.tabulate``: a table of a model's method calls (path, type, inputs,
outputs, optionally their FLOPs) and its variables per type, as flax.nnx prints it.

The model is cloned and every public method of its object types records its
calls while the top method runs (abstractly, under ``jax.eval_shape``). Rows are
in call order; a module called twice with the same inputs is shown once. With
``compute_flops``, ``compute_vjp_flops`` or lens's ``compute_cost``, each call
is kept as what lowers it alone (its object's structure, the shapes of its
arrays); once the methods are restored, each distinct call is lowered once and
XLA's cost analysis read (lens._instruments.call_cost).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import io
import itertools
import sys
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from lens._instruments import call_cost
from lens._instruments.call_cost import CallCost, Options
from lens.nnx._graph.defs import Static
from lens.nnx._graph.ops import clone, merge, split
from lens.nnx._objects.module import Module
from lens.nnx._objects.object import Pytree, node_items
from lens.nnx._objects.rngs import RngStream
from lens.nnx._variables.variable import Param, RngState, Variable
from lens.nnx.visualization import in_ipython as in_ipython
from lens.typing import SizeBytes as _BaseSizeBytes

_EMPTY: Mapping[str, Any] = MappingProxyType({})
# How secondary text (dtypes, byte sizes) is marked: rich's dim in a terminal;
# in a notebook rich draws dim as the fixed grey #7f7f7f, under WCAG AA on
# JupyterLab's light background, so there it is italic in the theme's colour.
_SECONDARY: contextvars.ContextVar[str] = contextvars.ContextVar(
    "lens_tabulate_secondary", default="dim"
)


def _secondary(text: str) -> str:
    style = _SECONDARY.get()
    return f"[{style}]{text}[/{style}]"


_ID = "_lens_tabulate_id"


class SizeBytes(_BaseSizeBytes):
    """A count of values and bytes, shown as ``6,070 (24.3 KB)``."""

    def __repr__(self) -> str:
        return f"{self.size:,} " + _secondary(f"({_bytes_repr(self.bytes)})")

    __str__ = __repr__


def _bytes_repr(num_bytes: int) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if num_bytes > k:
            return f"{num_bytes / k:,.1f} {unit}"
    return f"{num_bytes:,} B"


class ObjectInfo(NamedTuple):
    """One object of the model: its path, the size of its variables per type
    (its own and those below it, each variable counted once), and its own
    variables per type by attribute name."""

    path: tuple[Any, ...]
    stats: dict[type, SizeBytes]
    variable_groups: dict[type, dict[Any, Variable]]


@dataclasses.dataclass
class CallInfo:
    """One row: a method call (what ``row_filter`` receives)."""

    call_order: int
    object_id: int
    type: type
    path: tuple[Any, ...]
    inputs_repr: str
    outputs: Any
    flops: int | None
    vjp_flops: int | None
    cost: CallCost | None = None  # lens's: every cost asked for


NodeStats = dict[int, ObjectInfo | None]
"""The objects of a model by id (``None`` for a Variable): what tabulate collects."""


@dataclasses.dataclass
class ArrayRepr:
    """An input or output array as the table shows it: ``float32[4,3]``."""

    shape: tuple[int, ...]
    dtype: Any

    @classmethod
    def from_array(cls, x: Any) -> ArrayRepr:
        return cls(jnp.shape(x), jnp.result_type(x))

    def __str__(self) -> str:
        return _secondary(str(self.dtype)) + f"[{','.join(map(str, self.shape))}]"


class SimpleObjectRepr:
    """An object passed to or returned by a call, shown as ``Linear(...)``."""

    def __init__(self, obj: Any):
        self.type = type(obj)

    def __str__(self) -> str:
        return f"{self.type.__name__}(...)"

    __repr__ = __str__


def __getattr__(name: str) -> Any:
    # NoneDumper needs PyYAML (not a lens dependency): made on first use.
    if name == "NoneDumper":
        dumper = _none_dumper()
        globals()[name] = dumper
        return dumper
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _none_dumper() -> type:
    try:
        import yaml
    except ImportError as e:
        raise ImportError(
            "nnx.summary.NoneDumper is a PyYAML dumper: install PyYAML (pip "
            "install pyyaml) to use it."
        ) from e

    class NoneDumper(yaml.SafeDumper):
        """A YAML dumper that writes ``None`` as ``None`` (not ``null``), as the
        table shows inputs and outputs."""

    NoneDumper.add_representer(
        type(None),
        lambda dumper, _: dumper.represent_scalar("tag:yaml.org,2002:str", "None"),
    )
    return NoneDumper


def filter_rng_streams(row: CallInfo) -> bool:
    """The default ``row_filter``: hides the calls of rng streams."""
    return not issubclass(row.type, RngStream)


def _var_type(v: Variable) -> type:
    return RngState if isinstance(v, RngState) else type(v)


def _add(stats: dict[type, SizeBytes], t: type, size: SizeBytes) -> None:
    stats[t] = (
        SizeBytes(stats[t].size + size.size, stats[t].bytes + size.bytes)
        if t in stats
        else size
    )


def _children(x: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(x, Pytree):
        yield from node_items(x)
    elif isinstance(x, dict):
        yield from x.items()
    elif isinstance(x, list | tuple):
        yield from enumerate(x)


def _collect_stats(
    path: tuple[Any, ...], node: Any, infos: dict[int, ObjectInfo | None]
) -> None:
    """Fills ``infos`` (by id) for ``node`` and the objects below it, marking
    each object with its id so the calls of its copies can be traced back."""
    info = ObjectInfo(path, {}, {})
    infos[id(node)] = info
    if isinstance(node, Pytree):
        object.__setattr__(node, _ID, id(node))
    for key, value in list(_children(node)):
        if id(value) in infos:
            continue
        if isinstance(value, Variable):
            t = _var_type(value)
            _add(info.stats, t, SizeBytes.from_any(value.value))
            info.variable_groups.setdefault(t, {})[key] = value
            infos[id(value)] = None
        elif isinstance(value, Pytree | dict | list | tuple):
            _collect_stats((*path, key), value, infos)
            child = infos[id(value)]
            assert child is not None
            for t, size in child.stats.items():
                _add(info.stats, t, size)


def _object_types(model: Any) -> set[type]:
    from lens.nnx._graph.ops import iter_graph

    return {type(x) for _, x in iter_graph(model, graph=True) if isinstance(x, Pytree)}


def _methods(types: set[type]) -> dict[tuple[type, str], Callable[..., Any]]:
    """The public methods (and ``__call__``) of the model's object types, less
    the ones lens's base classes define (``sow``, ``train``, ...)."""
    out = {}
    for t in types:
        for name, fn in inspect.getmembers(t, inspect.isfunction):
            if name.startswith("_") and name != "__call__":
                continue
            if getattr(Module, name, None) is fn or getattr(Pytree, name, None) is fn:
                continue
            out[(t, name)] = fn
    return out


def _vjp_lowering(run: Callable[[Any], Any], state: Any) -> Any:
    """The lowering of the forward and backward pass of ``run(state)`` with
    respect to its floating-point inputs (the outputs as their own cotangents)."""
    leaves, treedef = jax.tree.flatten(state)
    inexact = [i for i, x in enumerate(leaves) if jnp.issubdtype(x.dtype, jnp.inexact)]

    def fwd_bwd(*xs: Any) -> Any:
        def f(*diff: Any) -> Any:
            full = list(xs)
            for i, d in zip(inexact, diff, strict=True):
                full[i] = d
            out = jax.tree.leaves(run(jax.tree.unflatten(treedef, full)))
            return [o for o in out if jnp.issubdtype(o.dtype, jnp.inexact)]

        out, pullback = jax.vjp(f, *(xs[i] for i in inexact))
        return pullback(out)

    return jax.jit(fwd_bwd).lower(*leaves)


def _abstract(x: Any) -> Any:
    return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def _graph_key(graphdef: Any) -> Any:
    """``graphdef`` as a key that two objects computing alike share: static
    attributes by what they compute (two initializers made apart are one),
    tabulate's marks (each object's id) left out. None: no key."""
    try:
        attributes = tuple(
            (k, call_cost.static_key(v.value) if isinstance(v, Static) else v)
            for k, v in graphdef.attributes
            if k != _ID
        )
    except TypeError:  # a static attribute that does not hash
        return None
    return call_cost.hashable((tuple(graphdef.nodes), attributes))


@dataclasses.dataclass(frozen=True)
class _Lowerable:
    """A call as it can be lowered alone, after the recording: the method, the
    structure of its object and arguments, their arrays' shapes and dtypes."""

    fn: Callable[..., Any]
    graphdef: Any
    state: Any  # of jax.ShapeDtypeStruct
    key: Any  # None: never deduplicated
    activation_bytes: int = 0

    @classmethod
    def of(
        cls, fn: Callable[..., Any], obj: Any, args: tuple, kwargs: dict
    ) -> _Lowerable:
        """The call as it is about to run (before it changes its object)."""
        graphdef, state = split(((obj, *args), kwargs))
        state = jax.tree.map(_abstract, state)
        graph, avals = _graph_key(graphdef), call_cost.signature(state)
        key = None if graph is None or avals is None else (fn, graph, avals)
        return cls(fn, graphdef, state, key)

    def run(self, state: Any) -> Any:
        (o, *a), k = merge(self.graphdef, state)
        return self.fn(o, *a, **k)


@dataclasses.dataclass
class _Frame:
    """A call in progress: whether it called another module."""

    calls_others: bool = False


@dataclasses.dataclass
class _Recorder:
    """Wraps methods so each call of a model object adds a :class:`CallInfo`
    (and, for the cost options, what lowers it alone)."""

    infos: dict[int, ObjectInfo | None]
    costing: bool
    rows: list[CallInfo] = dataclasses.field(default_factory=list)
    seen: set[Any] = dataclasses.field(default_factory=set)
    counter: Iterator[int] = dataclasses.field(default_factory=itertools.count)
    lowerable: dict[int, _Lowerable] = dataclasses.field(default_factory=dict)
    stack: list[_Frame] = dataclasses.field(default_factory=list)
    leaf_activation_bytes: int = 0
    # the forward cost options: each new call is lowered where it runs (its body
    # traced once, as flax.nnx does), once per distinct call
    flags: Options | None = None
    lowerings: call_cost.Lowerings | None = None
    depth: int | None = None  # rows deeper than this are not shown: not lowered
    forward: dict[int, Any] = dataclasses.field(default_factory=dict)

    def _lower_here(
        self,
        order: int,
        call: _Lowerable,
        path: tuple,
        obj: Any,
        args: tuple,
        kwargs: dict,
    ) -> Any:
        """Runs a new call by lowering it (its body runs once, in that trace, and
        its own calls record themselves) and returns its outputs; a call already
        lowered (the same key) just runs."""
        assert self.lowerings is not None and self.flags is not None
        key = call.key and ("forward", call.key)
        done = self.lowerings.done(key)
        if done is not None:
            self.forward[order] = done
            return call.fn(obj, *args, **kwargs)
        jitted = jax.jit(call.run)
        where = f"{'/' + '/'.join(map(str, path))} ({type(obj).__name__})"
        self.forward[order] = self.lowerings.analysis(
            key,
            lambda: jitted.lower(call.state),
            where=where,
            option="compute_flops" if self.flags.flops else "compute_cost",
        )
        _, state = split(((obj, *args), kwargs))
        return jitted(state)  # the trace just made: the body does not run again

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def recorded(obj: Any, *args: Any, **kwargs: Any) -> Any:
            info = self.infos.get(vars(obj).get(_ID, -1))
            if info is None:  # not an object of the model (or a container)
                return fn(obj, *args, **kwargs)
            order = next(self.counter)
            inputs = _inputs_repr(args, kwargs)
            path = info.path if fn.__name__ == "__call__" else (*info.path, fn.__name__)
            key = (inputs, vars(obj)[_ID], fn.__name__)
            new = key not in self.seen
            self.seen.add(key)
            layer = not isinstance(obj, RngStream)  # rng plumbing: no layer
            lowerable = (
                _Lowerable.of(fn, obj, args, kwargs) if new and self.costing else None
            )
            frame = _Frame()
            if layer and self.stack:
                self.stack[-1].calls_others = True
            self.stack.append(frame)
            forward = (
                self.flags is not None
                and (self.flags.flops or self.flags.cost)
                and (
                    self.depth is None or len(path) <= self.depth or not self.stack[:-1]
                )
            )
            try:
                if lowerable is not None and forward:
                    out = self._lower_here(order, lowerable, path, obj, args, kwargs)
                else:
                    out = fn(obj, *args, **kwargs)
            finally:
                self.stack.pop()
            if layer and not frame.calls_others:
                self.leaf_activation_bytes += call_cost.nbytes(out)
            if new:
                if lowerable is not None:
                    self.lowerable[order] = dataclasses.replace(
                        lowerable, activation_bytes=call_cost.nbytes(out)
                    )
                self.rows.append(
                    CallInfo(
                        order, vars(obj)[_ID], type(obj), path, inputs,
                        jax.tree.map(_dummy, out), None, None,
                    )
                )  # fmt: skip
            return out

        return recorded


def _call_cost(
    row: CallInfo,
    call: _Lowerable,
    info: ObjectInfo,
    flags: Options,
    lowerings: call_cost.Lowerings,
    forward: Any = None,
) -> CallCost:
    """The costs of one recorded call (lowered once per distinct call; the
    forward one already, where the call ran)."""
    where = f"{'/' + '/'.join(map(str, row.path))} ({row.type.__name__})"
    fwd = forward
    vjp = None
    if fwd is None and (flags.flops or flags.cost):
        fwd = lowerings.analysis(
            call.key and ("forward", call.key),
            lambda: jax.jit(call.run).lower(call.state),
            where=where,
            option="compute_flops" if flags.flops else "compute_cost",
        )
    if flags.vjp:
        vjp = lowerings.analysis(
            call.key and ("vjp", call.key),
            lambda: _vjp_lowering(call.run, call.state),
            where=where,
            option="compute_vjp_flops",
        )
    params = sum(
        (size.bytes for t, size in info.stats.items() if issubclass(t, Param)), 0
    )
    cost = flags.cost
    return CallCost(
        flops=fwd.flops if fwd is not None and flags.flops else None,
        vjp_flops=vjp.flops if vjp is not None else None,
        bytes_accessed=fwd.bytes_accessed if fwd is not None and cost else None,
        vjp_bytes_accessed=vjp.bytes_accessed if vjp is not None and cost else None,
        param_bytes=params if cost else None,
        activation_bytes=call.activation_bytes if cost else None,
    )


class _Text(str):
    """A leaf already rendered (shown as is, no quotes)."""


def _array_text(shape: Any, dtype: Any) -> _Text:
    return _Text(str(ArrayRepr(shape, dtype)))


def _dummy(x: Any) -> Any:
    """What a call's input or output leaf shows as."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ArrayRepr.from_array(x)
    if isinstance(x, Pytree | Variable):
        return SimpleObjectRepr(x)
    return x


def _simple(x: Any) -> Any:
    """``x`` as dicts, lists and text leaves (what the table shows)."""
    if isinstance(x, _Text):
        return x
    if isinstance(x, ArrayRepr | SimpleObjectRepr):
        return _Text(str(x))
    if isinstance(x, dict):
        keys = list(x)
        try:
            keys = sorted(keys)
        except TypeError:
            pass
        return {k: _simple(x[k]) for k in keys}
    if isinstance(x, list | tuple):
        return [_simple(e) for e in x]
    if isinstance(x, type):
        return _Text(f"type[{x.__name__}]")
    if isinstance(x, str):
        return _Text(x)
    if x is None or isinstance(x, int | float | bool | complex):
        return _Text(repr(x))
    flat = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)[0]
    if flat and flat[0][0]:  # another pytree: its children by key
        return {jax.tree_util.keystr(p).lstrip("."): _simple(v) for p, v in flat}
    return _Text(repr(x))


def _yaml_lines(x: Any) -> list[str]:
    """Block YAML of a simple structure, as flax prints inputs and outputs."""
    if isinstance(x, dict):
        if not x:
            return ["{}"]
        out = []
        for k, v in x.items():
            if isinstance(v, dict) and v:
                out += [f"{k}:", *("  " + line for line in _yaml_lines(v))]
            elif isinstance(v, list) and v:
                out += [f"{k}:", *_yaml_lines(v)]
            else:
                out.append(f"{k}: {_yaml_lines(v)[0]}")
        return out
    if isinstance(x, list):
        if not x:
            return ["[]"]
        out = []
        for v in x:
            first, *rest = _yaml_lines(v)
            out += [f"- {first}", *("  " + line for line in rest)]
        return out
    return [str(x)]


def _as_text(value: Any) -> str:
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        return ""
    return "\n".join(_yaml_lines(_simple(jax.tree.map(_dummy, value))))


def _inputs_repr(args: tuple, kwargs: dict) -> str:
    parts = []
    if args:
        parts.append(_as_text(args[0] if len(args) == 1 and not kwargs else list(args)))
    if kwargs:
        parts.append(_as_text(kwargs))
    return "\n".join(parts)


def _variables_cell(info: ObjectInfo, var_type: type) -> str:
    attributes: dict[Any, Any] = {}
    for name, variable in info.variable_groups.get(var_type, {}).items():
        value = variable.value
        value_repr = (
            _array_text(jnp.shape(value), jnp.result_type(value))
            if hasattr(value, "shape") and hasattr(value, "dtype")
            else ""
        )
        metadata = {k: _simple(v) for k, v in variable.metadata.items()}
        if metadata:
            attributes[name] = {"value": value_repr, **metadata}
        elif value_repr:
            attributes[name] = value_repr
    cell = _as_text(attributes) + "\n\n" if attributes else ""
    size = info.stats.get(var_type)
    return cell + f"[bold]{size}[/bold]" if size else cell


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (not a terminal IPython, nor an
    InteractiveShell some library made in this process)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _build_table(
    title: str,
    rows: list[CallInfo],
    root: ObjectInfo,
    infos: dict[int, ObjectInfo | None],
    flags: Options,
    total_cost: CallCost | None,
    table_kwargs: Mapping[str, Any],
    column_kwargs: Mapping[str, Any],
) -> Any:
    import rich.table
    import rich.text

    var_types = sorted(root.stats, key=lambda t: t.__name__)
    table = rich.table.Table(
        show_header=True, show_lines=True, show_footer=True, title=title,
        **dict(table_kwargs),
    )  # fmt: skip
    names = ["path", "type", "inputs", "outputs"]
    # Flax's FLOPs columns as Flax prints them; with compute_cost, lens's cost
    # columns (those two among them) with units and totals.
    costs = call_cost.columns(flags.flops, flags.vjp) if flags.cost else []
    if not flags.cost:
        names += ["flops"] * flags.flops + ["vjp_flops"] * flags.vjp
    for name in names:
        table.add_column(name, **dict(column_kwargs))
    for column in costs:
        table.add_column(column.name, **{**call_cost.RICH_COLUMN, **column_kwargs})
    for name in (t.__name__ for t in var_types):
        table.add_column(name, **dict(column_kwargs))
    for row in rows:
        info = infos[row.object_id]
        assert info is not None
        cells = ["/".join(map(str, row.path)), row.type.__name__, row.inputs_repr]
        cells.append(_as_text(row.outputs))
        if not flags.cost:
            cells += [str(row.flops)] * flags.flops + [str(row.vjp_flops)] * flags.vjp
        cells += [column.cell(row.cost) for column in costs]
        cells += [_variables_cell(info, t) for t in var_types]
        table.add_row(*cells)
    offset = len(names) - 1
    table.columns[offset].footer = rich.text.Text.from_markup("Total", justify="right")
    for i, column in enumerate(costs):
        table.columns[offset + 1 + i].footer = column.cell(total_cost)
    offset += len(costs)
    for i, t in enumerate(var_types):
        table.columns[offset + 1 + i].footer = str(root.stats[t])
    table.caption_style = "bold"
    total = sum(root.stats.values(), SizeBytes(0, 0))
    table.caption = f"\nTotal Parameters: {total}"
    if flags.cost:
        table.caption += f"\n[not bold]{call_cost.CAPTION}[/not bold]"
    return table


def _record(
    model: Any, method: str, args: tuple, kwargs: dict, recorder: _Recorder
) -> None:
    """Runs ``model.<method>(*args, **kwargs)`` abstractly with every public
    method of the model's object types recording its calls."""
    methods = _methods(_object_types(model))
    if not callable(getattr(type(model), method, None)):
        raise AttributeError(
            f"nnx.tabulate: {type(model).__name__} has no method {method!r}.\n"
            "Pass method= the name of a method of the object."
        )
    methods.setdefault((type(model), method), getattr(type(model), method))
    # which methods a class defines itself: an inherited one is wrapped on the
    # class for the run, then deleted again (not left behind as the class's own)
    own = {(t, name) for t, name in methods if name in t.__dict__}
    try:
        for (t, name), fn in methods.items():
            setattr(t, name, recorder.wrap(fn))
        top = getattr(type(model), method)
        # Abstractly, on a copy rebuilt inside the trace (objects made outside
        # one may not be updated in it: batch statistics, rng counts).
        graphdef, state = split(((model, *args), kwargs))

        def run(state: Any) -> None:
            (m, *a), k = merge(graphdef, state)
            top(m, *a, **k)

        jax.eval_shape(run, state)
    finally:
        for (t, name), fn in methods.items():
            if (t, name) in own:
                setattr(t, name, fn)
            elif name in t.__dict__:
                delattr(t, name)


def _add_costs(
    rows: list[CallInfo],
    recorder: _Recorder,
    flags: Options,
    lowerings: call_cost.Lowerings,
) -> CallCost | None:
    """Fills each row's costs (lowering each distinct call once, with the
    methods unwrapped) and returns the total: the top call's."""
    if not flags.any:
        return None
    for row in rows:
        info = recorder.infos[row.object_id]
        assert info is not None
        call = recorder.lowerable[row.call_order]
        forward = recorder.forward.get(row.call_order)
        row.cost = _call_cost(row, call, info, flags, lowerings, forward)
        row.flops, row.vjp_flops = row.cost.flops, row.cost.vjp_flops
    return call_cost.total(rows[0].cost, recorder.leaf_activation_bytes)


def _summary_table(
    obj: Any,
    method: str,
    input_args: tuple,
    input_kwargs: dict[str, Any],
    depth: int | None,
    row_filter: Callable[[CallInfo], bool],
    flags: Options,
    table_kwargs: Mapping[str, Any],
    column_kwargs: Mapping[str, Any],
) -> Any:
    """The rich Table of :func:`tabulate` (run on a copy of ``obj``)."""
    model = clone(obj)
    infos: dict[int, ObjectInfo | None] = {}
    _collect_stats((), model, infos)
    lowerings = call_cost.Lowerings("nnx.tabulate")
    recorder = _Recorder(
        infos, flags.any, flags=flags, lowerings=lowerings, depth=depth
    )
    _record(model, method, input_args, input_kwargs, recorder)
    rows = sorted(recorder.rows, key=lambda r: r.call_order)
    # The top call first (its costs are the total), then the rows kept by depth
    # (their costs computed before row_filter, which may read them).
    top, rest = rows[:1], rows[1:]
    rest = [r for r in rest if depth is None or len(r.path) <= depth]
    total = _add_costs(top + rest, recorder, flags, lowerings)
    rows = [
        r
        for r in top + rest
        if (depth is None or len(r.path) <= depth) and row_filter(r)
    ]
    root = infos[id(model)]
    assert root is not None
    title = f"{type(obj).__name__} Summary"
    return _build_table(
        title, rows, root, infos, flags, total, table_kwargs, column_kwargs
    )


def tabulate(
    obj: Any,
    *input_args: Any,
    depth: int | None = None,
    method: str = "__call__",
    row_filter: Callable[[CallInfo], bool] = filter_rng_streams,
    table_kwargs: Mapping[str, Any] = _EMPTY,
    column_kwargs: Mapping[str, Any] = _EMPTY,
    console_kwargs: Mapping[str, Any] = _EMPTY,
    compute_flops: bool = False,
    compute_vjp_flops: bool = False,
    compute_cost: bool = False,
    **input_kwargs: Any,
) -> str:
    """A rich table of ``obj.<method>(*input_args, **input_kwargs)``: one row per
    method call of an object of ``obj`` (path, type, inputs, outputs, and with
    ``compute_flops`` / ``compute_vjp_flops`` the FLOPs of its forward /
    forward-and-backward pass), then its variables per type: each object's own
    with their shapes, the sizes including those below it, totals at the foot.

    lens's ``compute_cost=True`` adds the bytes accessed of each call (and of
    its VJP with ``compute_vjp_flops``), the bytes of its parameters (those
    below it included) and of its outputs; every cost column then reads with
    units (``6.66 MFLOP``, ``36.5 KiB``) and has a total, the whole call's. The
    FLOPs and bytes accessed are XLA's cost analysis of each call lowered alone
    (before fusion; no compile), once per distinct call (its object's
    structure, method and the shapes and dtypes of its arrays).

    The call runs on a copy and abstractly (``obj`` is not changed); ``depth``
    keeps rows at most that deep, ``row_filter`` the rows it accepts (rng stream
    calls are hidden by default). ``table_kwargs``, ``column_kwargs`` and
    ``console_kwargs`` go to ``rich``'s Table, add_column and Console.

    Raises:
      TabulateOptionError: a cost option is not a bool.
      TabulateCostError: a call could not be lowered (or differentiated) alone.
    """
    flags = Options.checked(
        "nnx.tabulate", compute_flops, compute_vjp_flops, compute_cost
    )
    notebook = _in_notebook()
    token = _SECONDARY.set("italic" if notebook else "dim")
    try:
        table = _summary_table(
            obj, method, input_args, input_kwargs, depth, row_filter,
            flags, table_kwargs, column_kwargs,
        )  # fmt: skip
    finally:
        _SECONDARY.reset(token)
    import rich.console

    kwargs = {"force_terminal": True, "force_jupyter": notebook}
    buf = io.StringIO()
    console = rich.console.Console(file=buf, **{**kwargs, **console_kwargs})
    if flags.cost:
        costs = call_cost.columns(flags.flops, flags.vjp)
        call_cost.fit_rich(console, table, 4, len(costs))
    console.print(table)
    return buf.getvalue()
