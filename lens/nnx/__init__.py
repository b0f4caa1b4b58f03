"""Eager modules with JAX-style transforms (``lens.nnx``).

Modules here are ordinary Python objects: built eagerly (``Linear(2, 3,
rngs=nnx.Rngs(0))`` holds its parameters), mutated in place, shared by reference.
``split``/``merge``/``state``/``update`` move between a module and its
:class:`State` (a pytree), and the transforms take modules as JAX transforms take
pytrees:

>>> import jax.numpy as jnp
>>> from lens import nnx
>>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
>>> grads = nnx.grad(lambda m, x: jnp.sum(m(x) ** 2))(model, jnp.ones((1, 2)))
>>> sorted(grads)
['bias', 'kernel']

``vmap``'s ``in_axes`` maps each module argument on its own axis, and the Lift types
refine that inside one module (``StateAxes``, ``DiffState``); ``split_rngs`` gives a
mapped call its own keys; every alias of one object must be lifted the same way.
"""

from lens.nn import initializers
from lens.nnx._filters import (
    All,
    Any,
    Everything,
    Not,
    Nothing,
    OfType,
    PathContains,
    WithTag,
)
from lens.nnx._graph import (
    BatchStat,
    Cache,
    GraphDef,
    Intermediate,
    Object,
    OptState,
    Param,
    RngCount,
    RngKey,
    RngState,
    State,
    Variable,
    clone,
    graphdef,
    iter_graph,
    merge,
    split,
    state,
    update,
)
from lens.nnx._layers import (
    BatchNorm,
    Dropout,
    LayerNorm,
    Linear,
    Module,
    Optimizer,
    Sequential,
)
from lens.nnx._rngs import Rngs, RngStream, split_rngs
from lens.nnx._transforms import DiffState, StateAxes, grad, jit, value_and_grad, vmap

__all__ = [
    "All",
    "Any",
    "BatchNorm",
    "BatchStat",
    "Cache",
    "DiffState",
    "Dropout",
    "Everything",
    "GraphDef",
    "Intermediate",
    "LayerNorm",
    "Linear",
    "Module",
    "Not",
    "Nothing",
    "Object",
    "OfType",
    "OptState",
    "Optimizer",
    "Param",
    "PathContains",
    "RngCount",
    "RngKey",
    "RngState",
    "RngStream",
    "Rngs",
    "Sequential",
    "State",
    "StateAxes",
    "Variable",
    "WithTag",
    "clone",
    "grad",
    "graphdef",
    "initializers",
    "iter_graph",
    "jit",
    "merge",
    "split",
    "split_rngs",
    "state",
    "update",
    "value_and_grad",
    "vmap",
]
