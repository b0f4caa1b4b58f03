"""What a call looks like to ``jit``: its arguments as facts, one per path.

``jax.jit`` compiles once per *signature* of a call: the pytree structure of its
arguments, each array leaf's shape, dtype, weak type and sharding, and the value
of each static argument. This module writes that signature down in terms a user
recognises: each fact sits at a path that starts with the argument's name and
goes through a Module's path (``model/blocks/0/linear/kernel`` for an nnx
Variable, ``model/dropout/rate`` for an nnx attribute, ``self.features`` for a
Linen field, ``state.params/Dense_0/kernel`` for a pytree of arrays). Comparing
two signatures (:func:`differences`) says why a function was traced again.

Facts hold no reference to the user's values (a short ``repr`` and a hash stand
for a static value), so the history of a function's traces keeps nothing alive.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jax
import numpy as np

from lens._instruments.units import short_dtype

# How a fact's value reads: ("array", shape, dtype, weak_type, sharding),
# ("static", type name, repr, hash) or ("node", type name).
Value = tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Fact:
    """One thing ``jit`` keys on, at one path of a call's arguments."""

    kind: str  # "array" | "static" | "node"
    what: str  # "Param", "attribute", "field", "static argument", "dict", ...
    value: Value


Signature = dict[str, Fact]

_REPR = 200


def short_repr(x: Any) -> str:
    try:
        text = repr(x)
    except Exception:  # a user object whose repr fails says nothing about it
        text = f"<{type(x).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= _REPR else text[: _REPR - 1] + "…"


def _hash(x: Any) -> int | None:
    try:
        return hash(x)
    except Exception:
        return None


def static_fact(x: Any, what: str) -> Fact:
    return Fact("static", what, (type(x).__name__, short_repr(x), _hash(x)))


def _sharding(x: Any) -> str | None:
    sharding = getattr(x, "sharding", None)
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    if isinstance(sharding, jax.sharding.NamedSharding):
        mesh = ", ".join(f"{k}={v}" for k, v in sharding.mesh.shape.items())
        return f"{sharding.spec} over mesh ({mesh})"
    return str(sharding)


def is_array(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or (
        hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, type)
    )


def array_fact(x: Any, what: str) -> Fact:
    if isinstance(x, (bool, int, float, complex)):
        # a Python scalar is traced as a weakly typed 0-d array
        dtype = jax.numpy.result_type(x)
        return Fact("array", what, ((), str(dtype), not isinstance(x, bool), None))
    weak = bool(getattr(x, "weak_type", False))
    shape = tuple(int(d) for d in getattr(x, "shape", ()))
    return Fact("array", what, (shape, str(x.dtype), weak, _sharding(x)))


def describe_array(value: Value) -> str:
    """``f32[32,784]`` (with ``, weak`` and the sharding where they apply)."""
    shape, dtype, weak, sharding = value
    text = f"{short_dtype(dtype)}[{','.join(map(str, shape))}]"
    if weak:
        text += " (weak type)"
    if sharding:
        text += f" sharded {sharding}"
    return text


# -- walking one argument


def _nnx_types() -> tuple[Any, Any, Any] | None:
    import sys

    if "lens.nnx" not in sys.modules:  # no nnx object can exist yet
        return None
    from lens.nnx import graph
    from lens.nnx.variablelib import Variable

    return _attributes_walk(graph), graph.is_graph_node, Variable


def _key_name(entry: Any) -> Any:
    """A pytree key path entry as a path part (an attribute, key or index)."""
    for attr in ("name", "key", "idx"):
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return str(entry)


def _attributes_walk(graph: Any) -> Any:
    """``walk(node)``: ``(path, x)`` for every attribute value of an nnx graph at
    its own path. Each object and Variable once, but a value several attributes
    share (None, a tuple) at each of them: two calls are compared attribute by
    attribute (flax's ``iter_graph`` visits a shared value once)."""

    def walk(node: Any) -> Any:
        seen: set[int] = set()

        def go(x: Any, path: tuple) -> Any:
            if graph.is_graph_node(x):
                if id(x) in seen:
                    return
                seen.add(id(x))
                impl = graph.get_node_impl(x)
                if impl is not None and not hasattr(x, "_raw_value"):  # a Variable
                    for k, v in impl.node_dict(x).items():
                        yield from go(v, (*path, k))
                yield path, x
                return
            if type(x) in (list, tuple):
                children: Any = enumerate(x)
            elif type(x) is dict:
                children = x.items()
            elif x is not None and not jax.tree_util.treedef_is_leaf(
                jax.tree_util.tree_structure(x)
            ):
                flat, _ = jax.tree_util.tree_flatten_with_path(
                    x, is_leaf=lambda y: y is not x
                )
                children = [(_key_name(p[0]), v) for p, v in flat]
            else:
                if path:
                    yield path, x
                return
            for k, v in children:
                yield from go(v, (*path, k))
            yield path, x

        yield from go(node, ())

    return walk


def _linen_module_type() -> Any:
    import sys

    if "lens.nn" not in sys.modules:
        return None
    from lens.nn import Module

    return Module


def _key(k: Any) -> str:
    if isinstance(k, jax.tree_util.DictKey):
        return f"/{k.key}"
    if isinstance(k, jax.tree_util.GetAttrKey):
        return f".{k.name}"
    if isinstance(k, jax.tree_util.SequenceKey):
        return f"[{k.idx}]"
    if isinstance(k, jax.tree_util.FlattenedIndexKey):
        return f"[{k.key}]"
    return f"[{k}]"


