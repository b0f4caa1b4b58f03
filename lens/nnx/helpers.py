"""flax.nnx.helpers's path: ``List``, ``Dict``, ``Sequential`` and ``TrainState``.
The code is in lens/nnx/_objects/containers.py; this module declares what flax's
path offers, nothing more.
"""

from __future__ import annotations

from lens.nnx._objects.containers import A as A
from lens.nnx._objects.containers import ApplyCaller as ApplyCaller
from lens.nnx._objects.containers import Dict as Dict
from lens.nnx._objects.containers import K as K
from lens.nnx._objects.containers import List as List
from lens.nnx._objects.containers import M as M
from lens.nnx._objects.containers import M_co as M_co
from lens.nnx._objects.containers import Module as Module
from lens.nnx._objects.containers import ModuleDefApply as ModuleDefApply
from lens.nnx._objects.containers import Sequential as Sequential
from lens.nnx._objects.containers import State as State
from lens.nnx._objects.containers import TrainState as TrainState
from lens.nnx._objects.containers import V as V
from lens.nnx._objects.containers import has_keyword_arg as has_keyword_arg
