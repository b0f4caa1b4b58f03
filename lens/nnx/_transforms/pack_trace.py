"""lens.nnx transforms in pack traces, so ``lens.trace()`` draws them too.

lens.nnx transforms do not go through ``pack``, but they do the same thing: split the
state of their object arguments by a spec (an axis, broadcast, carry), run the body on
the inner values and write the new ones back. ``Picture`` records that in the trace
format of lens.core (``_trace.Recorder``): each object argument is a lifted scope
(``/args[0]``), each variable type a collection (``Param``, ``BatchStat``), each spec
a filter group, and a variable whose value came back different is *updated*. When no
trace is active it costs one context-variable read.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.core
import numpy as np

from lens.core import pack_trace as _trace


def arg_names(fn: Callable[..., Any] | None) -> list[str]:
    """The names of ``fn``'s positional parameters (``[]`` when unknown); after
    them, a ``*args`` parameter's elements are named ``args[i]``."""
    if fn is None:
        return []
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def arg_name(i: int, names: Sequence[str]) -> str:
    """Argument ``i`` by its parameter name, else ``args[i]``."""
    return names[i] if 0 <= i < len(names) else f"args[{i}]"


def _root(
    path: tuple[Any, ...], names: Sequence[str] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``('args', 0, 'lin', 'kernel')`` -> ``(('model',), ('lin', 'kernel'))`` for
    ``f(model, x)`` (``args[0]`` when the name is unknown); an element of a tuple
    argument is ``pair[1]``."""
    if len(path) >= 2 and path[0] == "args" and isinstance(path[1], int):
        n = 3 if len(path) > 3 and isinstance(path[2], int) else 2
        head = arg_name(path[1], names) + "".join(f"[{p}]" for p in path[2:n])
        return (head,), tuple(str(p) for p in path[n:])
    return (), tuple(str(p) for p in path)


def _collection(leaf: Any) -> str:
    return type(leaf.variable).__name__ if leaf.variable is not None else "attribute"


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for k in path[:-1]:
        tree = tree.setdefault(k, {})
    tree[path[-1] if path else "value"] = value


def _changed(old: Any, new: Any) -> bool:
    if new is old:
        return False
    if isinstance(old, jax.core.Tracer) or isinstance(new, jax.core.Tracer):
        return True
    try:
        a, b = np.asarray(old), np.asarray(new)
    except Exception:  # noqa: BLE001 - keys and other opaque values
        return True
    return a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)


class Picture:
    """Records one lens.nnx transform call (see the module docstring)."""

    def __init__(
        self,
        transform: str,
        options: Mapping[str, Any],
        fn: Callable[..., Any] | None = None,
    ):
        self.rec = _trace.recorder(transform, options)
        self.active = self.rec.active
        self._names = arg_names(fn) if self.active else []
        if self.active and self._names:
            self.rec.rec["args"] = list(self._names)
        self._graph: list[tuple[Any, int, tuple[str, ...], str]] = []
        self._roots: list[tuple[str, ...]] = []
        self._inner: Callable[[Any, Any], Any] = lambda e, v: v

    def __enter__(self) -> Picture:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.rec.close()

    def inputs(
        self,
        entries: Sequence[Any],
        labels: Sequence[str],
        inner: Callable[[Any, Any], Any],
    ) -> None:
        """Stages 1-4: the object arguments, their state grouped by ``labels`` (one
        per entry: ``'axis 0'``, ``'broadcast'``, ``'carry'``), and ``inner(entry,
        value)``: the value the body sees (an abstract ShapeDtypeStruct is enough)."""
        if not self.active:
            return
        self._inner = inner
        groups: list[str] = []
        for e, label in zip(entries, labels, strict=True):
            if e.leaf is None:
                continue
            root, rel = _root(e.leaf.path, self._names)
            if root not in self._roots:
                self._roots.append(root)
            if label not in groups:
                groups.append(label)
            self._graph.append((e, self._roots.index(root), rel, label))
        n = len(self._roots)
        outer: list[list[dict[str, Any]]] = [[{} for _ in groups] for _ in range(n)]
        seen_inside: list[list[dict[str, Any]]] = [
            [{} for _ in groups] for _ in range(n)
        ]
        cols: list[list[str]] = [[] for _ in groups]
        for e, ri, rel, label in self._graph:
            gi, col = groups.index(label), _collection(e.leaf)
            if col not in cols[gi]:
                cols[gi].append(col)
            _put(outer[ri][gi].setdefault(col, {}), rel, e.value)
            _put(seen_inside[ri][gi].setdefault(col, {}), rel, inner(e, e.value))
        self.rec.scopes(self._roots, list(range(n)), [(i, ()) for i in range(n)])
        self.rec.groups(cols, groups, cols, outer, self._roots, [])
        self.rec.inner(seen_inside)

    def whole(self, entries: Sequence[Any], label: str) -> None:
        """Stages 1-4 for a transform that passes all state in whole (jit, remat,
        cond/switch: ``'all'``; a loop's carry: ``'carry'``)."""
        self.inputs(entries, [label] * len(entries), lambda e, v: v)

    def outputs(self, new_values: Sequence[Any]) -> None:
        """Stages 5-6: the values written back (one per graph entry, in order)."""
        if not self.active:
            return
        for ri, root in enumerate(self._roots):
            inner: dict[str, dict[str, Any]] = {}
            outer: dict[str, dict[str, Any]] = {}
            tracked: set[tuple[str, tuple[str, ...]]] = set()
            for (e, r, rel, _), new in zip(self._graph, new_values, strict=True):
                if r != ri:
                    continue
                col = _collection(e.leaf)
                _put(inner.setdefault(col, {}), rel, self._inner(e, new))
                _put(outer.setdefault(col, {}), rel, new)
                if _changed(e.value, new):
                    tracked.add((col, root + rel))
            for col in outer:
                self.rec.repack(ri, root, col, inner[col], tracked)
                self.rec.commit(ri, root, col, outer[col])


def without_axis(axis_of: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """``inner`` for a mapped transform: the value without its mapped axis."""

    def inner(entry: Any, value: Any) -> Any:
        axis = axis_of(entry)
        shape = tuple(np.shape(value))
        dtype = getattr(value, "dtype", np.float32)
        if isinstance(axis, int) and shape:
            shape = shape[: axis % len(shape)] + shape[axis % len(shape) + 1 :]
        return jax.ShapeDtypeStruct(shape, dtype)

    return inner


def axis_label(spec: Any) -> str:
    """``'axis 0'`` for an int spec, ``'broadcast'`` for None, the spec's name else."""
    if isinstance(spec, int):
        return f"axis {spec}"
    if spec is None:
        return "broadcast"
    return getattr(spec, "__name__", None) or str(spec).lower()


def _objects(out: Any) -> list[tuple[str, Any]]:
    """The objects a transform returned, named ``out`` (or ``out[i]``)."""
    from lens.nnx._objects.object import Pytree

    if isinstance(out, Pytree):
        return [("out", out)]
    if isinstance(out, tuple | list):
        return [(f"out[{i}]", x) for i, x in enumerate(out) if isinstance(x, Pytree)]
    return []


def _out_axis(out_axes: Any, i: int, many: bool) -> int | None:
    axis = out_axes[i] if many and isinstance(out_axes, tuple | list) else out_axes
    return axis if isinstance(axis, int) else None


def created(picture: Picture, out: Any, out_axes: Any) -> None:
    """Stages 5-6 for objects built inside and returned (a constructor under
    ``vmap``): each returned object is a lifted scope (``/out``), and its variables
    that were not among the arguments' are *created*, committed stacked on their
    out axis."""
    if not picture.active:
        return
    from lens.nnx._graph.ops import iter_graph
    from lens.nnx._variables.variable import Variable

    known = {id(e.leaf.variable) for e, *_ in picture._graph}  # noqa: SLF001
    objs = _objects(out)
    for i, (name, obj) in enumerate(objs):
        axis = _out_axis(out_axes, i, isinstance(out, tuple | list))
        outer: dict[str, dict[str, Any]] = {}
        for path, x in iter_graph(obj):
            if isinstance(x, Variable) and id(x) not in known:
                value = x.get_value()
                _put(
                    outer.setdefault(type(x).__name__, {}), tuple(map(str, path)), value
                )
        if not outer:
            continue
        ri, root = len(picture._roots), (name,)  # noqa: SLF001
        picture._roots.append(root)  # noqa: SLF001
        rec = picture.rec
        rec.scopes([root], [0], [(ri, ())])
        cols = list(outer)
        rec.rec["groups"].append(
            {
                "index": len(rec.rec["groups"]),
                "filter": cols,
                "label": f"axis {axis}" if axis is not None else "returned",
                "collections": cols,
                "variables": [],
            }
        )
        strip = without_axis(lambda _, a=axis: a)
        for col, tree in outer.items():
            inner = jax.tree.map(lambda v, s=strip: s(None, v), tree)
            rec.repack(ri, root, col, inner, None)
            rec.commit(ri, root, col, tree)
