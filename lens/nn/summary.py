"""Summaries of module calls (``lens.nn.summary``, like ``flax.linen.summary``)."""

from lens.nn._summary import Row as Row
from lens.nn._summary import Table as Table
from lens.nn._summary import _get_module_table as _get_module_table
from lens.nn._summary import tabulate as tabulate
from lens.nn._summary_render import _ObjectRepresentation as _ObjectRepresentation
