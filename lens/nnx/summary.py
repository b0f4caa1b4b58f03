"""``nnx.tabulate``: a table of a model's modules, the shapes each call saw, and
its variables per type, as flax.nnx prints it.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import jax
import numpy as np

from lens.nnx.graphlib import clone
from lens.nnx.module import iter_modules
from lens.nnx.pytreelib import Object, node_items
from lens.nnx.variablelib import Variable

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _spec(x: Any) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"[dim]{np.dtype(x.dtype).name}[/dim][{','.join(map(str, x.shape))}]"
    return repr(x)


def _tree_text(tree: Any) -> str:
    leaves = jax.tree.leaves(tree)
    return "\n".join(_spec(x) for x in leaves)


def _size(values: list[Any]) -> tuple[int, int]:
    n = sum(int(np.prod(getattr(v, "shape", ()))) for v in values)
    b = sum(
        int(np.prod(getattr(v, "shape", ()))) * np.dtype(v.dtype).itemsize
        for v in values
        if hasattr(v, "dtype")
    )
    return n, b


def _bytes(b: int) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:.1f} {unit}"
    return f"{b} B"


def _count(values: list[Any]) -> str:
    n, b = _size(values)
    return f"[bold]{n:,} [dim]({_bytes(b)})[/dim][/bold]"


def tabulate(
    obj: Any,
    *input_args: Any,
    depth: int | None = None,
    method: str = "__call__",
    row_filter: Callable[[Any], bool] | None = None,
    table_kwargs: Mapping[str, Any] = _EMPTY,
    column_kwargs: Mapping[str, Any] = _EMPTY,
    console_kwargs: Mapping[str, Any] = _EMPTY,
    compute_flops: bool = False,
    compute_vjp_flops: bool = False,
    **input_kwargs: Any,
) -> str:
    """A rich table of ``obj``'s modules in call order: path, type, input and
    output shapes of the call, and its own variables per type with counts and
    bytes; totals at the bottom. The call runs on a copy, abstractly (nothing is
    computed and ``obj`` is not changed)."""
    import rich.console
    import rich.table
    import rich.text

    if compute_flops or compute_vjp_flops:
        raise NotImplementedError(
            "nnx.tabulate(compute_flops=...) is not supported by lens.nnx."
        )
    model = clone(obj)
    paths: dict[int, tuple] = {}
    calls: list[tuple[tuple, Any, Any, Any]] = []
    seen: set[int] = set()
    patched: list[tuple[type, Any]] = []
    for cls in {type(m) for _, m in iter_modules(model)}:
        original = cls.__dict__.get("__call__")
        if original is None:
            continue

        def make(original: Any) -> Any:
            @functools.wraps(original)
            def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(self, *args, **kwargs)
                if id(self) in paths and id(self) not in seen:
                    seen.add(id(self))
                    calls.append((paths[id(self)], self, (args, kwargs), out))
                return out

            return recorded

        patched.append((cls, original))
        cls.__call__ = make(original)  # type: ignore[method-assign]
    try:
        from lens.nnx.transforms.transforms import eval_shape

        def run(m: Any, a: tuple, k: dict) -> Any:
            # the transform rebuilds the model: find paths on the copy it calls
            paths.update({id(x): p for p, x in iter_modules(m)})
            return getattr(m, method)(*a, **k)

        eval_shape(run, model, input_args, input_kwargs)
    finally:
        for cls, original in patched:
            cls.__call__ = original  # type: ignore[method-assign]
    calls.sort(key=lambda c: (c[0] != (), 0))  # the root first, then call order
    if not any(c[0] == () for c in calls):
        calls.insert(0, ((), model, ((input_args, input_kwargs), {}), None))
    if depth is not None:
        calls = [c for c in calls if len(c[0]) <= depth]

    def own_vars(m: Object, deep: bool) -> dict[str, list[tuple[str, Any]]]:
        by_type: dict[str, list[tuple[str, Any]]] = {}
        if deep:
            items: list[tuple[str, Any]] = []
            for p, sub in iter_modules(m):
                for k, v in node_items(sub):
                    if isinstance(v, Variable):
                        items.append(("/".join(map(str, p + (k,))), v))
        else:
            items = [(str(k), v) for k, v in node_items(m) if isinstance(v, Variable)]
        for name, v in items:
            by_type.setdefault(type(v).__name__, []).append((name, v.value))
        return by_type

    all_types = sorted({t for _, m, _, _ in calls for t in own_vars(m, True)})
    title = f"{type(obj).__name__} Summary"
    table = rich.table.Table(title=title, show_lines=True, **dict(table_kwargs))
    for col in ("path", "type", "inputs", "outputs", *all_types):
        table.add_column(col, **dict(column_kwargs))
    totals: dict[str, list[Any]] = {t: [] for t in all_types}
    for path, m, (args, kwargs), out in calls:
        root = path == ()
        mine = own_vars(m, deep=root)
        cells = []
        for t in all_types:
            entries = mine.get(t, [])
            if not root:
                totals[t] += [v for _, v in entries]
            if not entries:
                cells.append("")
            elif root:
                cells.append(_count([v for _, v in entries]))
            else:
                lines = [f"{n}: {_spec(v)}" for n, v in entries]
                cells.append(
                    "\n".join(lines) + "\n\n" + _count([v for _, v in entries])
                )
        table.add_row(
            "/".join(map(str, path)),
            type(m).__name__,
            _tree_text((args, kwargs)),
            "" if out is None else _tree_text(out),
            *cells,
        )
    root_totals = own_vars(model, True)
    table.add_row(
        "", "", "", rich.text.Text("Total", style="bold", justify="right"),
        *(_count([v for _, v in root_totals.get(t, [])]) if root_totals.get(t) else ""
          for t in all_types),
    )  # fmt: skip
    everything = [v for t in all_types for _, v in root_totals.get(t, [])]
    table.caption = f"\n[bold]Total Parameters: {_count(everything)}[/bold]"
    buf = io.StringIO()
    kwargs = {"force_terminal": True, "width": 120, **dict(console_kwargs)}
    rich.console.Console(file=buf, **kwargs).print(table)
    return buf.getvalue()
