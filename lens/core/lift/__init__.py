"""Lifted transformations (``lens.core.lift``, like ``flax.core.lift``).

Every transform here is built on :func:`pack`; each file only says how its groups,
axes and rngs are mapped.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names; at run time each loads on first use (lens/_lazy.py).
if TYPE_CHECKING:
    from lens._frozen_dict import freeze as freeze
    from lens._frozen_dict import unfreeze as unfreeze
    from lens.core._filters import CollectionFilter as CollectionFilter
    from lens.core._filters import DenyList as DenyList
    from lens.core._filters import Filter as Filter
    from lens.core._filters import PRNGSequenceFilter as PRNGSequenceFilter
    from lens.core._filters import group_collections as group_collections
    from lens.core._filters import in_filter as in_filter
    from lens.core._filters import intersect_filters as intersect_filters
    from lens.core._filters import is_filter_empty as is_filter_empty
    from lens.core._filters import subtract_filters as subtract_filters
    from lens.core._filters import union_filters as union_filters
    from lens.core._rng import LazyRng as LazyRng
    from lens.core._scope import Scope as Scope
    from lens.core.lift._ad import jvp as jvp
    from lens.core.lift._ad import value_and_grad as value_and_grad
    from lens.core.lift._ad import vjp as vjp
    from lens.core.lift._control import cond as cond
    from lens.core.lift._control import switch as switch
    from lens.core.lift._control import while_loop as while_loop
    from lens.core.lift._custom import custom_jvp as custom_jvp
    from lens.core.lift._custom import custom_vjp as custom_vjp
    from lens.core.lift._jit import fold_rngs as fold_rngs
    from lens.core.lift._jit import jit as jit
    from lens.core.lift._map_variables import map_variables as map_variables
    from lens.core.lift._map_variables import swap_collection as swap_collection
    from lens.core.lift._map_variables import transform as transform
    from lens.core.lift._pack import pack as pack
    from lens.core.lift._remat import checkpoint as checkpoint
    from lens.core.lift._remat import remat as remat
    from lens.core.lift._remat import remat_scan as remat_scan
    from lens.core.lift._scan import scan as scan
    from lens.core.lift._util import CountsHolder as CountsHolder
    from lens.core.lift._util import TransformContext as TransformContext
    from lens.core.lift._util import broadcast as broadcast
    from lens.core.lift._util import id_fn as id_fn
    from lens.core.lift._util import set_from_dict as set_from_dict
    from lens.core.lift._util import tree_map_rngs as tree_map_rngs
    from lens.core.lift._vmap import vmap as vmap
    from lens.typing import In as In
    from lens.typing import InOutAxis as InOutAxis
    from lens.typing import InOutScanAxis as InOutScanAxis
    from lens.typing import Out as Out


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
