"""Plain words for the technical terms left in display captions, shown on hover.

Each caption that names a term (``carried step to step``, ``split along axis 0``,
``rms``, ``rel``, ``sharded``) gets the term wrapped in a ``<span title=...>`` with a
dotted underline: a ``title`` attribute survives JupyterLab's sanitizer for untrusted
outputs, nbconvert and GitHub, and needs no script. The terms, their patterns and
words are in glossary.json, which the JupyterLab extension ships a copy of (its
pack picture explains the same terms the same way); they are the glossary of
docs/displays.md too (tests keep all three alike). A term is explained where it
first appears in an output (:class:`Gloss` remembers which it has explained); the
text forms stay as they are.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import NamedTuple

from lens.display._base import e


class Term(NamedTuple):
    """A term as the glossary names it, the pattern that finds it in a caption,
    and what it means in plain words (the hover text)."""

    name: str
    pattern: str
    means: str


# The terms live in glossary.json, one file for lens's static HTML and the JupyterLab
# extension (which ships a copy, extension/src/glossary.json; tests keep the two
# equal and check that both find the same terms in the same captions). Where two
# patterns match at the same place, the earlier term wins: the longer phrases
# ("carry from the last step") come before the words they start with.
_GLOSSARY = json.loads(
    resources.files("lens.display").joinpath("glossary.json").read_text("utf-8")
)
TERMS: tuple[Term, ...] = tuple(
    Term(t["name"], t["pattern"], t["means"]) for t in _GLOSSARY["terms"]
)

_STYLE: str = _GLOSSARY["style"]
_FIND = re.compile("|".join(f"(?P<t{i}>{t.pattern})" for i, t in enumerate(TERMS)))


def meaning(name: str) -> str:
    """The plain words for the term named ``name`` (as the glossary names it)."""
    return next(t.means for t in TERMS if t.name == name)


def term_html(text: str, means: str) -> str:
    """``text`` (escaped) with ``means`` as its hover text."""
    return f"<span title='{e(means)}' style='{_STYLE}'>{e(text)}</span>"


class Gloss:
    """Turns caption text into HTML with its terms explained on hover, each term
    once per output (call it on every caption of one view, in reading order)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def pieces(self, text: str) -> list[tuple[str, Term | None]]:
        """``text`` cut into pieces that join to it: each term said for the first
        time with its :class:`Term`, the rest with ``None`` (the extension's
        ``Gloss.pieces`` cuts a caption the same way)."""
        out: list[tuple[str, Term | None]] = []
        at = 0
        for m in _FIND.finditer(text):
            term = TERMS[int(str(m.lastgroup)[1:])]
            if term.name in self.seen:
                continue
            self.seen.add(term.name)
            if m.start() > at:
                out.append((text[at : m.start()], None))
            out.append((m.group(0), term))
            at = m.end()
        if at < len(text):
            out.append((text[at:], None))
        return out

    def __call__(self, text: str) -> str:
        return "".join(
            term_html(piece, term.means) if term else e(piece)
            for piece, term in self.pieces(text)
        )


def gloss(text: str) -> str:
    """``text`` as HTML, every term in it explained on hover (see :class:`Gloss`)."""
    return Gloss()(text)
