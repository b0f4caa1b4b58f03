"""Lifted transformations (``lens.core.lift``, like ``flax.core.lift``).

Every transform here is built on :func:`pack`; each file only says how its groups,
axes and rngs are mapped.
"""

from lens.core.lift._ad import jvp as jvp
from lens.core.lift._ad import value_and_grad as value_and_grad
from lens.core.lift._ad import vjp as vjp
from lens.core.lift._control import cond as cond
from lens.core.lift._control import switch as switch
from lens.core.lift._control import while_loop as while_loop
from lens.core.lift._custom import custom_jvp as custom_jvp
from lens.core.lift._custom import custom_vjp as custom_vjp
from lens.core.lift._jit import jit as jit
from lens.core.lift._map_variables import map_variables as map_variables
from lens.core.lift._map_variables import transform as transform
from lens.core.lift._pack import pack as pack
from lens.core.lift._remat import checkpoint as checkpoint
from lens.core.lift._remat import remat as remat
from lens.core.lift._scan import scan as scan
from lens.core.lift._util import broadcast as broadcast
from lens.core.lift._vmap import vmap as vmap
