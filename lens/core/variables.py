"""Variable dicts (``lens.core.variables``, like ``flax.core.variables``).

A variable dict is a plain ``dict`` of *collections* (``"params"``,
``"batch_stats"``, ...), each a nested dict of arrays with the same module tree,
so ``{"params": {"Dense_0": {"kernel": ...}}, "batch_stats": {...}}``.
:class:`Variable` is the handle a scope gives to one entry.
"""

from lens.core._variable import Variable as Variable
