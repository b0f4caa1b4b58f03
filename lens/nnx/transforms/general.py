"""The recipe every lens.nnx transform shares (flax.nnx's ``transforms.general``).

Arguments follow JAX's conventions: ``in_axes`` / ``argnums`` give one spec per
argument, and an object argument is lifted as one pytree would be. The Lift types
refine a spec inside one object: ``StateAxes({Param: 1, BatchStat: None})`` maps
each filter's variables on its own axis; ``DiffState(0, LoRAParam)`` differentiates
argument 0's ``LoRAParam`` variables only.

Each call runs one recipe:

1. walk every object argument once (aliases numbered as such), giving a static
   graph structure and the variables' values, each resolved to its spec
   (:func:`split_inputs`);
2. check *consistent aliasing*: a node met twice must get the same spec;
3. call the JAX transform on a pure function of those values, which rebuilds the
   objects, calls the user function, and walks the arguments again to return their
   new values, plus the outputs (:func:`split_outputs`; an output that is an input
   must keep its input spec; an object captured from outside cannot be returned);
4. write the new values back into the caller's objects, and rebuild the outputs
   (:func:`write_back`, :func:`merge_outputs`; an input returned comes back as the
   same Python object).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import jax

from lens import errors
from lens.nnx import graphlib
from lens.nnx.filterlib import to_predicate
from lens.nnx.graphwalk import (
    Builder,
    InPlaceBuilder,
    Leaf,
    Walker,
    is_graph_node,
    path_str,
)
from lens.nnx.pytreelib import node_items
from lens.nnx.tracers import frame
from lens.nnx.variablelib import StaticValue, Variable
from lens.traceback_util import api_boundary


class StateAxes:
    """Per-filter axes for one object in ``vmap``'s ``in_axes``/``out_axes``.

    ``StateAxes({Param: 1, BatchStat: None})``: params mapped on axis 1, batch stats
    broadcast. Filters are tried in order; every variable must match one (end with
    ``...: axis`` for the rest).
    """

    _what = "axis"
    # made by nnx.prefix from a model: flax's tree-shaped prefix, allowed in
    # every mode
    from_prefix = False

    def __init__(self, filter_axes: Mapping[Any, Any] | Any):
        items = filter_axes.items() if isinstance(filter_axes, Mapping) else filter_axes
        self.items = tuple(items)
        self._preds = tuple(to_predicate(f) for f, _ in self.items)

    def axis(self, path: tuple, x: Any) -> Any:
        for pred, (_, ax) in zip(self._preds, self.items, strict=True):
            if pred(path, x):
                return ax
        raise ValueError(
            f"{self!r}: no filter matches {path_str(path)} "
            f"({type(x).__name__}); add ...: <{self._what}> for the rest."
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateAxes) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return tuple((repr(f), ax) for f, ax in self.items)

    def __repr__(self) -> str:
        inner = ", ".join(f"{_filter_name(f)}: {ax}" for f, ax in self.items)
        return f"StateAxes({{{inner}}})"


def _filter_name(f: Any) -> str:
    if f is Ellipsis:
        return "..."
    return f.__name__ if isinstance(f, type) else repr(f)


@dataclasses.dataclass(frozen=True)
class DiffState:
    """``argnums`` entry: differentiate argument ``argnum``'s ``filter`` variables."""

    argnum: int
    filter: Any


class GraphArg:
    """An object argument, as a placeholder leaf while the pytree is flattened."""

    __slots__ = ("node",)

    def __init__(self, node: Any):
        self.node = node


def wrap_objects(tree: Any) -> Any:
    return jax.tree.map(
        lambda x: GraphArg(x) if is_graph_node(x) else x, tree, is_leaf=is_graph_node
    )


@dataclasses.dataclass(frozen=True)
class Skeleton:
    """The static half of the arguments: pytree structure, graph defs, statics."""

    treedef: Any
    slots: tuple[Any, ...]  # per leaf: ("graph", def) | ("leaf",) | ("static", v)


class Carrier:
    """A pytree of values whose static skeleton rides in the aux data, so jit caches
    on it and vmap/grad hand it back."""

    __slots__ = ("values", "aux", "axes")

    def __init__(self, values: list[Any], aux: Any, axes: Any = None):
        self.values = values
        self.aux = aux
        self.axes = axes  # per value, the out axis to move it to (vmap)


