"""Text reprs of Variables, States and Objects (flax.nnx's ``reprlib``).

A Variable's repr shows its value; inside an object's repr an array of more than one
element shows as its shape and dtype, as flax.nnx's do. Each node is written as

    Param( # 3 (12 B)
      value=Array([1., 1., 1.], dtype=float32)
    )

with a comment giving the number of elements and bytes it holds.

The layout is flax.nnx's protocol: a :class:`Representable` yields an
:class:`Object` (type, brackets, comment) and then one :class:`Attr` per
attribute from ``__nnx_repr__``; :func:`get_repr` writes them, coloured when
the terminal supports it (``str``) and plain for ``repr``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from lens.configurations import config


def bytes_repr(num_bytes: int) -> str:
    """``12 B``, ``4.1 KB``, ``1.2 MB``, ``3.0 GB``."""
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if num_bytes > scale:
            return f"{num_bytes / scale:,.1f} {unit}"
    return f"{num_bytes:,} B"


def size_and_bytes(value: Any) -> tuple[int, int]:
    """Elements and bytes of the arrays in ``value`` (a pytree)."""
    size = nbytes = 0
    for leaf in jax.tree.leaves(value):
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            n = int(np.prod(leaf.shape))
            size += n
            # a key array's dtype (key<fry>) is not numpy's: ask it for its size
            nbytes += n * int(getattr(leaf.dtype, "itemsize", 0) or 0)
    return size, nbytes


def size_comment(value: Any, prefix: str = "") -> str:
    """`` # 3 (12 B)`` for a value holding arrays, else ``""``."""
    size, nbytes = size_and_bytes(value)
    if not size:
        return ""
    return f" # {prefix}{size:,} ({bytes_repr(nbytes)})"


def indent(text: str, pad: str) -> str:
    """``text`` with every line after the first indented by ``pad``."""
    return text.replace("\n", "\n" + pad)


def node_repr(
    name: str, attributes: Iterable[tuple[str, str]], *, comment: str = ""
) -> str:
    """``Name( # comment`` then one ``key=value`` line per attribute, then ``)``."""
    rows = [f"  {k}={indent(v, '  ')}" for k, v in attributes]
    if not rows:
        return f"{name}()"
    return f"{name}({comment}\n" + ",\n".join(rows) + "\n)"


# -- flax.nnx's repr protocol -------------------------------------------------


def supports_color() -> bool:
    """Whether output can be coloured: an IPython session, or a terminal (a tty
    on a platform with ANSI colours)."""
    # A running IPython session has imported IPython: no need to import it here.
    ipython = sys.modules.get("IPython")
    in_ipython = ipython is not None and ipython.get_ipython() is not None
    ansi = sys.platform != "win32" or "ANSICON" in os.environ
    tty = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
    return (ansi and tty) or in_ipython


class Color(NamedTuple):
    """The escape code each part of a repr starts with (``END`` resets)."""

    TYPE: str
    ATTRIBUTE: str
    SEP: str
    PAREN: str
    COMMENT: str
    INT: str
    STRING: str
    FLOAT: str
    BOOL: str
    NONE: str
    END: str


NO_COLOR = Color(*[""] * len(Color._fields))


def _rgb(r: int, g: int, b: int) -> str:
    return f"\x1b[38;2;{r};{g};{b}m"


# The palette of VS Code's dark Python theme (the one flax.nnx uses).
_THEME = Color(
    TYPE=_rgb(79, 201, 177),
    ATTRIBUTE=_rgb(156, 220, 254),
    SEP=_rgb(212, 212, 212),
    PAREN=_rgb(255, 213, 3),
    COMMENT=_rgb(105, 105, 105),
    INT=_rgb(182, 207, 169),
    STRING=_rgb(207, 144, 120),
    FLOAT=_rgb(182, 207, 169),
    BOOL=_rgb(86, 156, 214),
    NONE=_rgb(86, 156, 214),
    END="\x1b[0m",
)

