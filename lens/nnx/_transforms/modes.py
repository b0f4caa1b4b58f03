"""flax.nnx's call modes (``graph`` / ``graph_updates``) and the rules they add:
aliasing checks on inputs and outputs, prefix checks, keyword arguments bound to
positions, bound methods refused. Flax's ``transforms.general`` path serves
these names with the recipe's (lens/_facades.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jax

from lens import errors
from lens._facades import show_at_flax_paths
from lens.nnx._graph import mode as graph_mode
from lens.nnx._graph.walk import Walker, is_graph_node, keeps_captured, path_str
from lens.nnx._objects.object import node_items
from lens.nnx._transforms.specs import DiffState, StateAxes
from lens.nnx._variables.variable import Variable
from lens.traceback_util import api_boundary

# The mode of the transform being called (its outputs are checked inside it).
_ACTIVE_MODE: contextvars.ContextVar[TransformMode | None] = contextvars.ContextVar(
    "lens_nnx_transform_mode", default=None
)


def current_mode() -> TransformMode | None:
    """The mode of the transform being called, if any."""
    return _ACTIVE_MODE.get()


@contextlib.contextmanager
def active_mode(mode: TransformMode) -> Iterator[None]:
    """Runs a transform's call with ``mode`` as the active one (its inner
    functions' outputs are checked by flax.nnx's rules for that mode)."""
    token = _ACTIVE_MODE.set(mode)
    try:
        yield
    finally:
        _ACTIVE_MODE.reset(token)


def check_simple_outputs(name: str, out: Any, walker: Walker) -> None:
    """flax.nnx's simple modes: no input Variable and no Variable captured from
    outside the function among the outputs."""
    for path, v in variables_with_paths(out, "output"):
        i = walker.index.get(id(v))
        if i is not None and walker.specs[i].role == "input":
            raise _duplicate(name, v, path_str(walker.specs[i].path), path)
        frame_of = object.__getattribute__(v, "_lens_frame")
        if (
            i is None
            and walker.frame is not None
            and frame_of is not walker.frame
            and not keeps_captured(name, True)
        ):
            raise errors.CapturedOutputError(
                f"Cannot return captured Variable of type {type(v).__name__} from "
                f"nnx.{name}.\nFound at path: {path}. Only arguments are tracked: "
                "pass its object as an argument, or create it inside the function."
            )


def check_graph_flags(
    name: str, graph: bool | None, graph_updates: bool | None
) -> TransformMode:
    """vjp/jvp: lens runs them on its object graph in every mode flax.nnx names
    (``graph``/``graph_updates``), so each spelling is accepted; their mode."""
    return transform_mode(name, None, graph, graph_updates)


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
    switch = getattr(graph_mode, switch_name, None)
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


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