jax.tree_util.register_pytree_node(
    Carrier,
    lambda c: (c.values, (c.aux, c.axes)),
    lambda aux, values: Carrier(list(values), *aux),
)


@dataclasses.dataclass
class Entry:
    """One value of the flattened arguments: its spec, and where it came from."""

    value: Any
    spec: Any
    slot: int  # index into the skeleton's slots
    leaf: Leaf | None  # the walked graph leaf (None: a plain pytree leaf)
    arg: int = 0  # the argument it belongs to


def split_args(
    args: tuple[Any, ...],
    specs: tuple[Any, ...],
    walker: Walker,
    static: frozenset[int] = frozenset(),
) -> tuple[Skeleton, list[Entry]]:
    """Walks ``args`` (each with its spec prefix): the static skeleton, and one entry
    per value (graph leaves in walk order, plain leaves in pytree order)."""
    wrapped = wrap_objects(args)
    is_graph = lambda x: isinstance(x, GraphArg)  # noqa: E731
    leaves, treedef = jax.tree.flatten(wrapped, is_leaf=is_graph)
    leaf_specs: list[Any] = []
    arg_of_leaf: list[int] = []
    for i, (arg, spec) in enumerate(zip(wrapped, specs, strict=True)):
        n = len(jax.tree.leaves(arg, is_leaf=is_graph))
        leaf_specs += [None] * n if i in static else _broadcast(spec, arg, i)
        arg_of_leaf += [i] * n
    slots: list[Any] = []
    entries: list[Entry] = []
    counter = [0] * len(args)
    for leaf, spec, i in zip(leaves, leaf_specs, arg_of_leaf, strict=True):
        j = counter[i]
        counter[i] += 1
        if i in static:
            raw = leaf.node if isinstance(leaf, GraphArg) else leaf
            slots.append(("static", StaticValue(raw)))
        elif isinstance(leaf, GraphArg):
            start = len(walker.leaves)
            root = ("args", i) if j == 0 else ("args", i, j)
            walker.root_len = len(root)
            d = walker.node(leaf.node, root, spec)
            slots.append(("graph", d, root))
            entries += [
                Entry(lf.value, lf.spec, len(slots) - 1, lf, i)
                for lf in walker.leaves[start:]
            ]
        else:
            if isinstance(spec, StateAxes):
                raise TypeError(
                    f"StateAxes applies to objects only; argument {i} has a "
                    f"{type(leaf).__name__} there."
                )
            slots.append(("leaf",))
            entries.append(Entry(leaf, spec, len(slots) - 1, None, i))
    return Skeleton(treedef, tuple(slots)), entries


def _broadcast(prefix: Any, tree: Any, i: int) -> list[Any]:
    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, StateAxes | DiffSpec | GraphArg)

    out: list[Any] = []

    def expand(p: Any, sub: Any) -> None:
        n = len(jax.tree.leaves(sub, is_leaf=lambda x: isinstance(x, GraphArg)))
        out.extend([p] * n)

    try:
        jax.tree.map(expand, prefix, tree, is_leaf=is_leaf)
        return out
    except ValueError as e:
        raise ValueError(
            f"The spec {prefix!r} for argument {i} is not a prefix of it: {e}"
        ) from None


def rebuild(
    skel: Skeleton, values: list[Any], table: dict[int, Any] | None = None
) -> tuple[Any, ...]:
    """The arguments rebuilt from ``skel`` and ``values``; ``table``, when given,
    receives node index -> rebuilt object."""
    it = iter(values)
    builder = Builder(it)
    if table is not None:
        builder.nodes = table
    leaves = []
    for slot in skel.slots:
        if slot[0] == "graph":
            leaves.append(builder.build(slot[1]))
        elif slot[0] == "static":
            leaves.append(slot[1].value)
        else:
            leaves.append(next(it))
    return jax.tree.unflatten(skel.treedef, leaves)


