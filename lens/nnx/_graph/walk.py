"""Eager objects with reference semantics, and the graph they form.

An :class:`Object` (every ``nnx.Module``) holds its state in :class:`Variable`
attributes. Objects and variables may be shared, so a model is a graph, not a tree.
``split`` walks it once, in attribute order, and gives

- a :class:`GraphDef`: the static structure (types, static attributes, which nodes
  are the same node), hashable, so ``jax.jit`` can cache on it;
- a :class:`State`: the variables as a nested mapping (a pytree), each shared
  variable once, at the first path that reaches it.

``merge(graphdef, state)`` builds a new graph with the same sharing (``State``,
``split``, ``merge`` and friends are in :mod:`lens.nnx._state`; this module has the
walk and the rebuild they share). Transforms in :mod:`lens.nnx._transforms` and
:mod:`lens.nnx._jit` are built on the same walk.

Objects remember the transform level ("frame") they were made in: one made outside
a transform cannot be mutated inside it (:class:`lens.errors.TraceContextError`).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

import jax
import numpy as np

from lens import errors
from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import (
    ArrayDef,
    ArrayRefDef,
    CustomPytreeDef,
    DictDef,
    NodeRef,
    ObjectDef,
    PytreeDef,
    RegisteredDef,
    SeqDef,
    StaticDef,
    VariableDef,
)
from lens.nnx._graph.registry import (
    GRAPH_REGISTRY,
    PYTREE_REGISTRY,
    DataElem,
    GraphNodeImpl,
    StaticElem,
    custom_impl,
    get_node_impl,
)
from lens.nnx._objects.object import Pytree, declared_kind, node_items
from lens.nnx._objects.object import declared as declared_kinds
from lens.nnx._objects.state import PytreeState
from lens.nnx._variables.refs import is_array_ref
from lens.nnx._variables.static import StaticValue, freeze_metadata
from lens.nnx._variables.variable import Variable, made_variable, new_variable
from lens.nnx.tracers import Frame, TraceState, structure_changed

Path = tuple[Any, ...]


# Exact types that are never a graph node, array, ref, container or pytree (see
# ``pytree_children``): the walk's fast path for static attributes. Functions
# (a layer's ``dot_general``) are leaves to JAX too; classes (a ``param_dtype``
# such as ``jnp.float32``) are tested with ``isinstance(v, type)``.
_SCALAR_TYPES = frozenset(
    {type(None), bool, int, float, str, types.FunctionType, types.BuiltinFunctionType}
)


def _plain_static(v: Any) -> bool:
    """Whether ``v`` is a value the walk keeps static without looking further:
    no node, array, ref, container or pytree (nor a type a user registered)."""
    return (type(v) in _SCALAR_TYPES or isinstance(v, type)) and custom_impl(v) is None


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray)


def is_graph_node(x: Any) -> bool:
    """Whether ``x`` has identity in a graph: a Pytree, a Variable, or a type
    given to ``register_graph_node_type``."""
    return isinstance(x, Pytree | Variable) or isinstance(custom_impl(x), GraphNodeImpl)


Ref = NodeRef  # lens's name for flax.nnx's NodeRef


@dataclasses.dataclass
class Leaf:
    """One piece of state met by a walk: where it lives and how to write it back."""

    path: Path
    value: Any
    variable: Variable | None  # None: a raw array attribute
    owner: Any = None
    key: Any = None
    spec: Any = None

    def read(self) -> Any:
        """The current value where this leaf lives (a cached walk re-reads it)."""
        if self.variable is not None:
            return self.variable._raw_value
        owner, key = self.owner, self.key
        if isinstance(owner, Pytree):
            if isinstance(key, int):  # an nnx.List item
                return cast(Any, owner)[key]
            return getattr(owner, key)
        if isinstance(owner, list | dict):
            return owner[key]
        if (impl := custom_impl(owner)) is not None and impl.set_key is not None:
            return impl.node_dict(owner)[key]
        return self.value  # inside a tuple or other immutable pytree

    def write(self, value: Any) -> None:
        if self.variable is not None:
            object.__setattr__(self.variable, "_raw_value", value)
        elif isinstance(self.owner, Pytree):
            self.owner._graph_set(self.key, value)
        elif isinstance(self.owner, list | dict):
            self.owner[self.key] = value
        elif (impl := custom_impl(self.owner)) is not None and impl.set_key:
            impl.set_key(self.owner, self.key, value)


def _variables_in(x: Any, seen: set[int]) -> Iterator[tuple[Path, Variable]]:
    """Every Variable inside ``x`` (once each), with its path from ``x``."""
    if isinstance(x, Variable):
        if id(x) not in seen:
            seen.add(id(x))
            yield (), x
        return
    if isinstance(x, Pytree):
        if id(x) in seen:
            return
        seen.add(id(x))
        items: Any = node_items(x)
    elif type(x) in (list, tuple):
        items = enumerate(x)
    elif type(x) is dict:
        items = x.items()
    elif (impl := custom_impl(x)) is not None:
        if isinstance(impl, GraphNodeImpl):
            if id(x) in seen:
                return
            seen.add(id(x))
        items = impl.node_dict(x).items()
    else:
        return
    for k, v in items:
        for sub, var in _variables_in(v, seen):
            yield (k, *sub), var


class SpecAt(NamedTuple):
    """How the walk first met a node: its spec, its path, and as what ("input",
    "output"), so that a second meeting can be checked against it."""

    spec: Any
    path: Path
    role: str


class Walker:
    """One walk over one or more graphs, numbering nodes so aliases are seen as such.

    ``spec`` is what a transform assigns to a subtree (an axis, a ``StateAxes``, a
    diff filter); ``resolve(spec, path, variable)`` turns it into the spec of one
    leaf. The same node met twice must get the same spec, or the walk raises
    :class:`~lens.errors.InconsistentAliasingError`.
    """

    def __init__(
        self,
        resolve: Any = None,
        *,
        describe: Any = repr,
        frame: Frame | None = None,  # noqa: F811 - a parameter, not the import
        transform: str = "",
    ):
        self.resolve = resolve or (lambda spec, path, x: spec)
        self.describe = describe
        self.index: dict[int, int] = {}
        self.nodes: list[Any] = []
        self.specs: list[SpecAt] = []  # per node index: how it was first met
        self.leaves: list[Leaf] = []
        self.frame = frame  # when set, nodes made outside it are "captured"
        self.transform = transform
        self.simple = False  # the transform runs in a simple mode (tree, no updates)
        # outputs carry no spec of their own (grad's aux): an argument returned
        # is not an alias lifted two ways
        self.free_outputs = False
        self.role = "input"
        # How much of a path is the root (("args", 0)): filters see the rest, the
        # path inside the object, as in Flax.
        self.root_len = 0
        # Plain lists and dicts met (mutable without any hook: a cached walk
        # checks their items are still the same).
        self.containers: list[Any] = []
        # id -> index outside a transform (``nnx.update_context``'s inner split)
        self.outer_index: dict[int, int] = {}

    def _resolve(self, spec: Any, path: Path, x: Any) -> Any:
        """The spec of one leaf; filters see its path inside the object."""
        try:
            return self.resolve(spec, path[self.root_len :], x)
        except ValueError as e:
            raise ValueError(f"{path_str(path)}: {e}") from None

    def _seen(self, x: Any, spec: Any, path: Path) -> int | None:
        i = self.index.get(id(x))
        if i is None:
            return None
        first_spec = self.specs[i].spec
        if _spec_eq(first_spec, spec) or (self.free_outputs and self.role == "output"):
            return i
        if isinstance(x, Pytree):
            # specs written differently may agree on every variable (0 and
            # StateAxes({...: 0})): flax.nnx compares them per Variable
            for sub, v in _variables_in(x, set()):
                j = self.index.get(id(v))
                vspec = self._resolve(spec, path + sub, v)
                if j is not None and not _spec_eq(self.specs[j].spec, vspec):
                    self._inconsistent(v, j, vspec, path + sub)
            return i
        self._inconsistent(x, i, spec, path)
        return i

    def _inconsistent(self, x: Any, i: int, spec: Any, path: Path) -> None:
        first_spec, first_path, first_role = self.specs[i]
        raise errors.InconsistentAliasingError(
            "Inconsistent aliasing detected. The following nodes have different "
            f"prefixes:\nNode: {type(x).__name__}\n"
            f"  {path_str(first_path)}: {first_spec!r}\n"
            f"  {path_str(path)}: {spec!r}\n"
            f"In nnx.{self.transform}, the same {type(x).__name__} is the "
            f"{first_role} {path_str(first_path)} with "
            f"{self.describe(first_spec)} and the {self.role} {path_str(path)} "
            f"with {self.describe(spec)}.\nEvery alias of an object must be lifted "
            "the same way: give both the same spec, or pass the object once."
        )

    def _register(self, x: Any, spec: Any, path: Path) -> int:
        frame = _frame_of(x)
        if (
            self.frame is not None
            and frame is not _NO_FRAME
            and frame is not self.frame
        ):
            self._captured(x, path)
        i = len(self.nodes)
        self.index[id(x)] = i
        self.nodes.append(x)
        self.specs.append(SpecAt(spec, path, self.role))
        return i

    def _captured(self, x: Any, path: Path) -> None:
        """An output the function captured from outside (made before the
        transform, not an argument), as flax.nnx treats it: returned as a copy
        (its values as the function saw them) by the transforms that only trace
        the function once for its outputs (``eval_shape``, and in the full graph
        mode ``cond``, ``switch``, ``remat``, ``checkify``, ``grad``'s aux,
        ``custom_vjp``, ``vjp``/``jvp``); refused by those whose outputs have
        axes or shardings (``jit``, ``vmap``, ``pmap``, ``scan``, ``shard_map``)
        and by every transform but ``eval_shape`` in the simple modes."""
        if keeps_captured(self.transform, self.simple):
            return
        if self.simple:
            first = _first_variable(x)
            raise errors.CapturedOutputError(
                f"Cannot return captured Variable of type {type(first).__name__} "
                f"from nnx.{self.transform}.\nFound at path: {path_str(path)}. Only "
                "arguments are tracked: pass its object as an argument, or create "
                "it inside the function."
            )
        raise errors.CapturedOutputError(
            "Cannot extract graph node from different trace level, got "
            f"{_one_line(_first_variable(x))}\n"
            f"nnx.{self.transform} returned a {type(x).__name__} "
            f"({path_str(path)}) that it captured from outside.\nOnly arguments "
            "are tracked: pass it as an argument (it then comes back as itself), "
            "or create it inside the function."
        )

    def node(
        self, x: Any, path: Path, spec: Any = None, owner: Any = None, key: Any = None
    ) -> Any:
        if isinstance(x, Pytree):
            i = self._seen(x, spec, path)
            if i is not None:
                return Ref(i)
            i = self._register(x, spec, path)
            data = _declared_data_keys(x)
            attrs = []
            for k, v in node_items(x):
                if k not in data and _plain_static(v):
                    # Most attributes are sizes, flags, names, dtypes, functions
                    # and None, not declared data: static, what the chain of
                    # checks below would conclude (metaclass instance checks, a
                    # pytree flatten) at a fraction of the cost.
                    attrs.append((k, StaticDef(StaticValue(v))))
                else:
                    attrs.append((k, self.node(v, path + (k,), spec, x, k)))
            return ObjectDef(
                type(x), i, tuple(attrs), self.outer_index.get(id(x)), _state_flags(x)
            )
        if isinstance(x, Variable):
            vspec = self._resolve(spec, path, x)
            i = self._seen(x, vspec, path)
            if i is not None:
                return Ref(i)
            i = self._register(x, vspec, path)
            raw = x._raw_value
            self.leaves.append(Leaf(path, raw, x, spec=vspec))
            outer = self.outer_index.get(id(x))
            meta = freeze_metadata(x.metadata)
            if is_array_ref(raw):
                return VariableDef(
                    x.type, i, outer, meta, self._ref_def(raw, vspec, path)
                )
            return VariableDef(x.type, i, outer, meta)
        if _is_array(x):
            self.leaves.append(
                Leaf(
                    path,
                    x,
                    None,
                    owner,
                    key,
                    spec=self._resolve(spec, path, x),
                )
            )
            return ArrayDef()
        if is_array_ref(x):  # a bare jax.Ref: a node (shared), its leaf the ref
            rspec = self._resolve(spec, path, x)
            i = self._seen(x, rspec, path)
            if i is not None:
                return Ref(i)
            d = self._ref_def(x, rspec, path)
            self.leaves.append(Leaf(path, x, None, owner, key, spec=rspec))
            return d
        if type(x) in (list, tuple):
            if type(x) is list:
                self.containers.append(x)
            return SeqDef(
                type(x),
                tuple(self.node(e, path + (j,), spec, x, j) for j, e in enumerate(x)),
            )
        if type(x) is dict:
            self.containers.append(x)
            keys = tuple(x)
            return DictDef(
                keys, tuple(self.node(x[k], path + (k,), spec, x, k) for k in keys)
            )
        impl = custom_impl(x)
        if impl is not None:
            return self._registered(x, impl, path, spec)
        children = pytree_children(x)
        if children is not None:
            keys, values, treedef = children
            return PytreeDef(
                treedef,
                tuple(
                    self.node(v, path + (k,), spec, None, None)
                    for k, v in zip(keys, values)
                ),
                tuple(keys),
            )
        if (
            isinstance(owner, Pytree)
            and _declared_data(owner, key)
            and get_node_impl(x) is None  # None, an empty pytree: no leaf
        ):
            # nnx.data(2): a state leaf although it is no array
            self.leaves.append(
                Leaf(path, x, None, owner, key, spec=self._resolve(spec, path, x))
            )
            return ArrayDef()
        return StaticDef(StaticValue(x))

    def _ref_def(self, ref: Any, spec: Any, path: Path) -> ArrayRefDef | Ref:
        """A ``jax.Ref`` numbered as a node, as flax.nnx numbers them (a Variable's
        ref right after the Variable): an ``ArrayRefDef``, or a ``NodeRef`` to
        the one met before (two Variables holding one ref)."""
        i = self.index.get(id(ref))
        if i is not None:
            return Ref(i)
        i = self._register(ref, spec, path)
        return ArrayRefDef(i, self.outer_index.get(id(ref)))

    def _registered(self, x: Any, impl: Any, path: Path, spec: Any) -> Any:
        """A node of a type given to ``register_graph_node_type`` (numbered,
        shared) or ``register_pytree_node_type`` (a value container)."""
        graph = isinstance(impl, GraphNodeImpl)
        i = -1
        if graph:
            i = self._seen(x, spec, path)
            if i is not None:
                return Ref(i)
            i = self._register(x, spec, path)
            self.containers.append(NodeView(x, impl))
        items, aux = impl.flatten(x)
        owner = x if impl.set_key is not None else None
        keys, defs = [], []
        for k, v in items:
            here = path + (k,)
            if isinstance(v, StaticElem):
                d: Any = StaticDef(StaticValue(v.value))
            elif isinstance(v, DataElem) and not is_node_value(v.value):
                self.leaves.append(
                    Leaf(here, v.value, None, owner, k, self._resolve(spec, here, v))
                )
                d = ArrayDef()
            else:
                v = v.value if isinstance(v, DataElem) else v
                d = self.node(v, here, spec, owner, k)
            keys.append(k)
            defs.append(d)
        if graph:
            attrs = tuple(zip(keys, defs, strict=True))
            return RegisteredDef(type(x), i, attrs, self.outer_index.get(id(x)), aux)
        return CustomPytreeDef(type(x), aux, tuple(keys), tuple(defs))


class NodeView:
    """A registered graph node seen as a container: ``items()`` gives its
    children now (a cached walk checks they are still the same)."""

    __slots__ = ("impl", "node")

    def __init__(self, node: Any, impl: Any):
        self.node = node
        self.impl = impl

    def items(self) -> Any:
        return self.impl.node_dict(self.node).items()


def is_node_value(x: Any) -> bool:
    """Whether the walk goes into ``x`` (not a plain leaf value)."""
    return (
        isinstance(x, Pytree | Variable)
        or _is_array(x)
        or is_array_ref(x)
        or type(x) in (list, tuple, dict)
        or custom_impl(x) is not None
        or pytree_children(x) is not None
    )


_NO_FRAME: Any = object()

# Per mode (simple or not): the transforms whose outputs may hold what the
# function captured from outside, as flax.nnx 0.12.8 has it (see Walker._captured).
_KEEPS_CAPTURED: dict[bool, frozenset[str]] = {
    False: frozenset(
        {
            "eval_shape",
            "cond",
            "switch",
            "remat",
            "checkify",
            "grad",
            "value_and_grad",
            "custom_vjp",
            "vjp",
            "jvp",
        }
    ),
    True: frozenset({"eval_shape"}),
}


def _one_line(x: Any) -> str:
    """``repr(x)`` on one line (the first line of an error is its sentence)."""
    return " ".join(line.strip() for line in repr(x).splitlines())


def keeps_captured(transform: str, simple: bool) -> bool:
    """Whether ``nnx.<transform>`` (in a simple mode or not) returns an object
    its function captured from outside as a copy, rather than refusing it."""
    return transform in _KEEPS_CAPTURED[simple]


def _first_variable(x: Any) -> Any:
    """The first Variable reachable from ``x`` (``x`` itself if it is one or
    holds none): what flax.nnx's simple modes name when refusing a capture."""
    if isinstance(x, Variable):
        return x
    seen: set[int] = set()
    stack = [x]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Variable):
            return node
        if isinstance(node, Pytree):
            stack.extend(reversed([v for _, v in node_items(node)]))
        elif isinstance(node, list | tuple):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
    return x


