"""flax.nnx's ``extract``: :func:`prefix`, specs for a transform's ``in_axes`` /
``out_axes`` / shardings computed from the model itself, and the helpers flax.nnx's
transforms are built from: pytrees of objects as pytrees of states
(``to_tree``/``from_tree``, ``to_tree2``/``from_tree2``, in
:mod:`lens.nnx._mirror.tree_states` and :mod:`lens.nnx._mirror.extract_tree`), prefix broadcasting
and argument tuples (:mod:`lens.nnx._mirror.extract_prefix`), and the Variable updates of
tree-mode transforms (:mod:`lens.nnx._mirror.extract_updates`).

A facade at Flax's path ``flax.nnx.extract``: its names live in
:mod:`lens.nnx._mirror.extract_prefix`, :mod:`lens.nnx._mirror.extract_tree`,
:mod:`lens.nnx._mirror.extract_updates`, :mod:`lens.nnx._mirror.tree_states`,
:mod:`lens.nnx._transforms.prefix_axes`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
