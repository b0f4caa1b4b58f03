"""The functional core of lens (like ``flax.core``).

Variables are plain nested dicts, ``{collection: {name or child: ...}}``. A
:class:`Scope` gives a function access to its variables and named rng streams;
:func:`init` and :func:`apply` turn ``fn(scope, *args)`` into a pure function, and
:mod:`lens.core.lift` lifts JAX transforms over scopes.
"""

from typing import TYPE_CHECKING

from lens import traceback_util as _traceback_util  # noqa: F401 - registers lens frames for filtering
from lens._lazy import lazy_exports

# The public names; at run time each loads on first use (lens/_lazy.py).
if TYPE_CHECKING:
    from lens._frozen_dict import FrozenDict as FrozenDict
    from lens._frozen_dict import copy as copy
    from lens._frozen_dict import freeze as freeze
    from lens._frozen_dict import pop as pop
    from lens._frozen_dict import pretty_repr as pretty_repr
    from lens._frozen_dict import unfreeze as unfreeze
    from lens.core import axes_scan as axes_scan
    from lens.core import frozen_dict as frozen_dict
    from lens.core import lift as lift
    from lens.core import meta as meta
    from lens.core import partial_eval as partial_eval
    from lens.core import scope as scope
    from lens.core import spmd as spmd
    from lens.core import tracers as tracers
    from lens.core._entry import apply as apply
    from lens.core._entry import bind as bind
    from lens.core._entry import init as init
    from lens.core._entry import lazy_init as lazy_init
    from lens.core._filters import CollectionFilter as CollectionFilter
    from lens.core._filters import DenyList as DenyList
    from lens.core._filters import PRNGSequenceFilter as PRNGSequenceFilter
    from lens.core._filters import group_collections as group_collections
    from lens.core._filters import in_filter as in_filter
    from lens.core._filters import intersect_filters as intersect_filters
    from lens.core._filters import is_filter_empty as is_filter_empty
    from lens.core._filters import subtract_filters as subtract_filters
    from lens.core._filters import union_filters as union_filters
    from lens.core._meta import AxisMetadata as AxisMetadata
    from lens.core._meta import map_axis_meta as map_axis_meta
    from lens.core._meta import unbox as unbox
    from lens.core._scope import Scope as Scope
    from lens.core._trace import PackTrace as PackTrace
    from lens.core._trace import trace_packs as trace_packs
    from lens.core._tracers import check_trace_level as check_trace_level
    from lens.core._tracers import current_trace as current_trace
    from lens.core._variable import Variable as Variable
    from lens.core.lift import broadcast as broadcast
    from lens.core.lift import custom_vjp as custom_vjp
    from lens.core.lift import jit as jit
    from lens.core.lift import jvp as jvp
    from lens.core.lift import remat as remat
    from lens.core.lift import remat_scan as remat_scan
    from lens.core.lift import scan as scan
    from lens.core.lift import vjp as vjp
    from lens.core.lift import vmap as vmap
    from lens.core.lift import while_loop as while_loop
    from lens.typing import Array as Array


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