def _frame_of(x: Any) -> Any:
    """The transform level ``x`` was made in (None: outside any); ``_NO_FRAME``
    for a node that keeps none (a registered type, a hijax Variable's tracer)."""
    try:
        return object.__getattribute__(x, "_lens_frame")
    except AttributeError:
        return _NO_FRAME


def _state_flags(obj: Pytree) -> tuple[bool, bool] | None:
    """``(initializing, is_setup)`` of an object's ``_pytree__state`` when
    either is set (a merge rebuilds them, as flax.nnx's does); else None."""
    st = obj.__dict__.get("_pytree__state")
    if st is None or not (st.initializing or st.is_setup):
        return None
    return (st.initializing, st.is_setup)


def _declared_data(owner: Pytree, key: Any) -> bool:
    """Whether ``owner`` (a pytree object) declares attribute ``key`` data."""
    if not type(owner)._lens_pytree or not isinstance(key, str):
        return False
    return declared_kind(owner, key) == "data"


def _declared_data_keys(obj: Pytree) -> Any:
    """The attributes of ``obj`` (a pytree object) declared data: those of its
    keys for which ``_declared_data`` holds."""
    if not type(obj)._lens_pytree:
        return ()
    return [k for k, kind in declared_kinds(obj).items() if kind == "data"]


