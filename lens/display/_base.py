"""The common shape of every lens display: text, rich, script-free HTML, treescope."""

from __future__ import annotations

import html as _html
from typing import Any

from lens.display._leaf import printable
from lens.display._safe import safe

CSS = """<style>
.lens{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;line-height:1.4}
.lens summary{cursor:pointer}.lens table{border-collapse:collapse;margin:2px 0 4px 16px}
.lens td,.lens th{padding:0 8px 0 0;text-align:left;white-space:nowrap}
.lens .m{color:#777}.lens .c{font-weight:bold}.lens .ax{color:#2a7ab0}.lens .sh{color:#8a5a00}
.lens .hint{color:#777;font-style:italic}.lens .add{color:#2e7d32}.lens .del{color:#c62828}
.lens details{margin-left:12px}.lens>details{margin-left:0}
</style>"""


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
    return f'<div class="lens">{CSS}{view.html_body()}</div>'


@safe("bundle")
def _bundle_of(view: View) -> dict[str, Any]:
    return {
        "text/plain": view.text(),
        "text/html": f'<div class="lens">{CSS}{view.html_body()}</div>',
    }


@safe("text")
def _rich_of(view: View) -> Any:
    return view.rich()
