"""The object graph: how lens.nnx sees objects as a graph and pytrees of values.

- ``walk``: one walk of objects into a static graph definition (``GraphDef``) and
  their variables' values (aliases numbered as such), and the rebuild from both;
- ``defs``: the graph definitions (``ObjectDef``, ``VariableDef``, ``StaticDef``...);
- ``registry``: which types are graph nodes or pytree nodes, and how to take them apart;
- ``ops``: ``split``, ``merge``, ``state``, ``update``, ``graphdef``, ``clone``,
  ``iter_graph`` and the other graph operations on top of the walk;
- ``update``: writing new values and structure back into existing objects;
- ``tree``, ``state``, ``vars``: the graph as flat or nested states, variables by path;
- ``mode``: graph mode and graph updates (flax's ``set_graph_mode``), per context.

flax.nnx's ``graph`` and ``graphlib`` are facades over this package.
"""
