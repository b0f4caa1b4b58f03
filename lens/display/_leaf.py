"""Facts about one variable: shape, dtype, count, bytes, summary statistics, boxes."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from lens._instruments.units import short_dtype as short_dtype
from lens.core import meta as _meta
from lens.display import _placement

STATS_MAX_ELEMENTS = 1 << 22  # beyond this, statistics are skipped (they would be slow)
SMALL = 8
"""An array of at most this many values shows them, not their statistics (a loss,
a step count, a 3-vector: treescope shows such values inline too)."""
PY_REPR = 60
"""The longest a Python value's text runs before it is cut with an ellipsis."""


@dataclasses.dataclass
class Leaf:
    """What a display shows about one variable."""

    collection: str
    path: tuple[str, ...]  # module path
    name: str
    shape: tuple[int, ...]
    dtype: str
    count: int
    nbytes: int
    box: str | None = None
    names: tuple[Any, ...] | None = None
    sharding: str | None = None
    stats: tuple[float, float, float, float] | None = None  # mean, std, min, max
    value: Any = None
    stack: Any = None  # per-slice RMS over a stacked axis (see _stacked), or None
    # the values themselves, as text: a small array's (see SMALL), a Python value's
    values: str | None = None
    python: bool = False  # a Python value (an int, a tuple of shapes), not an array

    @property
    def type_str(self) -> str:
        """Compact dtype and shape, e.g. ``f32[8,16]``; a Python value's type."""
        if self.python:
            return self.dtype
        return f"{short_dtype(self.dtype)}[{','.join(str(d) for d in self.shape)}]"

    @property
    def axes_str(self) -> str:
        """The box's axis names, e.g. ``('layers','embed','mlp')``."""
        if self.names is None:
            return ""
        return (
            "("
            + ",".join(repr(n) if n is not None else "None" for n in self.names)
            + ")"
        )


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KB``."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def human_count(n: int) -> str:
    """``1234567`` -> ``1,234,567``."""
    return f"{n:,}"


def _sharding_str(x: Any) -> str | None:
    sharding = getattr(x, "sharding", None)
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or mesh is None or getattr(mesh, "size", 1) <= 1:
        return None
    shape = "x".join(str(v) for v in dict(mesh.shape).values())
    where = _placement.describe(x)  # which process and device holds which part
    return f"{spec} on {shape} mesh" + (f": {where}" if where else "")