def _special(x: Any) -> bool:
    nnx = _nnx_types()
    if nnx is not None and (nnx[1](x) or isinstance(x, nnx[2])):
        return True
    module = _linen_module_type()
    return module is not None and isinstance(x, module)


def _nnx_facts(out: Signature, label: str, node: Any) -> None:
    iter_graph, is_graph_node, variable_type = _nnx_types()  # type: ignore[misc]
    if isinstance(node, variable_type):
        out[label] = _variable_fact(node)
        return
    for path, value in iter_graph(node):
        at = label + "".join(f"/{p}" for p in path)
        if isinstance(value, variable_type):
            out[at] = _variable_fact(value)
        elif is_graph_node(value):
            out[at] = Fact("node", "module", (type(value).__name__,))
        elif is_array(value):
            out[at] = array_fact(value, "array attribute")
        elif not path or not str(path[-1]).startswith("_"):
            out[at] = static_fact(value, "attribute")


def _variable_fact(v: Any) -> Fact:
    raw = getattr(v, "_raw_value", None)
    value = raw if is_array(raw) else None
    if value is None:
        return static_fact(raw, type(v).__name__)
    return array_fact(value, type(v).__name__)


_SKIPPED_FIELDS = frozenset({"parent", "name"})


def _linen_facts(out: Signature, label: str, module: Any, depth: int = 0) -> None:
    """A Linen module's fields (its hyperparameters), submodule fields nested."""
    out[label] = Fact("node", "module", (type(module).__name__,))
    if depth > 8:
        return
    for field in dataclasses.fields(module):
        if field.name in _SKIPPED_FIELDS:
            continue
        value = getattr(module, field.name, None)
        at = f"{label}.{field.name}"
        if isinstance(value, _linen_module_type()):
            _linen_facts(out, at, value, depth + 1)
        else:
            out[at] = static_fact(value, "field")


def argument_facts(
    out: Signature, label: str, value: Any, static: bool, what: str = "leaf"
) -> None:
    """Writes the facts of one argument (``static``: keyed by value, not traced;
    ``what``: what its leaves are called, "leaf" or "variable")."""
    module = _linen_module_type()
    if module is not None and isinstance(value, module):
        _linen_facts(out, label, value)
        return
    if static:
        out[label] = static_fact(value, "static argument" if what == "leaf" else what)
        return
    leaves, treedef = jax.tree_util.tree_flatten_with_path(value, is_leaf=_special)
    if treedef.num_nodes > 1 or not leaves:
        out[label] = Fact("node", "pytree", (_structure(treedef),))
    _static_fields(out, label, value)
    for path, leaf in leaves:
        at = label + "".join(_key(k) for k in path)
        if _special(leaf):
            if module is not None and isinstance(leaf, module):
                _linen_facts(out, at, leaf)
            else:
                _nnx_facts(out, at, leaf)
        elif is_array(leaf) or isinstance(leaf, (bool, int, float, complex)):
            out[at] = array_fact(leaf, "argument" if not path else what)
        else:
            out[at] = static_fact(leaf, what)


def _structure(treedef: Any) -> str:
    """The container types of a pytree, without leaves or a node's static data
    (leaves are facts of their own, and so are a dataclass's static fields)."""
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return "*"
    data = treedef.node_data()
    name = "None" if data is None else getattr(data[0], "__name__", str(data[0]))
    children = ", ".join(_structure(c) for c in treedef.children())
    return f"{name}({children})"


def _static_fields(out: Signature, label: str, value: Any, depth: int = 0) -> None:
    """The static fields of dataclass pytrees (``field(pytree_node=False)``, as
    a TrainState's ``apply_fn`` and ``tx``), which jit keys on by value."""
    if depth > 6 or _special(value):
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            child = getattr(value, f.name, None)
            at = f"{label}.{f.name}"
            if not f.metadata.get("pytree_node", True) or f.metadata.get("static"):
                out[at] = static_fact(child, "static field")
            else:
                _static_fields(out, at, child, depth + 1)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _static_fields(out, f"{label}/{k}", v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _static_fields(out, f"{label}[{i}]", v, depth + 1)


# -- a whole call


def parameter_names(fn: Callable[..., Any], n_args: int) -> list[str]:
    """Names of ``fn``'s first ``n_args`` positional parameters (``args[i]`` past them)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}[{i}]" for i in range(n_args - len(names))]
            break
    names += [f"args[{i}]" for i in range(len(names), n_args)]
    return names[:n_args]


def call_signature(
    fn: Callable[..., Any],
    args: Iterable[Any],
    kwargs: Mapping[str, Any],
    static: Iterable[int] = (),
    static_names: Iterable[str] = (),
    extra: Mapping[str, Any] = {},  # noqa: B006 - read only
) -> Signature:
    """The facts of one call ``fn(*args, **kwargs)`` (``extra``: static context)."""
    args = tuple(args)
    static = {i % len(args) for i in static if -len(args) <= i < len(args)}
    static_names = set(static_names)
    out: Signature = {}
    names = parameter_names(fn, len(args))
    for i, (name, value) in enumerate(zip(names, args, strict=True)):
        argument_facts(out, name, value, i in static)
    for name, value in kwargs.items():
        argument_facts(out, name, value, name in static_names)
    for name, value in extra.items():
        out[name] = static_fact(value, "context")
    return out
