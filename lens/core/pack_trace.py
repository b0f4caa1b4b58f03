"""Pack traces, as the rooms that share them use them: ``lens.core.lift`` records
one, ``lens.nnx``'s transforms record theirs, ``lens.display`` draws them (the
record format: ``pack_trace.schema.json`` next to this file). Users call
``lens.trace()``; this module is the public face of ``_trace`` and ``_lanes``.

A facade at Flax's path ``flax.core.pack_trace``: its names live in
:mod:`lens.core._lanes`, :mod:`lens.core._trace`, as lens/_facades.py lists them.
"""

from lens._lazy import facade_exports

__getattr__, __dir__, __all__ = facade_exports(__name__)
