"""Lifted transforms of modules (``lens.nn.transforms``, like ``flax.linen.transforms``)."""

from lens.nn._lifting import InstancePlaceholder as InstancePlaceholder
from lens.nn._lifting import VariablePlaceholder as VariablePlaceholder
from lens.nn._lifting import clean_clone as clean_clone
from lens.nn._lifting import decorator_lift_transform as decorator_lift_transform
from lens.nn._lifting import (
    decorator_lift_transform_cached as decorator_lift_transform_cached,
)
from lens.nn._lifting import fork_rngs as fork_rngs
from lens.nn._lifting import get_module_scopes as get_module_scopes
from lens.nn._lifting import lift_direct_transform as lift_direct_transform
from lens.nn._lifting import lift_transform as lift_transform
from lens.nn._lifting import lift_transform_cached as lift_transform_cached
from lens.nn._lifting import (
    module_class_lift_transform as module_class_lift_transform,
)
from lens.nn._lifting import (
    module_class_lift_transform_cached as module_class_lift_transform_cached,
)
from lens.nn._lifting import set_module_scopes as set_module_scopes
from lens.nn._module_hash import _HashableProxy as _HashableProxy
from lens.nn._transforms import Target as Target
from lens.nn._transforms import TransformTarget as TransformTarget
from lens.nn._transforms import add_metadata_axis as add_metadata_axis
from lens.nn._transforms import checkpoint as checkpoint
from lens.nn._transforms import cond as cond
from lens.nn._transforms import custom_jvp as custom_jvp
from lens.nn._transforms import custom_vjp as custom_vjp
from lens.nn._transforms import fold_rngs as fold_rngs
from lens.nn._transforms import grad as grad
from lens.nn._transforms import jit as jit
from lens.nn._transforms import jvp as jvp
from lens.nn._transforms import map_variables as map_variables
from lens.nn._transforms import named_call as named_call
from lens.nn._transforms import remat as remat
from lens.nn._transforms import remat_scan as remat_scan
from lens.nn._transforms import scan as scan
from lens.nn._transforms import switch as switch
from lens.nn._transforms import value_and_grad as value_and_grad
from lens.nn._transforms import vjp as vjp
from lens.nn._transforms import vmap as vmap
from lens.nn._transforms import while_loop as while_loop
