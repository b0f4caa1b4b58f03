"""One pass over a variable collection that builds rows only for what is shown.

A display of 100,000 variables must paint in well under a second: every variable is
counted (arrays, values, bytes, modules), but only the first ``budget`` get a
:class:`~lens.display._leaf.Leaf` (names made printable, statistics later); after
that, a module costs a dict entry and each array a shape product. The first hidden
modules are remembered by name, so the display can list them in a collapsed section.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from lens.core import meta as _meta
from lens.display._leaf import Leaf, _dtype_info, is_array, make_leaf, printable

getset = type(np.ndarray.size)  # how C types expose attributes

MORE_LISTED = 100
"""Hidden modules named in a display's collapsed "more" section."""


@dataclasses.dataclass
class Module:
    """The arrays directly under one path of a collection (``n`` counts its
    leaves, ``py`` those of them that are Python values, not arrays)."""

    path: tuple[str, ...]
    leaves: list[Leaf] = dataclasses.field(default_factory=list)
    n: int = 0
    count: int = 0
    nbytes: int = 0
    py: int = 0


@dataclasses.dataclass
class Collection:
    """One collection: its shown modules, its totals, and what is not shown."""

    name: str
    shown: list[Module] = dataclasses.field(default_factory=list)
    n: int = 0
    count: int = 0
    nbytes: int = 0
    py: int = 0
    hidden_n: int = 0
    hidden_count: int = 0
    hidden_nbytes: int = 0
    hidden_modules: int = 0
    more: list[Module] = dataclasses.field(default_factory=list)
    cut: set[tuple[Any, ...]] = dataclasses.field(default_factory=set)


def _size(value: Any) -> tuple[int, int]:
    """``(values, bytes)`` of one stored variable (boxed or not); a Python value
    (not an array) has none: it is counted apart (``py``)."""
    if isinstance(value, _meta.AxisMetadata):
        value = _meta.unbox(value)
    if not is_array(value):
        return 0, 0
    shape = getattr(value, "shape", None)
    count = math.prod(shape) if shape is not None else math.prod(np.shape(value))
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return count, count * 4
    try:
        return count, count * _dtype_info(dtype)[1]
    except TypeError:
        return count, 0


class _Kinds:
    """Per value type, whether it is a dict to walk into and whether its arrays
    answer ``size`` and ``nbytes`` themselves (NumPy and JAX arrays): a 100,000-leaf
    walk asks each type once, not each value."""

    def __init__(self) -> None:
        self.mapping: dict[type, bool] = {dict: True}
        self.fast: dict[type, bool] = {np.ndarray: True}

    def is_mapping(self, t: type) -> bool:
        known = self.mapping.get(t)
        if known is None:
            known = self.mapping[t] = issubclass(t, Mapping)
        return known

    def one(self, v: Any) -> tuple[int, int]:
        """``(values, bytes)`` of one array."""
        t = type(v)
        fast = self.fast.get(t)
        if fast is None:
            fast = self.fast[t] = not issubclass(t, _meta.AxisMetadata) and all(
                isinstance(getattr(t, a, None), property | getset)
                for a in ("size", "nbytes")
            )
        return (int(v.size), int(v.nbytes)) if fast else _size(v)

    def python(self, v: Any) -> bool:
        """Whether ``v`` is a Python value, not an array (a boxed one: its value)."""
        if self.fast.get(type(v)):
            return False
        if isinstance(v, _meta.AxisMetadata):
            v = _meta.unbox(v)
        return not is_array(v)

    def total(self, arrays: list[tuple[Any, Any]]) -> tuple[int, int, int]:
        """The values and bytes of ``arrays`` together, and how many of them are
        Python values (which have neither)."""
        count = nbytes = py = 0
        fast = self.fast
        for _, v in arrays:
            if fast.get(type(v)):
                count += v.size
                nbytes += v.nbytes
            else:
                c, b = self.one(v)
                count += c
                nbytes += b
                py += self.python(v)
        return int(count), int(nbytes), py


_Frame = tuple[tuple[Any, ...], Iterator[tuple[Any, Any]], tuple[int, ...], list[bool]]
Chunk = tuple[tuple[Any, ...], list[tuple[Any, Any]], bool]