def _key_of(entry: Any) -> Any:
    for attr in ("name", "key", "idx"):  # GetAttrKey, DictKey/FlattenedIndexKey, ...
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return str(entry)


def _holds_state(x: Any) -> bool:
    return isinstance(x, Pytree | Variable) or _is_array(x) or is_array_ref(x)


def pytree_children(x: Any) -> tuple[list[Any], list[Any], Any] | None:
    """``(keys, children, treedef)`` one level down a pytree that holds state.

    None for leaves, ``None`` itself, and pytrees with no array, Variable or Pytree
    inside (those stay static, like any other attribute value).
    """
    if x is None or isinstance(x, str | int | float | bool):
        return None
    leaves = jax.tree_util.tree_leaves(x, is_leaf=_holds_state)
    if not any(_holds_state(leaf) for leaf in leaves) or (
        len(leaves) == 1 and leaves[0] is x
    ):
        return None
    flat, treedef = jax.tree_util.tree_flatten_with_path(
        x, is_leaf=lambda y: y is not x
    )
    return [_key_of(p[0]) for p, _ in flat], [v for _, v in flat], treedef


def _spec_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b


def path_str(path: Path) -> str:
    """``('args', 0, 'encoder', 'kernel')`` -> ``args[0].encoder.kernel``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<root>"


class Builder:
    """Rebuilds graphs from defs and leaf values; ``nodes`` maps index -> node, so
    refs to nodes built (or given) before resolve to the same object."""

    def __init__(self, values: Iterator[Any], nodes: dict[int, Any] | None = None):
        self.values = values
        self.nodes = dict(nodes or {})
        self._trace_state: TraceState | None = None

    @property
    def trace_state(self) -> TraceState:
        """The trace state of everything this builder makes: one, as all of it is
        made here and now (a TraceState is never changed once made)."""
        if self._trace_state is None:
            self._trace_state = TraceState()
        return self._trace_state

    def build(self, d: Any) -> Any:
        if type(d) is StaticDef:  # the most common def: checked first
            return d.value.value
        if isinstance(d, ObjectDef):
            cls: Any = d.type
            if cls.__new__ is Pytree.__new__ and cls._graph_set is Pytree._graph_set:
                return self._build_plain_object(d, cls)
            obj = cls.__new__(cls)
            if d.flags is not None:  # initializing / set up, as the original
                object.__setattr__(obj, "_pytree__state", PytreeState(*d.flags))
            self.nodes[d.index] = obj
            for k, sub in d.attributes:
                # Static attributes (most of them) read in place: every builder's
                # build() hands a StaticDef to this class's, which returns its value.
                value = sub.value.value if type(sub) is StaticDef else self.build(sub)
                obj._graph_set(k, value)
            return obj
        if isinstance(d, Ref):
            return self.nodes[d.index]
        if isinstance(d, VariableDef):
            value = next(self.values)
            meta = dict(d.metadata_dict)
            if meta.get("hijax"):
                v = new_variable(d.type, value, meta)
            else:  # with this builder's trace state
                v = made_variable(d.type, value, meta, self.trace_state)
            self.variable_built(d, v, value)
            return v
        if isinstance(d, ArrayDef):
            return next(self.values)
        if isinstance(d, ArrayRefDef):
            ref = next(self.values)
            self.nodes[d.index] = ref
            return ref
        if isinstance(d, SeqDef):
            return d.type(self.build(e) for e in d.items)
        if isinstance(d, DictDef):
            return {k: self.build(e) for k, e in zip(d.keys, d.items, strict=True)}
        if isinstance(d, PytreeDef):
            return d.treedef.unflatten([self.build(e) for e in d.items])
        if isinstance(d, RegisteredDef):
            impl: Any = GRAPH_REGISTRY[d.type]
            node = impl.create_empty(d.metadata)
            self.nodes[d.index] = node  # before the children: they may refer to it
            impl.init(node, [(k, self.build(sub)) for k, sub in d.attributes])
            return node
        if isinstance(d, CustomPytreeDef):
            children = [
                (k, self.build(e)) for k, e in zip(d.keys, d.items, strict=True)
            ]
            return PYTREE_REGISTRY[d.type].unflatten(children, d.metadata)
        return d.value.value

    def _build_plain_object(self, d: ObjectDef, cls: Any) -> Any:
        """An object of a class that neither makes itself (``__new__``) nor sets its
        children (``_graph_set``) its own way: its attributes go into its
        ``__dict__`` at once, the walk's inverse (it read them from there)."""
        obj = object.__new__(cls)
        flags = d.flags or (False, False)
        state = PytreeState.__new__(PytreeState)
        state._trace_state = self.trace_state
        state._initializing, state._is_setup = flags
        self.nodes[d.index] = obj
        keys, plan = d.build_plan
        values = [v if sub is None else self.build(sub) for v, sub in plan]
        attrs = vars(obj)
        attrs["_pytree__state"] = state
        attrs.update(zip(keys, values))
        return obj

    def variable_built(self, d: VariableDef, v: Any, raw: Any) -> None:
        """Records Variable ``v`` (and ``raw``, its value, when ``d`` numbers a
        ref) under their indices, so later refs to them resolve."""
        self.nodes[d.index] = v
        if isinstance(d.array_refdef, ArrayRefDef):
            self.nodes[d.array_refdef.index] = raw


