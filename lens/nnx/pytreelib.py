"""flax.nnx.pytreelib's path: ``Object`` (flax's ``Pytree``), its metaclass, the
data/static annotations and checks. The code is in lens/nnx/_objects/object.py; this
module declares what flax's path offers, nothing more.
"""

from __future__ import annotations

from lens.nnx._objects.object import BUILDING_DOCS as BUILDING_DOCS
from lens.nnx._objects.object import DATA_REGISTRY as DATA_REGISTRY
from lens.nnx._objects.object import OBJECT_CONTEXT as OBJECT_CONTEXT
from lens.nnx._objects.object import A as A
from lens.nnx._objects.object import ArrayRepr as ArrayRepr
from lens.nnx._objects.object import AttributeStatus as AttributeStatus
from lens.nnx._objects.object import Data as Data
from lens.nnx._objects.object import DataAnnotation as DataAnnotation
from lens.nnx._objects.object import MutableArrayRepr as MutableArrayRepr
from lens.nnx._objects.object import Object as Object
from lens.nnx._objects.object import ObjectContext as ObjectContext
from lens.nnx._objects.object import ObjectMeta as ObjectMeta
from lens.nnx._objects.object import Pytree as Pytree
from lens.nnx._objects.object import PytreeMeta as PytreeMeta
from lens.nnx._objects.object import PytreeState as PytreeState
from lens.nnx._objects.object import Static as Static
from lens.nnx._objects.object import StaticAnnotation as StaticAnnotation
from lens.nnx._objects.object import Variable as Variable
from lens.nnx._objects.object import VariableRepr as VariableRepr
from lens.nnx._objects.object import attribute_is_data as attribute_is_data
from lens.nnx._objects.object import check_pytree as check_pytree
from lens.nnx._objects.object import check_trace as check_trace
from lens.nnx._objects.object import data as data
from lens.nnx._objects.object import dataclass as dataclass
from lens.nnx._objects.object import declared as declared
from lens.nnx._objects.object import has_data as has_data
from lens.nnx._objects.object import is_data as is_data
from lens.nnx._objects.object import node_items as node_items
from lens.nnx._objects.object import private_attributes as private_attributes
from lens.nnx._objects.object import register_data_type as register_data_type
from lens.nnx._objects.object import static as static
from lens.nnx._objects.object import unmark as unmark
