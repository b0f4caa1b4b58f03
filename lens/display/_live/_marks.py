"""What every live picture draws the same way: colours, boxes, tick labels.

Inline styles only (see ``_html``). Tick labels are absolutely placed in their
axis box, in percent, so a chart fits any width; a label is centred on its place
without ``transform`` (the sanitizer drops it): an inline block as wide as the
label, pulled back by half its width.
"""

from __future__ import annotations

from lens.display._base import e

BAD = "#d32f2f"
MUTED = "opacity:.72"
BOX = "border:1px solid rgba(128,128,128,.45)"
GRID = "rgba(128,128,128,.22)"
CHAR_PX = 7.0
"""Width of a tick label's character (11px monospace, with room to spare)."""


def centred_tick(percent: float, text: str) -> str:
    """A tick label centred ``percent`` along a horizontal axis box."""
    w = len(text) * CHAR_PX
    return (
        f"<span class='lens-live-tick' style='position:absolute;left:{percent:.2f}%;"
        f"top:0;white-space:nowrap'><span style='display:inline-block;"
        f"width:{w:.0f}px;margin-left:{-w / 2:.0f}px;text-align:center'>{e(text)}"
        "</span></span>"
    )


def step_row(gutter: int, ticks: str, cls: str = "lens-live-xaxis") -> str:
    """The row under a plot: ``step`` below the left gutter, then the ticks."""
    return (
        f"<div style='display:flex;font-size:11px;{MUTED}'>"
        f"<div style='flex:none;width:{gutter}px;box-sizing:border-box;"
        "padding-right:6px;text-align:right'>step</div>"
        f"<div class='{cls}' style='position:relative;flex:1 1 auto;"
        f"min-width:0;height:15px'>{ticks}</div></div>"
    )


def gutter_px(labels: list[str], least: int = 4) -> int:
    """The left gutter's width: the longest label (at least ``least`` characters,
    room for ``step``) and a margin."""
    return round(max(least, *(len(t) for t in labels)) * CHAR_PX + 8)
