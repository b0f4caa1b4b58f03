"""Plain words for the technical terms left in display captions, shown on hover.

Each caption that names a term (``carried step to step``, ``split along axis 0``,
``rms``, ``rel``, ``sharded``) gets the term wrapped in a ``<span title=...>`` with a
dotted underline: a ``title`` attribute survives JupyterLab's sanitizer for untrusted
outputs, nbconvert and GitHub, and needs no script. The same words are the glossary
of docs/displays.md (a test keeps the two alike). A term is explained where it
first appears in an output (:class:`Gloss` remembers which it has explained); the
text forms stay as they are.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lens.display._base import e


class Term(NamedTuple):
    """A term as the glossary names it, the pattern that finds it in a caption,
    and what it means in plain words (the hover text)."""

    name: str
    pattern: str
    means: str


# Where two patterns match at the same place, the earlier term wins: the longer
# phrases ("carry from the last step") come before the words they start with.
TERMS: tuple[Term, ...] = (
    Term(
        "outer value → inner value",
        r"outer value → inner value",
        "outer: the variable as stored outside the transform; inner: what the "
        "transformed function sees, one slice of it where the transform maps",
    ),
    Term(
        "carry from the last step",
        r"carry from the last step",
        "the scan returns the carry that its last step returned",
    ),
    Term(
        "carried step to step",
        r"carried step to step|\bcarried\b|\bcarry\b(?=: in → out)|(?<=: )carry\b",
        "a scan's running value (its carry): what one step returns goes into the "
        "next step; it is not split",
    ),
    Term(
        "split along axis n",
        r"split along axis \d+|split by \([^)]*\)",
        "each slice (a step of a scan, a member of a vmap) gets one index along "
        "this axis of the argument",
    ),
    Term(
        "not split (broadcast)",
        r"not split \(broadcast\)|not stacked \(broadcast\)|\bbroadcast\b",
        "not split: every slice gets the whole value, the same for all of them",
    ),
    Term(
        "not split (keyword argument)",
        r"not split \(keyword argument\)",
        "keyword arguments go whole to every slice",
    ),
    Term(
        "nothing to split",
        r"nothing to split \(no arrays\)",
        "the argument holds no arrays (None, an empty tuple): there is nothing to "
        "map over",
    ),
    Term(
        "stacked along axis n",
        r"stacked along axis \d+|stacked by \([^)]*\)",
        "each slice's result becomes one entry along this new axis of the output "
        "(one per step or member)",
    ),
    Term(
        "axis_name",
        r"\baxis_name\b",
        "a name for the mapped axis, for collectives inside the function: "
        "jax.lax.psum(x, 'batch') sums over the slices",
    ),
    Term(
        "partition name",
        r"partition name",
        "the name that boxed variables (nn.Partitioned) give their new stacked "
        "axis; sharding rules map it onto a mesh axis",
    ),
    Term(
        "vmap axis / scan axis",
        r"(?:vmap|scan) axis \d+, (?:size|length) \d+",
        "the variable's axis that the transform slices: inside, each slice sees "
        "one index of it, without that axis",
    ),
    Term(
        "lifted",
        r"\blifted\b",
        "moved by the transform: taken from the module's scope outside, passed "
        "into the transformed function, and stored back after",
    ),
    Term(
        "writes the variables back",
        r"writes the variables back|written back|commits back",
        "after the call, the variables the transform created or changed are "
        "stored in this scope outside it",
    ),
    Term(
        "flow through",
        r"flows? through|passed through|passed in whole",
        "go in and come back whole, unchanged in shape: the transform does not "
        "split them (jit, remat)",
    ),
    Term(
        "split into n keys",
        r"split into \d+ keys",
        "each slice gets its own random key, so random numbers (init, dropout) "
        "differ from slice to slice",
    ),
    Term(
        "shared (the same key inside)",
        r"shared \(the same key inside\)",
        "every slice gets the same random key, so it draws the same random numbers",
    ),
    Term(
        "slices (axis 0)",
        r"\bslices\b(?= \d+\.\.\d+ \(axis 0\))|change per slice|rms per slice",
        "the entries along axis 0: the layers of a scanned stack, or the members "
        "of a vmapped ensemble",
    ),
    Term(
        "RMS",
        r"\b(?:rms|RMS)\b",
        "root mean square, sqrt(mean(x²)): the typical size of the values, "
        "comparable between arrays of any size",
    ),
    Term(
        "stands out",
        r"stands out",
        "slices whose RMS is more than 4 times the median of all slices, or not "
        "finite (NaN, inf)",
    ),
    Term(
        "max|d|",
        r"max\|d\|",
        "the largest change of any single value: the maximum of abs(after - before)",
    ),
    Term(
        "rel",
        r"\brel\b",
        "relative change: the norm of the change over the norm of the old "
        "values (0.1 is a 10% change)",
    ),
    Term(
        "was all 0",
        r"was all 0",
        "the old values were all zero (a bias at init): no relative change to give",
    ),
    Term(
        "rng streams moved on",
        r"rng streams moved on \(not counted\)",
        "lens.nnx's random streams count their draws: a counter that moved on is "
        "bookkeeping, not a change to the model",
    ),
    Term(
        "sharded",
        r"\bsharded\b|\bsharding\b",
        "laid out over several devices: P(...) names, per array axis, the mesh "
        "axis it is split over (None: not split); [0:8] d0,4 means entries 0 to 7 "
        "on devices 0 and 4",
    ),
    Term(
        "replicated",
        r"\breplicated\b|\bwhole(?= d\d)",
        "every one of these devices holds a full copy",
    ),
    Term(
        "mesh",
        r"\bmesh\b",
        "the devices arranged in a grid with named axes (2x4: 2 by 4 devices)",
    ),
    Term(
        "log scale",
        r"log scale|log colour",
        "logarithmic: equal distances (or colour steps) are equal ratios, so 0.01 "
        "to 0.1 looks as big as 0.1 to 1",
    ),
    Term(
        "relative to its own median",
        r"relative to its own median",
        "each row is coloured by its value over its own median: a change within "
        "a row shows even where rows differ in size",
    ),
    Term(
        "mutable",
        r"\bmutable\b",
        "the collections this module may change while it runs (apply's "
        "mutable=...); the others are read-only",
    ),
)

_STYLE = "border-bottom:1px dotted rgba(128,128,128,.9);cursor:help"
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

    def __call__(self, text: str) -> str:
        out = []
        at = 0
        for m in _FIND.finditer(text):
            term = TERMS[int(str(m.lastgroup)[1:])]
            if term.name in self.seen:
                continue
            self.seen.add(term.name)
            out.append(e(text[at : m.start()]))
            out.append(term_html(m.group(0), term.means))
            at = m.end()
        out.append(e(text[at:]))
        return "".join(out)


def gloss(text: str) -> str:
    """``text`` as HTML, every term in it explained on hover (see :class:`Gloss`)."""
    return Gloss()(text)
