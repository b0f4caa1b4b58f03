"""lens.core's names for the frozen-dict helpers.

They live in :mod:`lens._frozen_dict`, below both ``lens.core`` and ``lens.typing``
(``lens.typing.FrozenVariableDict`` needs ``FrozenDict`` and ``lens.core`` needs
``lens.typing``), so that ``import lens.typing`` works as the first import of a
process.
"""

from lens._frozen_dict import FrozenDict as FrozenDict
from lens._frozen_dict import FrozenKeysView as FrozenKeysView
from lens._frozen_dict import FrozenValuesView as FrozenValuesView
from lens._frozen_dict import copy as copy
from lens._frozen_dict import freeze as freeze
from lens._frozen_dict import pop as pop
from lens._frozen_dict import pretty_repr as pretty_repr
from lens._frozen_dict import unfreeze as unfreeze
