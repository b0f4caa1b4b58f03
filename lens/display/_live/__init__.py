"""A live view of a training loop (``lens.display.live``): curves, per-layer
statistics and progress that update in place while the loop runs.

Design and choices: docs/design/live.md.
"""

from __future__ import annotations

from lens.display._live._frame import Frame as Frame
from lens.display._live._live import Live as Live
from lens.display._live._sinks import Sink as Sink
from lens.display._live._view import FrameView as FrameView


def live(
    title: str = "training",
    *,
    total: int | None = None,
    sink: str | Sink = "auto",
    per_second: float = 4.0,
    layer_every: int | None = None,
    smooth: float = 0.0,
    recompiles: bool = True,
) -> Live:
    """A live view a training loop reports to (curves, layers, progress, compiles).

    In JupyterLab (any IPython kernel) one output updates in place, at most
    ``per_second`` times a second, and the final picture stays in the saved
    notebook; in a terminal it is a rich progress region, in a log plain lines.
    Values are fetched on a background thread: the loop never waits for the device.

    Args:
      title: what the view is called (shown first).
      total: the number of steps, for the progress bar and ETA (optional).
      sink: ``'auto'`` (by where the code runs), ``'notebook'``, ``'rich'``,
        ``'text'``, ``'none'``, or a :class:`Sink`.
      per_second: redraws (and layer samples) per second, at most (default 4).
      layer_every: sample layers every that many :meth:`Live.layers` calls
        instead of by time (a stored notebook then draws the same columns on
        every run).
      smooth: draw each dense curve smoothed by a moving average of this
        weight (TensorBoard's: 0.6 a little, 0.9 a lot), its raw values faint
        behind it; 0 (the default) draws the values only.
      recompiles: explain each retrace of a jitted function inside the ``with``
        block (lens.recompiles) and show the latest as rows under the progress
        line, the fix on hover (default on: it costs nothing on a cached step).

    Returns:
      A :class:`Live`; use it in a ``with`` block or call :meth:`Live.close`.

    Example:
        >>> import lens
        >>> with lens.display.live("fit", sink="none") as live:
        ...     for step in range(4):
        ...         live.log(step, loss=2.0 ** -step)
        >>> print(live.frame().series["loss"]["train"][1])
        [1.    0.5   0.25  0.125]
    """
    return Live(
        title,
        total=total,
        sink=sink,
        per_second=per_second,
        layer_every=layer_every,
        smooth=smooth,
        recompiles=recompiles,
    )
