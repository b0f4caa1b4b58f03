"""The functional core of lens (like ``flax.core``).

Variables are plain nested dicts, ``{collection: {name or child: ...}}``. A
:class:`Scope` gives a function access to its variables and named rng streams;
:func:`init` and :func:`apply` turn ``fn(scope, *args)`` into a pure function, and
:mod:`lens.core.lift` lifts JAX transforms over scopes.
"""

from lens.core import lift as lift
from lens.core import meta as meta
from lens.core._filters import CollectionFilter as CollectionFilter
from lens.core._filters import DenyList as DenyList
from lens.core._filters import PRNGSequenceFilter as PRNGSequenceFilter
from lens.core._filters import group_collections as group_collections
from lens.core._filters import in_filter as in_filter
from lens.core._filters import intersect_filters as intersect_filters
from lens.core._filters import subtract_filters as subtract_filters
from lens.core._filters import union_filters as union_filters
from lens.core._freeze import FrozenDict as FrozenDict
from lens.core._freeze import copy as copy
from lens.core._freeze import freeze as freeze
from lens.core._freeze import pop as pop
from lens.core._freeze import unfreeze as unfreeze
from lens.core._meta import AxisMetadata as AxisMetadata
from lens.core._scope import Scope as Scope
from lens.core._scope import Variable as Variable
from lens.core._scope import apply as apply
from lens.core._scope import bind as bind
from lens.core._scope import init as init
from lens.core._trace import PackTrace as PackTrace
from lens.core._trace import trace_packs as trace_packs
