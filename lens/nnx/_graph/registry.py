"""Which types the graph API walks into, and how (flax.nnx's node registry).

A *graph node* has identity: it is numbered once per walk, may be shared, and is
rebuilt empty first and filled after (so it may refer to itself). Every
``nnx.Object``/``nnx.Module`` subclass is one; ``register_graph_node_type`` adds
other types. A *pytree node* is a value container walked into but not numbered
(``list``, ``tuple``, ``dict``, ``State``, ``None``, and any JAX pytree);
``register_pytree_node_type`` adds other types with keys of their own.

Both registries map a type to a :class:`NodeImpl`: ``flatten(node) ->
([(key, child), ...], aux)`` and the functions that rebuild or change a node.
``nnx.split``/``merge``/``state``/``update``/``pop``/``iter_graph`` and the
transforms all walk through them:

>>> from lens import nnx
>>> class Box:  # a plain class, made a graph node
...     def __init__(self, **kw):
...         vars(self).update(kw)
>>> nnx.graphlib.register_graph_node_type(
...     Box,
...     flatten=lambda b: (sorted(vars(b).items()), None),
...     set_key=lambda b, k, v: setattr(b, k, v),
...     pop_key=lambda b, k: vars(b).pop(k),
...     create_empty=lambda _: Box(),
...     clear=lambda b: vars(b).clear(),
...     init=lambda b, items: vars(b).update(items),
... )
>>> graphdef, state = nnx.split(Box(w=nnx.Param(1.0), n=3))
>>> nnx.merge(graphdef, state).w.value
1.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, NamedTuple, TypeGuard, TypeVar

import jax
import numpy as np

# JAX's own table of registered pytree node types ({type: registration}), public
# under flax.nnx's name: `type(x) in JAX_PYTREE_REGISTRY` says x is a pytree node.
from jax._src.tree_util import _registry as JAX_PYTREE_REGISTRY

from lens._facades import show_at_flax_paths
from lens.nnx._objects.object import Pytree, forget_data_types
from lens.nnx._variables.variable import Variable
from lens.typing import Key, PathParts, is_key_like

Node = TypeVar("Node")
Leaf = TypeVar("Leaf")
AuxData = TypeVar("AuxData")


@dataclasses.dataclass(frozen=True, slots=True)
class DataElem:
    """A graph node's child that is data (a state leaf even when it is not an
    array), as a ``flatten`` function may mark it."""

    value: Any


@dataclasses.dataclass(frozen=True, slots=True)
class StaticElem:
    """A graph node's child that is static (part of the GraphDef)."""

    value: Any


@dataclasses.dataclass(frozen=True, slots=True)
class NodeImplBase(Generic[Node, Leaf, AuxData]):
    """A node type and its ``flatten``: ``node -> ([(key, child), ...], aux)``."""

    type: type
    flatten: Callable[[Any], tuple[Sequence[tuple[Key, Any]], Any]]

    def node_dict(self, node: Any) -> dict[Key, Any]:
        """``{key: child}`` of ``node`` (Data/Static markers removed)."""
        if self.flatten is _object_flatten:
            # A Pytree's flatten marks each attribute data or static (a pytree
            # walk of every value) only for the marks to be dropped here: read
            # the same items directly (nnx.update asks this of every object).
            return dict(node._graph_items())
        items, _ = self.flatten(node)
        return {
            key: value.value if isinstance(value, DataElem | StaticElem) else value
            for key, value in items
        }


@dataclasses.dataclass(frozen=True, slots=True)
class GraphNodeImpl(NodeImplBase[Node, Leaf, AuxData]):
    """A graph node type: rebuilt with ``create_empty(aux)`` then ``init(node,
    children)``; ``clear`` empties one reused in place; ``set_key``/``pop_key``
    change one child (``nnx.update``/``nnx.pop``)."""

    set_key: Callable[[Any, Key, Any], None]
    pop_key: Callable[[Any, Key], Any]
    create_empty: Callable[[Any], Any]
    clear: Callable[[Any], None]
    init: Callable[[Any, Iterable[tuple[Key, Any]]], None]


