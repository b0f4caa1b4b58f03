"""The object-graph API (flax.nnx's ``graphlib``, also importable as ``graph``).

A facade at Flax's path ``flax.nnx.graphlib``: its names live in
:mod:`lens.nnx._graph.defs`, :mod:`lens.nnx._graph.graph_state`,
:mod:`lens.nnx._graph.mode`, :mod:`lens.nnx._graph.ops`,
:mod:`lens.nnx._graph.registry`, :mod:`lens.nnx._graph.update`,
:mod:`lens.nnx._graph.vars`, :mod:`lens.nnx._graph.walk`,
:mod:`lens.nnx._mirror.contexts`, :mod:`lens.nnx._mirror.graph_context`,
:mod:`lens.nnx._objects.object`, :mod:`lens.nnx._variables.state`,
:mod:`lens.nnx._variables.variable`, :mod:`lens.typing`, as lens/_facades.py lists
them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
