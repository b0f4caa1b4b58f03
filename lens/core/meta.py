"""Axis metadata boxes (``lens.core.meta``, like ``flax.core.meta``)."""

from lens.core._meta import AxisMetadata as AxisMetadata
from lens.core._meta import TAxisMetadata as TAxisMetadata
from lens.core._meta import add_axis as add_axis
from lens.core._meta import get_partition_spec as get_partition_spec
from lens.core._meta import is_axis_metadata as is_axis_metadata
from lens.core._meta import map_axis_meta as map_axis_meta
from lens.core._meta import remove_axis as remove_axis
from lens.core._meta import replace_boxed as replace_boxed
from lens.core._meta import unbox as unbox
from lens.core._partitioning import PARTITION_NAME as PARTITION_NAME
from lens.core._partitioning import Partitioned as Partitioned
from lens.core._partitioning import get_sharding as get_sharding
from lens.core._partitioning import with_partitioning as with_partitioning
