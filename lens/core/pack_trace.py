"""Pack traces, as the rooms that share them use them: ``lens.core.lift`` records
one, ``lens.nnx``'s transforms record theirs, ``lens.display`` draws them (the
record format: ``pack_trace.schema.json`` next to this file). Users call
``lens.trace()``; this module is the public face of ``_trace`` and ``_lanes``."""

from lens.core._lanes import describe as describe
from lens.core._trace import MIME_TYPE as MIME_TYPE
from lens.core._trace import PackTrace as PackTrace
from lens.core._trace import Recorder as Recorder
from lens.core._trace import active as active
from lens.core._trace import recorder as recorder
from lens.core._trace import trace_packs as trace_packs