def host_numbers(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array of its own dtype, or None when it holds no numbers to
    read (abstract, a tracer, PRNG keys, a non-numeric dtype, empty, larger than
    ``STATS_MAX_ELEMENTS``, which would make a display slow, or partly on other
    processes)."""
    dtype = getattr(x, "dtype", None)
    if (
        dtype is None
        or not hasattr(x, "__array__")
        or type(x).__name__ == "ShapeDtypeStruct"
    ):
        return None
    try:
        import jax
        import jax.core
        import jax.numpy as jnp

        if isinstance(x, jax.core.Tracer):
            return None
        if jnp.issubdtype(dtype, jax.dtypes.prng_key):
            return None
    except Exception:  # noqa: BLE001
        pass
    size = int(np.prod(getattr(x, "shape", ())))
    if size == 0 or size > STATS_MAX_ELEMENTS or is_deleted(x):
        return None
    a = _placement.host_value(x)  # None: part of it is on other processes only
    if a is None:
        return None
    if a.dtype.kind not in "biuf" and "bfloat16" not in str(a.dtype):
        return None
    return a


def numeric_array(x: Any) -> np.ndarray | None:
    """``x`` as a float64 NumPy array, or None when it holds no numbers to measure
    (see :func:`host_numbers`)."""
    a = host_numbers(x)
    return None if a is None else a.astype(np.float64)


# What a display shows for an array whose buffers are gone
DELETED = "deleted (donated?)"


def is_deleted(x: Any) -> bool:
    """Whether ``x`` is a JAX array whose buffers were freed: donated to a jitted
    call (``donate_argnums``) or deleted. Its shape, dtype and sharding remain."""
    try:
        return bool(x.is_deleted()) if hasattr(x, "is_deleted") else False
    except Exception:  # noqa: BLE001 - an odd array-like: treat it as live
        return False


def is_array(x: Any) -> bool:
    """Whether ``x`` is an array (JAX, NumPy, a NumPy scalar, an abstract array): it
    has a shape and a dtype. A Python number, string or tuple is not."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def python_text(x: Any) -> str:
    """A Python value as a display shows it: its ``repr``, cut at ``PY_REPR``
    characters with an ellipsis, on one line."""
    text = printable(" ".join(repr(x).split()))
    return text if len(text) <= PY_REPR else text[: PY_REPR - 1] + "\u2026"


def _num_text(v: Any, kind: str) -> str:
    if kind == "b":
        return str(bool(v))
    if kind in "iu":
        return str(int(v))
    return fmt_num(float(v)) if np.isfinite(v) else str(float(v))


def values_of(x: Any) -> str | None:
    """The values of a small array as text (``3``, ``[[-0.43, 0.294]]``,
    ``True``), numbers as :func:`fmt_num` writes them; None for an array of more
    than ``SMALL`` values, or one with no values to read (abstract, a tracer, PRNG
    keys, a non-numeric dtype, or partly on other processes)."""
    if int(np.prod(getattr(x, "shape", ()))) > SMALL:
        return None
    a = host_numbers(x)  # None for what has no numbers to read
    if a is None:
        return None
    kind = a.dtype.kind if a.dtype.kind in "biu" else "f"  # bfloat16 and floats: f

    def text(v: Any) -> str:
        if v.ndim == 0:
            return _num_text(v, kind)
        return "[" + ", ".join(text(r) for r in v) + "]"

    return text(a)


def stats_of(x: Any) -> tuple[float, float, float, float] | None:
    """Mean, std, min and max of a leaf (None when there is nothing to measure)."""
    a = numeric_array(x)
    if a is None:
        return None
    return float(a.mean()), float(a.std()), float(a.min()), float(a.max())


@functools.lru_cache(maxsize=256)
def _dtype_info(dtype: Any) -> tuple[str, int]:
    """``(name, itemsize)`` of a dtype (cached: a display may look at 10,000 leaves)."""
    try:
        return str(dtype), np.dtype(dtype).itemsize
    except TypeError:
        return str(dtype), 0


def make_leaf(
    collection: str,
    path: tuple[str, ...],
    name: str,
    value: Any,
    with_stats: bool = True,
) -> Leaf:
    """Builds the :class:`Leaf` for one stored variable (boxed or not).

    ``collection``, ``path`` and ``name`` are shown as given: pass them through
    :func:`printable` first (``iter_leaves`` does).
    """
    box = names = None
    if isinstance(value, _meta.AxisMetadata):
        box = type(value).__name__
        n = getattr(value, "names", None)
        names = tuple(n) if n is not None else None
        value = _meta.unbox(value)
    if not is_array(value):  # a Python value: its text, no array facts
        return Leaf(
            collection,
            path,
            name,
            (),
            type(value).__name__,
            0,
            0,
            box,
            names,
            values=python_text(value),
            python=True,
        )
    shape = getattr(value, "shape", None)
    shape = tuple(shape) if shape is not None else np.shape(value)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        dtype_name, itemsize = type(value).__name__, np.dtype(np.float32).itemsize
    else:
        try:
            dtype_name, itemsize = _dtype_info(dtype)
        except TypeError:  # an unhashable dtype-like
            dtype_name, itemsize = str(dtype), 0
    count = math.prod(shape)
    leaf = Leaf(
        collection,
        path,
        name,
        shape,
        dtype_name,
        count,
        count * itemsize,
        box,
        names,
        _sharding_str(value),
        None,
        value,
    )
    if with_stats:
        measure(leaf)
    return leaf


def measure(leaf: Leaf) -> None:
    """Sets a leaf's values (a small array's) or else its statistics; a Python
    value's text is made with its leaf."""
    if leaf.python:
        return
    if is_deleted(leaf.value):  # donated to a jit, or .delete()d: nothing to read
        leaf.values = DELETED
        return
    leaf.values = values_of(leaf.value)
    leaf.stats = stats_of(leaf.value) if leaf.values is None else None


def iter_leaves(
    variables: Mapping[str, Any], with_stats: bool = True
) -> Iterator[Leaf]:
    """Every variable of ``{collection: nested dict}``, in order.

    Walks without recursion (any depth), and raises ``ValueError`` naming the path
    where a dict contains itself (a variable tree never does; a display then falls
    back to plain text instead of hanging).
    """
    for col, tree in variables.items():
        if not isinstance(tree, Mapping):
            yield make_leaf(printable(col), (), "", tree, with_stats)
            continue
        col_name = printable(col)
        on_path = {id(variables), id(tree)}  # the dicts from the root to here
        stack: list[tuple[tuple[str, ...], Iterator[tuple[Any, Any]], int]] = [
            ((), iter(tree.items()), id(tree))
        ]
        while stack:
            path, items, _ = stack[-1]
            for k, v in items:
                if isinstance(v, Mapping):
                    if id(v) in on_path:
                        where = "/".join((str(col),) + path + (str(k),))
                        raise ValueError(
                            f"the variables contain themselves at {printable(where)}"
                        )
                    on_path.add(id(v))
                    stack.append((path + (printable(k),), iter(v.items()), id(v)))
                    break
                yield make_leaf(col_name, path, printable(k), v, with_stats)
            else:
                on_path.discard(stack.pop()[2])


def printable(s: Any) -> str:
    """``str(s)`` with control and invisible formatting characters escaped.

    A name holding a newline, NUL or a right-to-left override would otherwise break
    a text display's lines or reorder what is shown: ``'a\\nb'`` reads ``a\\nb``.
    """
    s = str(s)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def fmt_num(x: float) -> str:
    """A compact number: ``0.0123``, ``-1.2e+04``."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e4:
        return f"{x:.3g}"
    return f"{x:.2e}"