class InPlaceBuilder(Builder):
    """A Builder that reuses existing objects (``reuse``: index -> object): their
    attributes and variables are replaced in place, so references held by the
    caller see the new structure. Used when a transform changed the structure."""

    def __init__(self, values: Iterator[Any], reuse: dict[int, Any]):
        super().__init__(values)
        self.reuse = reuse
        structure_changed()

    def build(self, d: Any) -> Any:
        if isinstance(d, RegisteredDef) and type(self.reuse.get(d.index)) is d.type:
            node = self.reuse[d.index]
            impl: Any = GRAPH_REGISTRY[d.type]
            impl.clear(node)
            self.nodes[d.index] = node
            impl.init(node, [(k, self.build(sub)) for k, sub in d.attributes])
            return node
        if isinstance(d, ObjectDef) and isinstance(self.reuse.get(d.index), d.type):
            obj = self.reuse[d.index]
            obj._graph_clear()
            self.nodes[d.index] = obj
            for k, sub in d.attributes:
                obj._graph_set(k, self.build(sub))
            return obj
        if isinstance(d, VariableDef) and type(self.reuse.get(d.index)) is d.type:
            v = self.reuse[d.index]
            value = next(self.values)
            object.__setattr__(v, "_raw_value", value)
            object.__setattr__(v, "_var_metadata", {k: s.value for k, s in d.metadata})
            self.variable_built(d, v, value)
            return v
        return super().build(d)


def check_graph_modes(
    name: str, graph: bool | None, graph_updates: bool | None
) -> None:
    """lens.nnx has one mode, Flax's default: ``graph=True, graph_updates=True``."""
    if graph is False or graph_updates is False:
        raise NotImplementedError(
            f"nnx.{name}(graph={graph}, graph_updates={graph_updates}): lens.nnx has "
            "one mode, Flax's default: objects are walked as graphs (shared "
            "references kept) and updates made inside a transform come back in "
            "place.\nLeave graph and graph_updates unset (or True); lens's cached "
            "graph walk makes the default as fast as Flax's tree mode."
        )


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
