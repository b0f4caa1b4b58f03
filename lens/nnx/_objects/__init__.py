"""Objects beyond ``Object``/``Module`` (lens/nnx/pytreelib.py, module.py, flax's paths).

- ``repr``: the text form of objects (flax's ``__nnx_repr__`` protocol);
- ``state``: an object's own state (its trace state, initializing flag);
- ``rng_types``: the key and count variable types of ``Rngs`` streams.
"""
