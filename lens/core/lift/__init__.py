"""Lifted transformations (``lens.core.lift``, like ``flax.core.lift``).

Every transform here is built on :func:`pack`; each file only says how its groups,
axes and rngs are mapped.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names; at run time each loads on first use (lens/_lazy.py).
if TYPE_CHECKING:
    # fmt: off
    # isort: off
    from lens._frozen_dict import freeze, unfreeze
    from lens.core._filters import (
        CollectionFilter, DenyList, Filter, group_collections, in_filter,
        intersect_filters, is_filter_empty, PRNGSequenceFilter, subtract_filters,
        union_filters,
    )
    from lens.core._rng import LazyRng
    from lens.core._scope import Scope
    from lens.core.lift._ad import jvp, value_and_grad, vjp
    from lens.core.lift._control import cond, switch, while_loop
    from lens.core.lift._custom import custom_jvp, custom_vjp
    from lens.core.lift._jit import fold_rngs, jit
    from lens.core.lift._map_variables import map_variables, swap_collection, transform
    from lens.core.lift._pack import pack
    from lens.core.lift._remat import checkpoint, remat, remat_scan
    from lens.core.lift._scan import scan
    from lens.core.lift._util import (
        broadcast, CountsHolder, id_fn, set_from_dict, TransformContext, tree_map_rngs,
    )
    from lens.core.lift._vmap import vmap
    from lens.typing import In, InOutAxis, InOutScanAxis, Out
    # isort: on
    # fmt: on


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
