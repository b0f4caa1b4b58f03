"""The transforms: one recipe (split the objects, check aliasing, call, merge back)
and each JAX transform on it.

- ``recipe``: the recipe every transform shares (flax's ``transforms.general``);
- ``autodiff``: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``remat``;
- ``iteration``: ``vmap``, ``pmap``, ``transform_metadata``;
- ``jit``: ``jit`` and ``JitWrapped`` (flax's ``transforms.compilation``);
- ``branches``: ``cond``, ``switch``, ``eval_shape``, ``make_jaxpr``, ``checkify``
  (flax's ``transforms.transforms``);
- ``specs``: the Lift types (``StateAxes``, ``DiffState``) and the recipe's
  records (``Skeleton`` and its ``GraphSlot``/``LeafSlot``/``StaticSlot``,
  ``Entry``, ``Carrier``);
- ``axes``, ``prefix_axes``: axis specs resolved per variable (in_axes prefixes);
- ``modes``: graph and tree mode, simple-mode checks;
- ``lifted``: the shared wrapper of vmap/pmap/scan-style transforms;
- ``loops``, ``scan_step``: ``scan``, ``fori_loop``, ``while_loop`` and one scan step;
- ``cotangents``, ``simple_vjp``, ``custom_gradients``: gradients of objects;
- ``jit_args``, ``jit_cache``, ``jit_refs``, ``jit_shardings``, ``jit_stages``:
  ``nnx.jit``'s static/donated arguments, its cached walk, refs made inside, its
  shardings and its AOT stages;
- ``sharding``: ``shard_map`` and ``StateSharding``;
- ``signatures``: the call signatures flax.nnx types its transforms with;
- ``pack_trace``: the pack-trace records lens.nnx's transforms write for displays.

flax.nnx's ``transforms/`` modules are facades over this package (lens/_facades.py).
"""
