"""``FrozenDict`` (``lens.core.frozen_dict``, like ``flax.core.frozen_dict``)."""

from lens.core._freeze import FrozenDict as FrozenDict
from lens.core._freeze import FrozenKeysView as FrozenKeysView
from lens.core._freeze import FrozenValuesView as FrozenValuesView
from lens.core._freeze import copy as copy
from lens.core._freeze import freeze as freeze
from lens.core._freeze import pop as pop
from lens.core._freeze import pretty_repr as pretty_repr
from lens.core._freeze import unfreeze as unfreeze
