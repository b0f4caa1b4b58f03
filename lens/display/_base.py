"""The common shape of every lens display: text, rich, script-free HTML, treescope."""

from __future__ import annotations

import html as _html
import re
from typing import Any

from lens.display._leaf import printable
from lens.display._safe import safe

# Every output carries its own look as inline styles: JupyterLab's sanitizer drops
# <style> elements (and SVG) from untrusted notebooks, and a global stylesheet leaks
# into every other output on the page. Inline styles survive the sanitizer, and are
# the same trusted or not. They use no CSS variables (the sanitizer drops those)
# and no fixed text colours: text keeps the theme's colour (muted by opacity), and
# accents are translucent backgrounds, so light and dark themes both read at
# WCAG AA contrast.
FONT = "ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"
MUTED = "opacity:.72"
ROOT_STYLE = (
    f"font-family:{FONT};font-size:12px;line-height:1.4;text-align:left;"
    "max-width:100%;overflow-x:auto;padding-bottom:2px"
)
TAG_STYLE = {
    # JupyterLab's table CSS right-aligns cells, zebra-stripes rows, centres and
    # fixes the table layout: every one of those is undone here.
    "table": "border-collapse:collapse;border:none;margin:2px 0 4px 16px;"
    "table-layout:auto;font-size:1em;line-height:1.4;width:auto",
    "tr": "background:none;border:none",
    "td": "padding:0 10px 0 0;text-align:left;white-space:nowrap;border:none",
    "th": "padding:0 10px 0 0;text-align:left;white-space:nowrap;border:none;"
    "font-weight:normal",
    "summary": "cursor:pointer",
    "details": "margin-left:12px",
}
CLASS_STYLE = {
    "m": MUTED,
    "c": "font-weight:bold",
    "hint": f"{MUTED};font-style:italic",
    "ax": "background:rgba(42,122,176,.18);border-radius:2px;padding:0 2px",
    "sh": "background:rgba(178,106,0,.18);border-radius:2px;padding:0 2px",
    # a module's class (an nnx model's Conv, Linear) after its path
    "ty": "background:rgba(106,27,154,.14);border-radius:2px;padding:0 2px",
    "add": "background:rgba(46,125,50,.18)",
    "del": "background:rgba(198,40,40,.18)",
    "top": "margin-left:0;overflow-wrap:break-word",
    "flat": "margin-left:28px",
    # a variables display (_variables.py): one row per variable that wraps onto a
    # second line in a narrow cell instead of clipping, its cells in fixed tracks
    "vars": "margin:2px 0 4px 16px",
    "var": "display:flex;flex-wrap:wrap;column-gap:.8em",
    "cols": "display:grid;column-gap:.8em",
    "under": "flex-basis:100%;min-width:0",
}
_TAG = re.compile(r"<([a-z][a-z0-9]*)((?:\s[^<>]*)?)>")
_CLASS = re.compile(r"""\sclass=(?:'([^']*)'|"([^"]*)"|([^\s'">]+))""")
_STYLE = re.compile(r"""\sstyle=(?:'([^']*)'|"([^"]*)")""")


def inline_styles(body: str) -> str:
    """``body`` with each element's look (``TAG_STYLE``, ``CLASS_STYLE``) inline.

    Only lens's own markup is rewritten: user strings are escaped (``e``), so they
    hold no ``<``. An element's own ``style`` comes last and wins.
    """

    def one(m: re.Match[str]) -> str:
        tag, attrs = m.group(1), m.group(2)
        parts = [TAG_STYLE.get(tag, "")]
        c = _CLASS.search(attrs)
        if c:
            parts += [
                CLASS_STYLE.get(k, "")
                for k in next(g for g in c.groups() if g is not None).split()
            ]
        if not any(parts):
            return m.group(0)
        own = _STYLE.search(attrs)
        if own:
            parts.append(next(g for g in own.groups() if g is not None))
            attrs = attrs[: own.start()] + attrs[own.end() :]
        style = ";".join(p.strip(";") for p in parts if p)
        if not style:
            return m.group(0)
        return f'<{tag}{attrs} style="{style}">'

    return _TAG.sub(one, body)


def wrap(body: str) -> str:
    """A view's complete HTML: its body in the root ``div``, every style inline."""
    return f'<div class="lens" style="{ROOT_STYLE}">{inline_styles(body)}</div>'


def e(s: Any) -> str:
    """HTML-escapes any value (user strings are never trusted).

    Control and invisible formatting characters (NUL, a right-to-left override) are
    shown escaped too, as in the text forms.
    """
    return _html.escape(printable(s), quote=True)


class View:
    """Base class of lens displays; subclasses implement ``text``, ``html_body`` and ``rich``."""

    def text(self) -> str:  # pragma: no cover - abstract
        """The plain-text form."""
        raise NotImplementedError

    def html_body(self) -> str:  # pragma: no cover - abstract
        """The HTML form (without the stylesheet)."""
        raise NotImplementedError

    def rich(self) -> Any:
        """The ``rich`` renderable (default: the text)."""
        from rich.text import Text

        return Text(self.text())

    def treescope_attributes(self) -> dict[str, Any]:
        """Attributes shown by treescope (default: none)."""
        return {}

    # --- protocol methods, all guarded -----------------------------------------

    def html(self) -> str:
        """The complete, script-free HTML form."""
        return _html_of(self)

    def __repr__(self) -> str:
        return _text_of(self)

    def _repr_html_(self) -> str:
        return _html_of(self)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        return _bundle_of(self)

    def __rich__(self) -> Any:
        return _rich_of(self)

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from treescope import repr_lib

        return repr_lib.render_object_constructor(
            object_type=type(self),
            attributes=self.treescope_attributes(),
            path=path,
            subtree_renderer=subtree_renderer,
        )


@safe("text")
def _text_of(view: View) -> str:
    return view.text()


@safe("html")
def _html_of(view: View) -> str:
    return wrap(view.html_body())


@safe("bundle")
def _bundle_of(view: View) -> dict[str, Any]:
    return {
        "text/plain": view.text(),
        "text/html": wrap(view.html_body()),
    }


@safe("text")
def _rich_of(view: View) -> Any:
    return view.rich()