@dataclasses.dataclass(frozen=True, slots=True)
class PytreeNodeImpl(NodeImplBase[Node, Leaf, AuxData]):
    """A pytree node type: rebuilt with ``unflatten(children, aux)``; without
    ``set_key``/``pop_key`` it cannot change in place."""

    unflatten: Callable[[Sequence[tuple[Key, Any]], Any], Any]
    set_key: Callable[[Any, Key, Any], None] | None
    pop_key: Callable[[Any, Key], Any] | None


NodeImpl = GraphNodeImpl[Node, Leaf, AuxData] | PytreeNodeImpl[Node, Leaf, AuxData]


def _object_flatten(obj: Pytree) -> tuple[list[tuple[Key, Any]], type]:
    items = obj._graph_items()
    if type(obj)._lens_pytree:  # data/static as the object's pytree sees them
        nodes = obj._pytree__nodes
        items = [(k, DataElem(v) if nodes.get(k) else StaticElem(v)) for k, v in items]
    return items, type(obj)


def _object_set_key(obj: Pytree, key: Key, value: Any) -> None:
    current = dict(obj._graph_items()).get(key)
    if isinstance(current, Variable) and isinstance(value, Variable):
        current.update_from_state(value)
    elif isinstance(key, str) and type(obj)._graph_set is Pytree._graph_set:
        setattr(obj, key, value)  # the object's own checks (static, mutability)
    else:
        obj._graph_set(key, value)


def _object_pop_key(obj: Pytree, key: Key) -> Any:
    value = dict(obj._graph_items())[key]
    if isinstance(key, str) and key in vars(obj):
        delattr(obj, key)
    else:  # an nnx.List / nnx.Dict item
        del obj[key]  # type: ignore[index]
    return value


def _object_init(obj: Pytree, items: Iterable[tuple[Key, Any]]) -> None:
    for key, value in items:
        obj._graph_set(key, value)


def _object_impl(cls: type) -> GraphNodeImpl:
    return GraphNodeImpl(
        type=cls,
        flatten=_object_flatten,
        set_key=_object_set_key,
        pop_key=_object_pop_key,
        create_empty=lambda node_type: node_type.__new__(node_type),
        clear=lambda obj: obj._graph_clear(),
        init=_object_init,
    )


def _is_object_type(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, Pytree)


