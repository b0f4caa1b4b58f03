"""Objects, modules and RNG streams: what holds a graph's variables.

- ``object``: ``Object`` (flax's ``Pytree``), its metaclass, the ``data``/``static``
  annotations and attribute checks;
- ``module``: ``Module`` (sow, perturb, train/eval, ``iter_modules``, ``view``);
- ``rngs``: ``Rngs`` and ``RngStream``, ``split_rngs``/``fork_rngs``/``reseed``;
- ``rng_types``: the key and count variable types of ``Rngs`` streams;
- ``containers``: ``List``, ``Dict``, ``Sequential`` and ``TrainState``;
- ``repr``: the text form of objects (flax's ``__nnx_repr__`` protocol);
- ``state``: an object's own state (its trace state, initializing flag).

flax.nnx's ``pytreelib``, ``module``, ``rnglib`` and ``helpers`` are facades over
this package (lens/_facades.py).
"""
