"""flax.nnx's ``graph`` module: the object-graph functions under their module
name (``from flax.nnx import graph`` ports as ``from lens.nnx import graph``)."""

from lens.nnx._graph import GraphDef, Object, is_graph_node
from lens.nnx._helpers import find_duplicates, pop, recursive_map, variables
from lens.nnx._misc import flatten, set_graph_mode, set_graph_updates, unflatten
from lens.nnx._module import iter_children, iter_module_children
from lens.nnx._state import clone, graphdef, iter_graph, merge, split, state, update

__all__ = [
    "GraphDef",
    "Object",
    "clone",
    "find_duplicates",
    "flatten",
    "graphdef",
    "is_graph_node",
    "iter_children",
    "iter_graph",
    "iter_module_children",
    "merge",
    "pop",
    "recursive_map",
    "set_graph_mode",
    "set_graph_updates",
    "split",
    "state",
    "unflatten",
    "update",
    "variables",
]