def split_outputs(out: Any, out_spec: Any, walker: Walker) -> Any:
    """The outputs with each object replaced by a carrier of its new leaves."""
    mode = _ACTIVE_MODE.get()
    if mode is not None and mode.simple and mode.name == walker.transform:
        _check_simple_outputs(mode.name, out, walker)
    walker.role = "output"
    wrapped = wrap_objects(out)
    specs = _broadcast(out_spec, wrapped, 0)
    leaves, treedef = jax.tree.flatten(
        wrapped, is_leaf=lambda x: isinstance(x, GraphArg)
    )
    new = []
    for j, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        if isinstance(leaf, GraphArg):
            start = len(walker.leaves)
            path = ("output",) if len(leaves) == 1 else ("output", j)
            walker.root_len = len(path)
            d = walker.node(leaf.node, path, spec)
            fresh = walker.leaves[start:]
            if fresh and isinstance(spec, StateAxes):
                # a new object with per-filter axes: every leaf leaves the
                # transform on axis 0, and is moved to its own axis after
                axes = tuple(lf.spec for lf in fresh)
                new.append(Carrier([lf.value for lf in fresh], StaticValue(d), axes))
                continue
            new.append(Carrier([lf.value for lf in fresh], StaticValue(d)))
        else:
            new.append(leaf)
    return jax.tree.unflatten(treedef, new)


# The mode of the transform being called (its outputs are checked inside it).
_ACTIVE_MODE: contextvars.ContextVar[TransformMode | None] = contextvars.ContextVar(
    "lens_nnx_transform_mode", default=None
)


@contextlib.contextmanager
def active_mode(mode: TransformMode) -> Iterator[None]:
    """Runs a transform's call with ``mode`` as the active one (its inner
    functions' outputs are checked by flax.nnx's rules for that mode)."""
    token = _ACTIVE_MODE.set(mode)
    try:
        yield
    finally:
        _ACTIVE_MODE.reset(token)


def _check_simple_outputs(name: str, out: Any, walker: Walker) -> None:
    """flax.nnx's simple modes: no input Variable and no Variable captured from
    outside the function among the outputs."""
    for path, v in variables_with_paths(out, "output"):
        i = walker.index.get(id(v))
        if i is not None and walker.specs[i][2] == "input":
            raise _duplicate(name, v, path_str(walker.specs[i][1]), path)
        frame_of = object.__getattribute__(v, "_lens_frame")
        if i is None and walker.frame is not None and frame_of is not walker.frame:
            raise errors.CapturedOutputError(
                f"Cannot return captured Variable of type {type(v).__name__} from "
                f"nnx.{name}.\nFound at path: {path}. Only arguments are tracked: "
                "pass its object as an argument, or create it inside the function."
            )


def merge_outputs(out: Any, nodes: list[Any]) -> Any:
    """``out`` with each carrier rebuilt into its object (sharing ``nodes``)."""
    if isinstance(out, jax.Array) or out is None:  # the common case, no walk
        return out
    table = dict(enumerate(nodes))

    def build(x: Any) -> Any:
        if isinstance(x, Carrier):
            b = Builder(iter(x.values), table)
            obj = b.build(x.aux.value)
            table.update(b.nodes)
            return obj
        return x

    return jax.tree.map(build, out, is_leaf=lambda x: isinstance(x, Carrier))


def check_structure(before: Skeleton, after: Skeleton, name: str) -> None:
    if before != after:
        raise errors.GraphStructureError(
            f"An argument of nnx.{name} changed structure inside the function (a "
            "variable or submodule was added, removed or replaced, or a static "
            "attribute changed).\nTransforms carry values, not structure: create "
            "submodules and variables before the transform (e.g. in __init__) and "
            "only update their values inside."
        )


def changed_structure(
    skel: Skeleton, after: Skeleton, table: dict[int, Any], nodes: list[Any]
) -> StaticValue | None:
    """None if the arguments kept their structure; else the new structure and,
    per new node, the index of the old node it is (so the caller's objects are
    updated in place): a new attribute or submodule made inside is applied."""
    if after == skel:
        return None
    index_of = {id(o): i for i, o in table.items()}
    return StaticValue((after, tuple(index_of.get(id(o)) for o in nodes)))


def apply_graph_updates(
    entries: list[Entry], new_values: list[Any], changed: Any, outer: list[Any]
) -> list[Any]:
    """Writes the transform's new graph values back to the caller's objects (and
    its new structure, if it changed one); returns the nodes by index."""
    if changed is None:
        write_back(entries, new_values)
        return outer
    after, origin = changed.value
    reuse = {j: outer[i] for j, i in enumerate(origin) if i is not None}
    builder = InPlaceBuilder(iter(new_values), reuse)
    for slot in after.slots:
        if slot[0] == "graph":
            builder.build(slot[1])
    return [builder.nodes[j] for j in range(len(builder.nodes))]


