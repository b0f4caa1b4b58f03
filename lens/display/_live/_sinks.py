"""Where a live view draws: a notebook output, a terminal, a log, or nowhere.

``pick`` chooses by where the code runs: an IPython kernel (JupyterLab, VS Code,
Colab) gets ``NotebookSink``, a terminal ``RichSink``, anything else (a log file, a
CI job) ``TextSink``. IPython and rich are imported only here, when a view starts.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from lens.display._live._frame import Frame, progress_line, text
from lens.display._live._view import FrameView


class Sink:
    """Receives frames: ``update`` while running (from the drawer thread), then
    ``close`` once with the final frame (from the thread that closes the view)."""

    def update(self, frame: Frame) -> None:
        """Shows a frame in place of the last one."""

    def close(self, frame: Frame) -> None:
        """Shows the final frame."""


class NotebookSink(Sink):
    """One output updated in place (``display_id``), then the final picture.

    While running, the output holding ``display_id`` is replaced by each new frame
    (``update_display``: the same renderer redraws, so nothing flickers and the
    output never grows). On close that output is emptied and the final frame is
    shown once, as a plain output: a saved notebook (nbval, GitHub, nbconvert)
    holds the final picture, and the emptied output is the same on every run.
    """

    EMPTY = {"text/plain": ""}

    def __init__(self) -> None:
        from IPython.display import display

        self._display = display
        self.handle = display(self.EMPTY, raw=True, display_id=True)

    def update(self, frame: Frame) -> None:
        """Redraws the live output."""
        if self.handle is not None:
            self.handle.update(bundle(frame), raw=True)

    def close(self, frame: Frame) -> None:
        """Empties the live output and shows the final frame below it."""
        if self.handle is not None:
            self.handle.update(self.EMPTY, raw=True)
        self._display(FrameView(frame))


def bundle(frame: Frame) -> dict[str, str]:
    """The MIME bundle of a frame (text and script-free HTML)."""
    return FrameView(frame)._repr_mimebundle_()


class RichSink(Sink):
    """A rich ``Live`` region in a terminal: a progress bar over the text form."""

    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self.live = Live(
            console=Console(file=stream or sys.stdout),
            auto_refresh=False,
            transient=False,
        )
        self.live.start()

    def update(self, frame: Frame) -> None:
        """Redraws the region."""
        self.live.update(FrameView(frame).rich(), refresh=True)

    def close(self, frame: Frame) -> None:
        """Draws the final frame and leaves it on screen."""
        self.live.update(FrameView(frame).rich(), refresh=True)
        self.live.stop()


class TextSink(Sink):
    """Plain lines for a log: progress at most every ``every`` seconds, then the
    whole text form once at the end."""

    def __init__(self, stream: TextIO | None = None, every: float = 10.0) -> None:
        self.stream = stream
        self.every = every
        self.last = -float("inf")

    def _write(self, s: str) -> None:
        stream = self.stream or sys.stdout
        stream.write(s + "\n")
        stream.flush()

    def update(self, frame: Frame) -> None:
        """Writes the progress line (and any compile in flight), throttled."""
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        line = progress_line(frame)
        for name, kind, t in frame.busy:
            line += f" · {kind} {name}: {t:.0f} s"
        for metric, splits in frame.series.items():
            for split, (_, values) in splits.items():
                if len(values):
                    name = metric if split == "train" else f"{metric} ({split})"
                    line += f" · {name} {values[-1]:.4g}"
        self._write(line)

    def close(self, frame: Frame) -> None:
        """Writes the whole text form."""
        self._write(text(frame))


class NullSink(Sink):
    """Draws nothing (the view still records; ``Live.frame()`` reads it)."""


def in_notebook() -> bool:
    """Whether this runs in an IPython kernel (without importing IPython)."""
    if "IPython" not in sys.modules:
        return False
    try:
        shell = sys.modules["IPython"].get_ipython()
    except Exception:  # noqa: BLE001
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def pick(kind: Any) -> Sink:
    """The sink for ``kind``: ``'auto'``, ``'notebook'``, ``'rich'``, ``'text'``,
    ``'none'`` or a ``Sink``."""
    if isinstance(kind, Sink):
        return kind
    if kind == "auto":
        if in_notebook():
            kind = "notebook"
        else:
            kind = "rich" if _isatty(sys.stdout) else "text"
    makers = {
        "notebook": NotebookSink,
        "rich": RichSink,
        "text": TextSink,
        "none": NullSink,
    }
    if kind not in makers:
        raise ValueError(
            f"lens.display.live: sink={kind!r} is not one of 'auto', 'notebook', "
            "'rich', 'text', 'none' or a Sink instance."
        )
    return makers[kind]()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # noqa: BLE001
        return False
