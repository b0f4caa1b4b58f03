"""flax.nnx's ``proxy_caller``: :class:`ApplyCaller`, the object that
``nnx.call((graphdef, state)).method(...)`` returns (defined with ``call`` in
:mod:`lens.nnx.graphlib`)."""

from lens.nnx.graphlib import ApplyCaller as ApplyCaller