def write_back(entries: list[Entry], new_graph_values: list[Any]) -> None:
    leaves = [e.leaf for e in entries if e.leaf is not None]
    for leaf, v in zip(leaves, new_graph_values, strict=True):
        leaf.write(v)


def axes_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, StateAxes):
        return spec.axis(path, x)
    return spec


class DiffSpec:
    """The grad spec of an argument: differentiate its ``filter`` variables."""

    __slots__ = ("filter",)

    def __init__(self, filter: Any):
        self.filter = filter

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DiffSpec) and StaticValue(self.filter) == StaticValue(
            other.filter
        )

    def __hash__(self) -> int:
        return hash(StaticValue(self.filter))

    def __repr__(self) -> str:
        return f"a gradient (filter {_filter_name(self.filter)})"


def check_graph_flags(
    name: str, graph: bool | None, graph_updates: bool | None
) -> None:
    """vjp/jvp: lens runs them on its object graph in every mode flax.nnx names
    (``graph``/``graph_updates``), so each spelling is accepted."""
    transform_mode(name, None, graph, graph_updates)


def split_all(args: tuple, name: str) -> tuple[Skeleton, list[Entry], Walker]:
    walker = Walker(diff_resolver, transform=name)
    skel, entries = split_args(args, tuple(DiffSpec(...) for _ in args), walker)
    return skel, entries, walker


def pure_of(
    f: Callable[..., Any], skel: Skeleton, entries: list[Entry], n: int, name: str
) -> Callable[[list[Any]], Any]:
    def pure(values: list[Any]) -> Any:
        with frame(name) as fr:
            args2 = rebuild(skel, values)
            out = f(*args2)
            w2 = Walker(transform=name)
            after, new_entries = split_args(args2, (None,) * n, w2)
            check_structure(skel, after, name)
            w2.frame = fr
            out_c = split_outputs(out, None, w2)
        return out_c, [e.value for e in new_entries if e.leaf is not None]

    return pure


def diff_resolver(spec: Any, path: tuple, x: Any) -> Any:
    if isinstance(spec, DiffSpec) and (isinstance(x, Variable) or hasattr(x, "dtype")):
        if not to_predicate(spec.filter)(path, x):
            return None
    return spec


def call_inside(
    name: str,
    f: Callable[..., Any],
    skel: Any,
    values: Sequence[Any],
    n_args: int,
    static: frozenset[int] = frozenset(),
    out_spec: Any = None,
) -> tuple[list[Any], Any]:
    """Rebuilds the arguments from ``values``, calls ``f``, and returns the new
    values of their graph leaves and the outputs (objects as carriers)."""
    new, outs, changed = call_changing(name, f, skel, values, n_args, static, out_spec)
    if changed.aux is not None:
        check_structure(skel, changed.aux.value[0], name)
    return new, outs


def call_changing(
    name: str,
    f: Callable[..., Any],
    skel: Any,
    values: Sequence[Any],
    n_args: int,
    static: frozenset[int] = frozenset(),
    out_spec: Any = None,
) -> tuple[list[Any], Any, Carrier]:
    """:func:`call_inside` where the function may change the arguments' structure
    (flax.nnx's graph updates): the third result carries the new structure out
    (``Carrier([], None)`` if unchanged), for :func:`apply_graph_updates`."""
    specs = (None,) * n_args
    table: dict[int, Any] = {}
    with frame(name) as fr:
        args = rebuild(skel, list(values), table)
        out = f(*args)
        w = Walker(transform=name)
        after, entries = split_args(args, specs, w, static)
        changed = changed_structure(skel, after, table, w.nodes)
        w.frame = fr
        outs = split_outputs(out, out_spec, w)
    return [e.value for e in entries if e.leaf is not None], outs, Carrier([], changed)


def lift_args(
    name: str, args: tuple[Any, ...], static: frozenset[int] = frozenset()
) -> tuple[Any, list[Entry], Walker]:
    walker = Walker(transform=name)
    skel, entries = split_args(args, (None,) * len(args), walker, static)
    return skel, entries, walker


# ------------------------------------------------------------ flax's call modes