def _dicts(
    col: Any, tree: Mapping[Any, Any], root: int, kinds: _Kinds
) -> Iterator[Chunk]:
    """``(raw path, [(key, array), ...], first)``: the arrays of each dict in
    order, depth first, without recursion; a dict whose arrays come before and
    after a sub-dict gives two chunks (``first`` only on its first). Only the
    current path is held, so a dict of 100,000 sub-dicts allocates little at once.
    Raises ``ValueError`` naming the path where a dict contains itself."""
    mapping = kinds.mapping
    stack: list[_Frame] = [((), iter(tree.items()), (root, id(tree)), [False])]
    while stack:
        path, items, chain, started = stack[-1]
        arrays = []
        for k, v in items:
            m = mapping.get(type(v))
            if m is None:
                m = kinds.is_mapping(type(v))
            if not m:
                arrays.append((k, v))
                continue
            if id(v) in chain:
                where = "/".join(map(str, (col, *path, k)))
                raise ValueError(
                    f"the variables contain themselves at {printable(where)}"
                )
            stack.append((path + (k,), iter(v.items()), chain + (id(v),), [False]))
            break
        else:
            stack.pop()
        if arrays:
            yield path, arrays, not started[0]
            started[0] = True


def collect(variables: Mapping[str, Any], budget: int | None) -> list[Collection]:
    """Every collection of ``variables``, its first ``budget`` arrays (over all
    collections, in order) as rows and the rest counted."""
    left = budget
    kinds = _Kinds()
    out: list[Collection] = []
    for col, tree in variables.items():
        c = Collection(printable(col))
        out.append(c)
        if not isinstance(tree, Mapping):
            tree = {"": tree}  # a bare array as a collection: one unnamed row
        dicts = _dicts(col, tree, id(variables), kinds)
        shown: dict[tuple[Any, ...], Module] = {}
        for raw, arrays, _ in dicts if left != 0 else ():
            take = len(arrays) if left is None else min(left, len(arrays))
            mod = shown.get(raw)
            if mod is None:
                mod = shown[raw] = Module(tuple(map(printable, raw)))
                c.shown.append(mod)
            for k, v in arrays[:take]:
                leaf = make_leaf(c.name, mod.path, printable(k), v, False)
                # the array's own byte count where NumPy has no itemsize (PRNG keys)
                leaf.nbytes = kinds.one(v)[1]
                mod.leaves.append(leaf)
            count, nbytes, py = kinds.total(arrays[:take])
            _add(mod, take, count, nbytes, py)
            _add(c, take, count, nbytes, py)
            if left is not None:
                left -= take
            if take < len(arrays):  # the rest of a module cut by the budget
                _hidden(c, [(raw, arrays[take:], False)], kinds, set(shown))
            if left == 0:
                break
        _hidden(c, dicts, kinds, set(shown))
    return out


def _add(
    into: Module | Collection, n: int, count: int, nbytes: int, py: int = 0
) -> None:
    into.n, into.count, into.nbytes, into.py = (
        into.n + n,
        into.count + count,
        into.nbytes + nbytes,
        into.py + py,
    )


def _hidden(
    c: Collection,
    dicts: Iterable[Chunk],
    kinds: _Kinds,
    partly_shown: set[tuple[Any, ...]],
) -> None:
    """Counts ``dicts`` as hidden modules of ``c`` (naming the first few); a
    module partly shown counts once, at its first hidden array."""
    n = count = nbytes = py = modules = 0
    more, total = c.more, kinds.total
    for raw, arrays, first in dicts:
        k, b, p = total(arrays)
        n, count, nbytes, py = n + len(arrays), count + k, nbytes + b, py + p
        if first:
            modules += 1
            if len(more) < MORE_LISTED:
                more.append(
                    Module(tuple(map(printable, raw)), [], len(arrays), k, b, p)
                )
        elif raw in partly_shown and raw not in c.cut:
            modules += 1
            c.cut.add(raw)
    _add(c, n, count, nbytes, py)
    c.hidden_n += n
    c.hidden_count += count
    c.hidden_nbytes += nbytes
    c.hidden_modules += modules
