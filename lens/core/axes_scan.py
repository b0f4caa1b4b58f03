"""``jax.lax.scan`` with ``in_axes``/``out_axes`` (``lens.core.axes_scan``).

Like ``flax.core.axes_scan``: the loop body is
``fn(broadcast_in, carry, *args) -> (broadcast_out, carry, ys)``. Arguments are
scanned along their ``in_axes`` (``broadcast`` passes one whole to every
iteration); ``ys`` are stacked along ``out_axes``. ``broadcast_out`` is
loop-invariant: it is computed once, before the loop, and every iteration gets
it as its ``broadcast_in`` (the place to create values the loop then reads).

The loop lives in ``lens/core/lift/_axes_scan.py``, where the lifted
:func:`lens.core.lift.scan` runs on the same stages.

Example:
    >>> import jax.numpy as jnp
    >>> def body(b, c, x):
    ...     return b + 2, c + 1, 2 * x
    >>> loop = scan(body, in_axes=0, out_axes=0)
    >>> b, c, ys = loop(1, 2, jnp.arange(3))
    >>> int(b), int(c), ys.tolist()
    (3, 5, [0, 2, 4])
"""

from lens.core.lift._axes_scan import ScanAxis as ScanAxis
from lens.core.lift._axes_scan import build_shaped_array as build_shaped_array
from lens.core.lift._axes_scan import scan as scan
from lens.core.lift._util import broadcast as broadcast

__all__ = ["ScanAxis", "broadcast", "build_shaped_array", "scan"]
