"""What exists only to mirror flax.nnx's public API; lens's own transforms use none of it.

flax.nnx exposes the machinery its transforms are built from: split and merge
contexts (``split_context``, ``merge_context``, ``update_context``: ``contexts``),
the graph-context object (``GRAPH_CONTEXT``, ``static_cache``: ``graph_context``),
tree-mode states (``tree_states``) and the ``extract`` helpers that turn arguments
into prefixes, trees and updates (``extract_prefix``, ``extract_tree``,
``extract_updates``), and the ``split_inputs``/``merge_inputs`` decorators
(``split_merge``). Code written against them runs on lens through these
modules; lens's transform recipe (lens/nnx/_transforms/recipe.py) has its own.
"""