@dataclasses.dataclass(frozen=True)
class TransformMode:
    """How a transform treats its object arguments: flax.nnx's ``graph`` and
    ``graph_updates`` switches, resolved against the current defaults.

    lens runs every mode on its one graph walk (shared references kept, updates
    written back in place). The *simple* modes (``graph_updates=False``, and tree
    mode, ``graph=False``) add flax's restriction: no Variable may be reached twice
    among the arguments and outputs.
    """

    name: str
    graph: bool
    updates: bool

    @property
    def simple(self) -> bool:
        return not (self.graph and self.updates)

    def check_inputs(self, **trees: Any) -> None:
        """Tree mode rejects a Variable reached twice among the inputs; graph mode
        keeps shared references (flax.nnx's graph flatten numbers them)."""
        if not self.graph:
            check_no_aliases(self.name, **trees)

    def check_outputs(self, args: Any, out: Any) -> None:
        """The simple modes reject an input Variable returned as an output (tree
        mode: any Variable reached twice among the arguments and outputs)."""
        if not self.simple:
            return
        if self.graph:
            check_returned_inputs(self.name, args, out)
        else:
            check_no_aliases(self.name, args=args, out=out)


def _current(switch_name: str) -> bool:
    switch = getattr(graphlib, switch_name, None)
    current = getattr(switch, "current_value", None)
    return bool(current()) if callable(current) else True


def transform_mode(
    name: str,
    f: Any,
    graph: bool | None,
    graph_updates: bool | None,
) -> TransformMode:
    """The mode of ``nnx.<name>(f, graph=..., graph_updates=...)``; also rejects a
    bound method of an object as ``f`` (flax's ValueError)."""
    if f is not None:
        reject_bound_method(name, f)
    g = _current("set_graph_mode") if graph is None else bool(graph)
    u = _current("set_graph_updates") if graph_updates is None else bool(graph_updates)
    return TransformMode(name, g, u)


def check_prefix(prefix: Any, prefix_name: str, mode: TransformMode) -> None:
    """flax.nnx's checks of a transform's prefix (``in_axes``, ``argnums``,
    ``in_shardings``, ...): no Variables; no per-filter specs (``StateAxes``,
    ``DiffState``, ``StateSharding``) outside the full graph mode; no objects
    in graph mode."""
    name = mode.name

    def is_leaf(x: Any) -> bool:
        return (
            x is None
            or isinstance(x, Variable | StateAxes | DiffState)
            or is_graph_node(x)
        )

    for kp, leaf in jax.tree_util.tree_flatten_with_path(prefix, is_leaf=is_leaf)[0]:
        where = f"at path {jax.tree_util.keystr(kp)} in `{prefix_name}` for nnx.{name}"
        kind = type(leaf).__name__
        if isinstance(leaf, Variable):
            raise ValueError(
                f"Found Variable of type {kind} {where}. Variables prefixes are "
                "not supported.\nPass a prefix for the entire Variable (e.g. 0 or "
                "None) instead of a Variable."
            )
        per_filter = isinstance(leaf, DiffState) or (
            isinstance(leaf, StateAxes) and not leaf.from_prefix
        )
        if per_filter and mode.simple:
            raise ValueError(
                f"`{prefix_name}` cannot contain `{kind}` objects when "
                f"`graph=False` or `graph_updates=False`.\nRemove the {kind} from "
                f"`{prefix_name}`, or use nnx.{name}(..., graph=True, "
                f"graph_updates=True) (or nnx.compat.{name})."
            )
        if is_graph_node(leaf) and mode.graph:
            raise ValueError(
                f"Found graph node of type {kind} {where}. Graph nodes are not "
                "allowed as prefixes when graph=True.\nRemove it from "
                f"`{prefix_name}`, pass graph=False to nnx.{name}, or build the "
                "prefix with nnx.prefix(..., graph=True)."
            )


def reject_bound_method(name: str, f: Any) -> None:
    """flax.nnx's transforms take unbound functions: ``nnx.jit(model.method)`` would
    close over ``model`` (its state would not be lifted)."""
    g = f
    while isinstance(g, functools.partial):
        g = g.func
    owner = getattr(g, "__self__", None)
    if owner is not None and is_graph_node(owner) and not isinstance(owner, type):
        cls = type(owner).__name__
        method = getattr(g, "__name__", "method")
        raise ValueError(
            f"nnx.{name} does not support bound methods. Use the decorator form "
            f"@nnx.{name} or call nnx.{name}(MyClass.method)(instance, ...) with "
            f"the unbound method.\nHere: nnx.{name}({cls}.{method})(model, ...) "
            f"instead of nnx.{name}(model.{method})(...)."
        )