class _GraphRegistry(dict):
    """``GRAPH_REGISTRY``: every Pytree subclass is in it (its impl is made on
    first use, as flax.nnx registers each Pytree subclass when it is defined)."""

    def __missing__(self, key: Any) -> GraphNodeImpl:
        if not _is_object_type(key):
            raise KeyError(key)
        impl = self[key] = _object_impl(key)
        return impl

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or _is_object_type(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default


GRAPH_REGISTRY: dict[type, NodeImpl[Any, Any, Any]] = _GraphRegistry()
PYTREE_REGISTRY: dict[type, PytreeNodeImpl[Any, Any, Any]] = {}


def register_graph_node_type(
    type: type,  # noqa: A002 - Flax's parameter name
    flatten: Callable[[Any], tuple[Sequence[tuple[Key, Any]], Any]],
    set_key: Callable[[Any, Key, Any], None],
    pop_key: Callable[[Any, Key], Any],
    create_empty: Callable[[Any], Any],
    clear: Callable[[Any], None],
    init: Callable[[Any, Iterable[tuple[Key, Any]]], None],
) -> None:
    """Makes ``type`` a graph node: ``nnx.split``/``merge``/``state``/``update``/
    ``pop`` and the transforms walk into it, number it and keep its sharing.

    Raises:
        ValueError: ``type`` is already registered (every Pytree subclass is).
    """
    if type in GRAPH_REGISTRY:
        raise ValueError(
            f"Node type {type} is already registered.\nRegister each type once "
            "(nnx.Object and nnx.Module subclasses are graph nodes already)."
        )
    GRAPH_REGISTRY[type] = GraphNodeImpl(
        type=type,
        flatten=flatten,
        set_key=set_key,
        pop_key=pop_key,
        create_empty=create_empty,
        clear=clear,
        init=init,
    )
    forget_data_types()  # values of ``type`` are data now


def register_pytree_node_type(
    type: type,  # noqa: A002 - Flax's parameter name
    flatten: Callable[[Any], tuple[Sequence[tuple[Key, Any]], Any]],
    unflatten: Callable[[Sequence[tuple[Key, Any]], Any], Any],
    *,
    set_key: Callable[[Any, Key, Any], None] | None = None,
    pop_key: Callable[[Any, Key], Any] | None = None,
) -> None:
    """Makes ``type`` a pytree node of the graph API: walked into with
    ``flatten``, rebuilt with ``unflatten``, never shared.

    Raises:
        ValueError: ``type`` is already registered.
    """
    if type in PYTREE_REGISTRY:
        raise ValueError(
            f"Node type {type} is already registered.\nRegister each type once."
        )
    PYTREE_REGISTRY[type] = PytreeNodeImpl(
        type=type,
        flatten=flatten,
        unflatten=unflatten,
        set_key=set_key,
        pop_key=pop_key,
    )


class GenericPytree:
    """The node type of any JAX pytree that has no impl of its own."""


def is_pytree_node(x: Any, *, check_graph_registry: bool = True) -> bool:
    """Whether ``x`` is a pytree node (a JAX pytree or tuple, not a Variable; with
    ``check_graph_registry``, not a graph node)."""
    if check_graph_registry and type(x) in GRAPH_REGISTRY:
        return False
    if isinstance(x, Variable):
        return False
    return type(x) in JAX_PYTREE_REGISTRY or isinstance(x, tuple)


def is_node(x: Any) -> bool:
    """Whether the graph API walks into ``x`` (a graph or pytree node)."""
    if isinstance(x, Variable):
        return False
    return type(x) in GRAPH_REGISTRY or is_pytree_node(x)


def is_graph_node(x: Any) -> bool:
    """Whether ``x`` has identity in a graph: a registered graph node (every
    Pytree) or a Variable."""
    return type(x) in GRAPH_REGISTRY or isinstance(x, Variable)


def is_node_type(x: type) -> bool:
    """Whether ``x`` is a registered node type (graph or pytree)."""
    return x in GRAPH_REGISTRY or x in PYTREE_REGISTRY or x is GenericPytree


def is_node_module(x: Any) -> bool:
    """Whether ``x`` is a graph node (not a Variable, not a pytree)."""
    return type(x) in GRAPH_REGISTRY


def is_node_leaf(x: Any) -> TypeGuard[Any]:
    """Whether ``x`` is a state leaf: a Variable or an array."""
    return isinstance(x, Variable | jax.Array | np.ndarray)


def get_node_impl(x: Any) -> NodeImpl[Any, Any, Any] | None:
    """The impl the graph API walks ``x`` with; None for leaves and Variables."""
    if isinstance(x, Variable):
        return None
    node_type = type(x)
    if node_type in GRAPH_REGISTRY:
        return GRAPH_REGISTRY[node_type]
    if node_type in PYTREE_REGISTRY:
        return PYTREE_REGISTRY[node_type]
    if node_type in JAX_PYTREE_REGISTRY or issubclass(node_type, tuple):
        return PYTREE_NODE_IMPL
    return None


def get_node_impl_for_type(x: type) -> NodeImpl[Any, Any, Any] | None:
    """The impl registered for the type ``x`` (``GenericPytree``: any pytree)."""
    if x is GenericPytree:
        return PYTREE_NODE_IMPL
    if x in PYTREE_REGISTRY:
        return PYTREE_REGISTRY[x]
    return GRAPH_REGISTRY.get(x)


def _key_path_to_key(key: Any) -> Key:
    if isinstance(key, jax.tree_util.SequenceKey):
        return key.idx
    if isinstance(key, jax.tree_util.DictKey | jax.tree_util.FlattenedIndexKey):
        if not is_key_like(key.key):
            raise ValueError(
                f"Invalid key: {key.key}. May be due to its type not being hashable "
                "or comparable.\nUse str or int keys in pytrees the graph API walks."
            )
        return key.key
    if isinstance(key, jax.tree_util.GetAttrKey):
        return key.name
    return str(key)


def jax_to_nnx_path(jax_path: tuple, /) -> PathParts:
    """A JAX key path (``DictKey('a'), SequenceKey(0)``) as an nnx path
    (``('a', 0)``)."""
    return tuple(_key_path_to_key(part) for part in jax_path)


class IndexesPytreeDef(NamedTuple):
    """The aux data of a generic pytree: each key's position in JAX's order,
    and the treedef one level down."""

    key_index: tuple[tuple[Key, int], ...]
    treedef: Any


def _flatten_pytree(pytree: Any) -> tuple[list[tuple[Key, Any]], IndexesPytreeDef]:
    """One level of a JAX pytree as ``[(key, child)]`` sorted by key, and what
    :func:`_unflatten_pytree` needs to rebuild it."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(
        pytree, is_leaf=lambda x: x is not pytree
    )
    nodes = [(_key_path_to_key(path[0]), value) for path, value in leaves]
    key_index = tuple((key, i) for i, (key, _) in enumerate(nodes))
    nodes.sort(key=lambda kv: _sort_key(kv[0]))
    return nodes, IndexesPytreeDef(key_index, treedef)


def _sort_key(key: Any) -> tuple[int, Any]:
    return (0, key) if isinstance(key, int) else (1, str(key))


def _unflatten_pytree(
    nodes: Sequence[tuple[Key, Any]], metadata: IndexesPytreeDef
) -> Any:
    """The pytree :func:`_flatten_pytree` took apart (children in any order)."""
    position = dict(metadata.key_index)
    ordered = sorted(nodes, key=lambda kv: position[kv[0]])
    return metadata.treedef.unflatten([value for _, value in ordered])


PYTREE_NODE_IMPL = PytreeNodeImpl(
    type=GenericPytree,
    flatten=_flatten_pytree,
    unflatten=_unflatten_pytree,
    set_key=None,
    pop_key=None,
)


def mapping_flatten(x: Any) -> tuple[list[tuple[Key, Any]], None]:
    """A mapping's items sorted by key (ints first), flax.nnx's order."""
    return sorted(x.items(), key=lambda kv: _sort_key(kv[0])), None


def _set_item(x: Any, key: Any, value: Any) -> None:
    x[key] = value


def _pop_item(x: Any, key: Any) -> Any:
    return x.pop(key)


register_pytree_node_type(
    list,
    flatten=lambda x: (list(enumerate(x)), None),
    unflatten=lambda nodes, _: [value for _, value in nodes],
    set_key=_set_item,
)
register_pytree_node_type(
    tuple,
    flatten=lambda x: (list(enumerate(x)), None),
    unflatten=lambda nodes, _: tuple(value for _, value in nodes),
)
register_pytree_node_type(
    dict,
    flatten=mapping_flatten,
    unflatten=lambda nodes, _: dict(nodes),
    set_key=_set_item,
    pop_key=_pop_item,
)
register_pytree_node_type(
    type(None),
    flatten=lambda x: ([], None),
    unflatten=lambda _, __: None,
)


# The types lens registered itself: the walk handles them its own way.
_BUILTIN: set[type] = {list, tuple, dict, type(None)}


def register_builtin_pytree(type_: type, **impl: Any) -> None:
    """``register_pytree_node_type`` for a lens type the walk already handles
    (``State``, registered where it is defined above this module)."""
    register_pytree_node_type(type_, **impl)
    _BUILTIN.add(type_)


def custom_impl(x: Any) -> NodeImpl[Any, Any, Any] | None:
    """The impl of ``x`` when a user registered its type (not a Pytree, and
    none of the built-in containers the walk handles itself)."""
    impl = dict.get(GRAPH_REGISTRY, type(x))
    if impl is not None and not isinstance(x, Pytree):
        return impl
    if type(x) in _BUILTIN:
        return None
    return PYTREE_REGISTRY.get(type(x))


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
