"""Old homes of APIs that graduated (``lens.experimental``, like ``flax.experimental``).

``lens.experimental.nnx`` is :mod:`lens.nnx` under its pre-release name.
"""
