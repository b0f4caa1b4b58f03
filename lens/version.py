"""lens's version (``lens.version``, like ``flax.version``).

``__version__`` is lens's own; ``flax_version`` is the Flax release whose public API
lens follows (the one its surface and its tests are checked against).
"""

__version__ = "0.1.0"
flax_version = "0.12.8"