def resolve_kwargs(
    fun: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` bound to ``fun``'s positions (defaults filled in), as
    flax.nnx's transforms see keyword arguments: each then takes its position's
    spec (``in_axes``, ``argnums``)."""
    if not kwargs:
        return tuple(args)
    if isinstance(fun, functools.partial):
        raise TypeError(
            "keyword arguments could not be resolved to positions: the transformed "
            "function is a functools.partial (its signature is opaque).\nPass the "
            "arguments positionally."
        )
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            "keyword arguments could not be resolved to positions: "
            f"{', '.join(bound.kwargs)} of {getattr(fun, '__qualname__', fun)!r} "
            "are keyword-only.\nMake them positional, or close over them."
        )
    return tuple(bound.args)


def variables_with_paths(tree: Any, root: str) -> Iterator[tuple[str, Any]]:
    """Every Variable reachable from ``tree`` with a path, a shared one as often as
    it is reached (objects are followed through their attributes)."""
    on_path: set[int] = set()

    def go(x: Any, path: str) -> Iterator[tuple[str, Any]]:
        if isinstance(x, Variable):
            yield path, x
        elif is_graph_node(x):
            if id(x) in on_path:
                return
            on_path.add(id(x))
            for k, v in node_items(x):
                yield from go(v, f"{path}.{k}")
            on_path.discard(id(x))
        else:

            def is_leaf(y: Any, x: Any = x) -> bool:
                return y is not x and (is_graph_node(y) or isinstance(y, Variable))

            kids, _ = jax.tree_util.tree_flatten_with_path(x, is_leaf=is_leaf)
            if len(kids) == 1 and kids[0][0] == () and kids[0][1] is x:
                return
            for kp, v in kids:
                yield from go(v, path + jax.tree_util.keystr(kp))

    yield from go(tree, root)


def check_no_aliases(name: str, **trees: Any) -> None:
    """flax.nnx's rule for tree mode: no Variable may be reached twice among
    ``trees`` (duplicate inputs, duplicate outputs, or inputs returned)."""
    seen: dict[int, str] = {}
    for label, tree in trees.items():
        for path, v in variables_with_paths(tree, label):
            first = seen.setdefault(id(v), path)
            if first != path:
                raise _duplicate(name, v, first, path)


def check_returned_inputs(name: str, args: Any, out: Any) -> None:
    """flax.nnx's rule for graph mode without graph updates: an input Variable may
    not be returned (shared references among the inputs, or among the outputs,
    are kept)."""
    inputs = {id(v): p for p, v in variables_with_paths(args, "args")}
    for path, v in variables_with_paths(out, "out"):
        if id(v) in inputs:
            raise _duplicate(name, v, inputs[id(v)], path)


def _duplicate(name: str, v: Variable, first: str, path: str) -> ValueError:
    return ValueError(
        f"Duplicate {type(v).__name__} found at paths:\n\n  - {first}\n"
        f"  - {path}\n\nnnx.{name} with graph_updates=False does not "
        "support Variable aliasing (duplicate inputs, duplicate outputs, "
        "or input Variables returned as outputs).\nRemove the duplicate, "
        f"pass copies made with nnx.clone(), or use graph mode with graph "
        f"updates: nnx.{name}(..., graph=True, graph_updates=True) (lens "
        f"keeps the aliases there), or nnx.compat.{name}."
    )


def with_calling_conventions(
    mode: TransformMode,
    f: Callable[..., Any],
    transformed: Callable[..., Any],
    *,
    resolve: bool = True,
    check_outputs: bool = True,
) -> Callable[..., Any]:
    """``transformed`` (a transform's wrapper of ``f``) called as flax.nnx calls it:
    keyword arguments bound to positions (``resolve``), and in the simple modes no
    Variable aliasing among the arguments, nor between arguments and outputs."""

    @functools.wraps(f)
    @api_boundary
    def call(*args: Any, **kwargs: Any) -> Any:
        if resolve:
            args, kwargs = resolve_kwargs(f, args, kwargs), {}
        if mode.simple:
            mode.check_inputs(args=args, kwargs=kwargs)
        with active_mode(mode):
            out = transformed(*args, **kwargs)
        if check_outputs:
            mode.check_outputs((args, kwargs), out)
        return out

    return call