COLOR = _THEME if supports_color() else NO_COLOR


_CONTEXT_IDS = itertools.count()


class ReprContext:
    """The colours and nesting depth of the repr being written.

    Each attribute is a context variable: a repr written in one thread or task
    never sees another's colours or depth."""

    def __init__(self, current_color: Color = COLOR, depth: int = 0):
        n = next(_CONTEXT_IDS)
        self._color = contextvars.ContextVar(
            f"lens_repr_color_{n}", default=current_color
        )
        self._depth = contextvars.ContextVar(f"lens_repr_depth_{n}", default=depth)

    @property
    def current_color(self) -> Color:
        return self._color.get()

    @current_color.setter
    def current_color(self, value: Color) -> None:
        self._color.set(value)

    @property
    def depth(self) -> int:
        return self._depth.get()

    @depth.setter
    def depth(self, value: int) -> None:
        self._depth.set(value)

    def __repr__(self) -> str:
        return f"ReprContext(current_color={self.current_color!r}, depth={self.depth})"


REPR_CONTEXT = ReprContext()


def _join(open_: str, items: Iterable[str], close: str) -> str:
    c = REPR_CONTEXT.current_color
    return f"{c.PAREN}{open_}{c.END}{', '.join(items)}{c.PAREN}{close}{c.END}"


def colorized(x: Any, /) -> str:
    """``repr(x)`` coloured with the current colours (lists, tuples, dicts and
    sets element by element; a type by its name; a Representable by its repr)."""
    c = REPR_CONTEXT.current_color
    if isinstance(x, list):
        return _join("[", map(colorized, x), "]")
    if isinstance(x, tuple):
        if len(x) == 1:
            return _join("(", [colorized(x[0]) + ","], ")")
        return _join("(", map(colorized, x), ")")
    if isinstance(x, dict):
        items = (f"{c.STRING}{k!r}{c.END}: {colorized(v)}" for k, v in x.items())
        return _join("{", items, "}")
    if isinstance(x, set):
        return _join("{", map(colorized, x), "}")
    if isinstance(x, type):
        return f"{c.TYPE}{x.__name__}{c.END}"
    for kind, color in ((bool, c.BOOL), (int, c.INT), (float, c.FLOAT)):
        if isinstance(x, kind):
            return f"{color}{x}{c.END}"
    if isinstance(x, str):
        return f"{c.STRING}{x!r}{c.END}"
    if x is None:
        return f"{c.NONE}None{c.END}"
    if isinstance(x, Representable):
        return get_repr(x)
    return repr(x)


@dataclasses.dataclass
class Object:
    """How a :class:`Representable` opens and closes: the first item its
    ``__nnx_repr__`` yields."""

    type: str | type
    start: str = "("
    end: str = ")"
    kv_sep: str = "="
    indent: str = "  "
    empty_repr: str = ""
    comment: str = ""
    same_line: bool = False

    @property
    def elem_sep(self) -> str:
        return ", " if self.same_line else ",\n"


@dataclasses.dataclass
class Attr:
    """One ``key=value`` of a :class:`Representable` (``value`` is written with
    :func:`colorized` unless ``use_raw_value``; ``key`` is coloured unless
    ``use_raw_key``)."""

    key: str
    value: str | Any
    start: str = ""
    end: str = ""
    use_raw_value: bool = False
    use_raw_key: bool = False


class Representable:
    """An object whose repr is written from ``__nnx_repr__``: a generator of an
    :class:`Object` and then :class:`Attr` items. ``repr`` is plain, ``str``
    coloured when the terminal supports it."""

    __slots__ = ()

    def __nnx_repr__(self) -> Iterator[Object | Attr]:
        raise NotImplementedError(
            f"{type(self).__name__} is a Representable without __nnx_repr__: define "
            "it as a generator yielding reprlib.Object(...) then reprlib.Attr(...)s."
        )

    def __repr__(self) -> str:
        token = REPR_CONTEXT._color.set(NO_COLOR)
        try:
            return get_repr(self)
        finally:
            REPR_CONTEXT._color.reset(token)

    def __str__(self) -> str:
        return get_repr(self)


