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
    # fmt: off
    # isort: off
    from lens._frozen_dict import copy, freeze, FrozenDict, pop, pretty_repr, unfreeze
    from lens.core import (
        axes_scan, frozen_dict, lift, meta, partial_eval, scope, spmd, tracers,
    )
    from lens.core._entry import apply, bind, init, lazy_init
    from lens.core._filters import (
        CollectionFilter, DenyList, Filter, group_collections, in_filter,
        intersect_filters, is_filter_empty, PRNGSequenceFilter, subtract_filters,
        union_filters,
    )
    from lens.core._meta import (
        AxisMetadata, get_global_mesh, get_partition_spec, is_axis_metadata,
        map_axis_meta, unbox,
    )
    from lens.core._partitioning import (
        current_mesh, get_sharding, PARTITION_NAME, Partitioned, with_partitioning,
    )
    from lens.core._rng import is_key, is_valid_rng, LazyRng
    from lens.core._scope import Scope
    from lens.core._trace import MIME_TYPE, PackTrace, trace_packs
    from lens.core._tracers import check_trace_level, current_trace
    from lens.core._variable import Variable
    from lens.core.lift import (
        broadcast, custom_vjp, jit, jvp, remat, remat_scan, scan, vjp, vmap, while_loop,
    )
    from lens.typing import Array
    # isort: on
    # fmt: on


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
