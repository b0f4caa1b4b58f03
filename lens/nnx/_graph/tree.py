"""Tree mode of the graph API (flax.nnx's ``graph=False``): a node is walked as the
JAX pytree it is (Modules and Variables are pytrees), Variables are the leaves, and
no node may be reached twice (tree mode keeps no sharing, so a shared Variable or a
cycle is a ``ValueError``).

:func:`tree_flatten` and :func:`tree_unflatten` are the two halves every
tree-mode function is built on (``split``/``merge``/``state``/``clone``/
``flatten``/``iter_graph``/``recursive_map`` with ``graph=False``); transforms in
tree mode call them too:

>>> import jax.numpy as jnp
>>> from lens import nnx
>>> from lens.nnx._graph.tree import tree_flatten, tree_unflatten
>>> gdef, flat = tree_flatten({'w': nnx.Param(jnp.ones(2)), 'n': 3})
>>> [path for path, _ in flat]
[('n',), ('w',)]
>>> tree_unflatten(gdef, [leaf for _, leaf in flat])['n']
3
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax

from lens.nnx._graph.defs import GraphDef, TreeNodeDef, VariableDef
from lens.nnx._graph.walk import Path, path_str
from lens.nnx._objects.object import Pytree
from lens.nnx._variables.static import freeze_metadata
from lens.nnx._variables.variable import Variable


def is_tree_leaf(x: Any) -> bool:
    """Variables are leaves of the tree-mode flatten (their values stay boxed)."""
    return isinstance(x, Variable)


def key_of(entry: Any) -> Any:
    """The path part of a JAX key entry: an attribute name, a dict key, an index."""
    for attr in ("name", "key", "idx"):
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return str(entry)


def _children(x: Any) -> list[tuple[Any, Any]] | None:
    """``[(key, child)]`` one level down ``x``, or None for a leaf."""
    if is_tree_leaf(x):
        return None
    flat, _ = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    if len(flat) == 1 and flat[0][1] is x:
        return None
    return [(key_of(kp[0]), v) for kp, v in flat]


def check_tree(node: Any, /, fn_name: str = "flatten") -> None:
    """Raises ``ValueError`` when a Variable or an object is reached twice (shared,
    or a cycle): tree mode keeps no sharing; or when an object is not a pytree
    (``pytree=False``)."""
    for _ in walk_tree(node, fn_name):
        pass


def check_valid_pytree(node: Any, fn_name: str, path: str = "") -> None:
    """Raises ``ValueError`` when ``node`` is an object made with
    ``pytree=False``: tree mode cannot walk it."""
    if isinstance(node, Pytree) and not type(node)._lens_pytree:
        where = f"Found at path: {path}. " if path else ""
        raise ValueError(
            f"Cannot use '{fn_name}' with graph=False on a '{type(node).__name__}' "
            f"instance that has pytree=False. {where}Pytree subclasses with "
            "pytree=False are not registered as JAX pytrees and cannot be used in "
            f"tree-mode.\nPass graph=True to nnx.{fn_name}, or make the class a "
            "pytree (drop pytree=False)."
        )


def walk_tree(
    node: Any, /, fn_name: str = "flatten"
) -> Iterator[tuple[Path, Any, bool]]:
    """``(path, x, is_leaf)`` for every node, children before their parent.

    As in flax.nnx, a Variable (or ref) reached twice is refused, and an object
    without one reached twice is walked twice (it comes back as two copies); an
    object inside itself is refused."""
    seen: dict[int, Path] = {}
    ancestors: dict[int, Path] = {}

    def go(x: Any, path: Path) -> Iterator[tuple[Path, Any, bool]]:
        check_valid_pytree(x, fn_name, path_str(path) if path else "")
        if isinstance(x, Variable) or _is_ref(x):
            if id(x) in seen:
                raise _shared_reference(x, seen[id(x)], path)
            seen[id(x)] = path
        elif isinstance(x, Pytree):
            if id(x) in ancestors:
                raise ValueError(
                    f"Cycle detected for {type(x).__name__}\nfound at paths:\n\n"
                    f"  - {_keystr(ancestors[id(x)])}\n  - {_keystr(path)}\n\n"
                    "Cycles are not supported with graph=False.\nUse graph mode: "
                    "graph=True, or nnx.compat.split(...)."
                )
            ancestors[id(x)] = path
        children = _children(x)
        if children is not None:
            for k, child in children:
                yield from go(child, path + (k,))
        ancestors.pop(id(x), None)
        yield path, x, children is None

    yield from go(node, ())


def _shared_reference(x: Any, first: Path, second: Path) -> ValueError:
    # flax.nnx's layout: the paths as jax.tree_util.keystr writes them
    return ValueError(
        f"Duplicate {type(x).__name__} found at paths:\n\n  - {_keystr(first)}\n"
        f"  - {_keystr(second)}\n\nTree mode (graph=False) does not support "
        "shared references.\nPass each Variable once (nnx.clone() makes a copy), "
        "or use graph mode: nnx.split(..., graph=True), or nnx.compat.split(...)."
    )


def _keystr(path: Path) -> str:
    return "".join(f"[{k!r}]" if isinstance(k, int) else f".{k}" for k in path)


def _is_ref(x: Any) -> bool:
    ref_type = getattr(jax, "Ref", None)
    return ref_type is not None and isinstance(x, ref_type)


def tree_flatten(node: Any, /) -> tuple[GraphDef, list[tuple[Path, Any]]]:
    """``(graphdef, [(path, leaf), ...])`` with the leaves (Variables themselves,
    not copies, and any other pytree leaf) sorted by path."""
    check_tree(node)
    flat, treedef = jax.tree_util.tree_flatten_with_path(node, is_leaf=is_tree_leaf)
    paths = [tuple(key_of(k) for k in kp) for kp, _ in flat]
    order = sorted(range(len(flat)), key=lambda i: _sort_key(paths[i]))
    path_index = tuple((paths[i], i) for i in order)
    tree_def = TreeNodeDef(type(node), treedef, path_index)
    leaves = [(paths[i], flat[i][1]) for i in order]
    variable_defs = [
        VariableDef(v.type, j, None, freeze_metadata(v.metadata))
        for j, (_, v) in enumerate(leaves)
        if isinstance(v, Variable)
    ]
    gdef = GraphDef(
        [tree_def, *variable_defs],
        [],
        node=tree_def,
        paths=tuple(p for p, _ in leaves),
    )
    return gdef, leaves


def _sort_key(path: Path) -> tuple[Any, ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


def tree_unflatten(
    graphdef: GraphDef,
    leaves: list[Any],
    /,
    *,
    copy_variables: bool = False,
) -> Any:
    """The node ``graphdef`` describes, from its leaves in ``graphdef.paths``
    order; the Variables given are used as they are unless ``copy_variables``."""
    node: TreeNodeDef = graphdef.node
    if len(leaves) != len(node.path_index):
        raise ValueError(
            f"Expected {len(node.path_index)} leaves for the tree-mode graphdef, "
            f"got {len(leaves)}.\nPass the state that split(..., graph=False) "
            "returned for this graphdef."
        )
    in_order: list[Any] = [None] * len(leaves)
    for (_, i), leaf in zip(node.path_index, leaves, strict=True):
        in_order[i] = leaf.copy() if copy_variables and is_tree_leaf(leaf) else leaf
    return node.treedef.unflatten(in_order)


def tree_map_nodes(f: Callable[[Path, Any], Any], node: Any, /) -> Any:
    """``recursive_map`` in tree mode: ``f(path, x)`` on every node, children
    first; objects are rebuilt (new ones) around their mapped children."""
    check_tree(node, "recursive_map")

    def go(x: Any, path: Path) -> Any:
        children = _children(x)
        if children is not None:
            treedef = jax.tree_util.tree_structure(x, is_leaf=lambda y: y is not x)
            x = treedef.unflatten([go(c, path + (k,)) for k, c in children])
        return f(path, x)

    return go(node, ())