def _attr_repr(elem: Any, config_: Object, c: Color) -> str:
    if not isinstance(elem, Attr):
        raise TypeError(
            f"Item must be Elem, got {type(elem).__name__}: __nnx_repr__ yields one "
            "reprlib.Object and then reprlib.Attr items."
        )
    value = elem.value if elem.use_raw_value else colorized(elem.value)
    value = value.replace("\n", "\n" + config_.indent)
    key = elem.key if elem.use_raw_key else f"{c.ATTRIBUTE}{elem.key}{c.END}"
    pad = "" if config_.same_line else config_.indent
    sep = f"{c.SEP}{config_.kv_sep}{c.END}"
    return f"{pad}{elem.start}{key}{sep}{value}{elem.end}"


def get_repr(obj: Representable) -> str:
    """The text of ``obj`` from its ``__nnx_repr__``, with the current colours;
    past ``config.flax_max_repr_depth`` nested levels the attributes show as
    ``...``."""
    if not isinstance(obj, Representable):
        raise TypeError(f"Object {obj!r} is not representable")
    token = REPR_CONTEXT._depth.set(REPR_CONTEXT.depth + 1)
    try:
        c = REPR_CONTEXT.current_color
        items = obj.__nnx_repr__()
        head = next(items)
        if not isinstance(head, Object):
            raise TypeError(
                f"First item must be Config, got {type(head).__name__}: __nnx_repr__ "
                "yields a reprlib.Object first."
            )
        max_depth = config.flax_max_repr_depth
        too_deep = max_depth is not None and REPR_CONTEXT.depth > max_depth
        if too_deep:
            body = "..."
        else:
            body = head.elem_sep.join(_attr_repr(e, head, c) for e in items)
        comment = ""
        if not body:
            body = head.empty_repr
        elif not (head.same_line or too_deep):
            body = f"\n{body}\n"
            comment = f"{c.COMMENT}{head.comment}{c.END}"
        name = head.type if isinstance(head.type, str) else head.type.__name__
        name = f"{c.TYPE}{name}{c.END}" if name else ""
        start = f"{c.PAREN}{head.start}{c.END}" if head.start else ""
        end = f"{c.PAREN}{head.end}{c.END}" if head.end else ""
        return f"{name}{start}{comment}{body}{end}"
    finally:
        REPR_CONTEXT._depth.reset(token)


class MappingReprMixin(Representable):
    """The repr ``Type({key: value, ...})`` of a mapping (``self.items()``)."""

    def __nnx_repr__(self) -> Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep=": ", start="({", end="})")
        for key, value in self.items():  # type: ignore[attr-defined]
            yield Attr(colorized(key), value, use_raw_key=True)


class SequenceReprMixin(Representable):
    """The repr ``Type([value, ...])`` of a sequence (iterating ``self``)."""

    def __nnx_repr__(self) -> Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep="", start="([", end="])")
        for value in self:  # type: ignore[attr-defined]
            yield Attr("", value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class PrettyMapping(Representable):
    """A mapping shown as ``PrettyMapping({key: value, ...})``, each value on
    its own line."""

    mapping: Mapping[Any, Any]

    def __nnx_repr__(self) -> Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep=": ", start="({", end="})")
        for key, value in self.mapping.items():
            yield Attr(colorized(key), value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class PrettySequence(Representable):
    """A sequence shown as ``PrettySequence([value, ...])``, one per line."""

    sequence: Sequence[Any]

    def __nnx_repr__(self) -> Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep="", start="([", end="])")
        for value in self.sequence:
            yield Attr("", value, use_raw_key=True)
