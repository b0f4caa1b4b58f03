"""``FrozenDict`` (``lens.core.frozen_dict``, like ``flax.core.frozen_dict``)."""

from lens._frozen_dict import FrozenDict as FrozenDict
from lens._frozen_dict import FrozenKeysView as FrozenKeysView
from lens._frozen_dict import FrozenValuesView as FrozenValuesView
from lens._frozen_dict import copy as copy
from lens._frozen_dict import freeze as freeze
from lens._frozen_dict import pop as pop
from lens._frozen_dict import pretty_repr as pretty_repr
from lens._frozen_dict import unfreeze as unfreeze
