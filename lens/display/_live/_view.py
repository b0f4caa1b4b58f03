"""``FrameView``: a frame in every lens display form (text, script-free HTML, rich),
each guarded like every lens view (``_safe.safe``)."""

from __future__ import annotations

from typing import Any

from lens.display._base import ROOT_STYLE, View
from lens.display._live._frame import Frame, text
from lens.display._live._html import body
from lens.display._safe import safe


class FrameView(View):
    """A frame in every lens display form (the final picture of a live view)."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    def text(self) -> str:
        """Progress, one line per curve, the layers' latest RMS."""
        return text(self.frame)

    def html_body(self) -> str:
        """Curves, a layer-by-step heatmap per stack, progress (inline styles)."""
        return body(self.frame)

    def html(self) -> str:
        """The complete, script-free HTML form."""
        return _html_of(self)

    def _repr_html_(self) -> str:
        return _html_of(self)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        return _bundle_of(self)

    def rich(self) -> Any:
        """The text form over a progress bar (for a terminal)."""
        from rich.console import Group as RichGroup
        from rich.progress_bar import ProgressBar
        from rich.text import Text

        f = self.frame
        parts: list[Any] = [Text(self.text())]
        if f.total:  # last: rich's bar ends without a line break
            parts.append(ProgressBar(total=f.total, completed=min(f.done, f.total)))
        return RichGroup(*parts)


# A frame's HTML carries every style inline already (no lens classes): the root div
# is added directly instead of by ``_base.wrap``, whose pass over every tag would
# cost the drawer thread more than drawing (a frame holds a few thousand elements).
@safe("html")
def _html_of(view: FrameView) -> str:
    return f'<div class="lens" style="{ROOT_STYLE}">{view.html_body()}</div>'


@safe("bundle")
def _bundle_of(view: FrameView) -> dict[str, Any]:
    return {"text/plain": view.text(), "text/html": _html_of(view)}
