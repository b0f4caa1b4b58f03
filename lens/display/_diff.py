"""``lens.diff(before, after)``: which variables changed, and by how much."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lens.display import _stacked
from lens.display._base import View, e
from lens.display._glossary import Gloss
from lens.display._leaf import Leaf, fmt_num, is_deleted, iter_leaves

RNG_COLLECTIONS = ("RngCount", "RngKey")
"""lens.nnx's rng stream state (by variable type): moves on every draw."""


def _key(x: Leaf) -> tuple[str, str]:
    return x.collection, "/".join(x.path + (x.name,))


class DiffView(View):
    """Changes between two variable trees (e.g. before and after an optax step)."""

    def __init__(
        self, before: Mapping[str, Any], after: Mapping[str, Any], atol: float = 0.0
    ):
        for name, tree in (("before", before), ("after", after)):
            if not isinstance(tree, Mapping):
                raise TypeError(
                    f"lens.diff compares two variable trees ({{collection: nested "
                    f"dict}}), but {name} is of type {type(tree).__name__}.\nPass what "
                    "init/apply returned (or nnx.state(model)) for both."
                )
        a = {_key(x): x for x in iter_leaves(before, with_stats=False)}
        b = {_key(x): x for x in iter_leaves(after, with_stats=False)}
        self.added = sorted(set(b) - set(a))
        self.removed = sorted(set(a) - set(b))
        self.changed: list[tuple[tuple[str, str], str, float, float]] = []
        self.by_slice: dict[
            tuple[str, str], Any
        ] = {}  # stacked leaves: change per slice
        stacked = _stacked.stacked_leaves(b.values())
        self.unchanged = 0
        self.rng_moved: list[tuple[str, str]] = []
        for k in sorted(set(a) & set(b)):
            x, y = a[k], b[k]
            if x.shape != y.shape or x.dtype != y.dtype:
                self.changed.append(
                    (k, f"{x.type_str} → {y.type_str}", float("nan"), float("nan"))
                )
                continue
            for side, leaf in (("before", x), ("after", y)):
                if is_deleted(leaf.value):
                    raise ValueError(
                        f"lens.diff: {side}'s {k[0]}:/{k[1]} is a deleted array: it "
                        "was donated to a jitted step (donate_argnums) or deleted, "
                        "so its values are gone.\nKeep a copy before the step: "
                        "before = jax.tree.map(jnp.copy, state)."
                    )
            va, vb = _numbers(x.value), _numbers(y.value)
            # Equal values (inf == inf) and NaN -> NaN are no change; a NaN that
            # appears or goes away is (its difference is NaN, shown as "nan").
            with np.errstate(invalid="ignore"):  # inf - inf
                same = (va == vb) | (np.isnan(va) & np.isnan(vb))
                delta = np.where(same, 0.0, np.abs(vb - va))
            max_abs = float(np.max(delta)) if delta.size else 0.0
            if max_abs <= atol:
                self.unchanged += 1
                continue
            if k[0] in RNG_COLLECTIONS:
                # a stream's counter moves on every draw: bookkeeping, not a change
                # to the model; said on one line after the real changes
                self.rng_moved.append(k)
                continue
            norm = float(np.linalg.norm(va))
            with np.errstate(invalid="ignore"):
                rel = float(np.linalg.norm(np.where(same, 0.0, vb - va)))
            rel = rel / norm if norm else float("inf")
            self.changed.append((k, y.type_str, max_abs, rel))
            if id(y) in stacked:
                per = _stacked.slice_change(x.value, y.value)
                if per is not None:
                    self.by_slice[k] = per

    def _lines(self, charts: bool = True) -> list[str]:
        lines = [
            f"Diff: {len(self.changed)} changed, {self.unchanged} unchanged, "
            f"{len(self.added)} added, {len(self.removed)} removed"
        ]
        for (col, path), t, max_abs, rel in self.changed:
            # relative to the old values' norm; a leaf that was all zeros (a bias at
            # init) has none: say so rather than "rel inf"
            how = "(was all 0)" if rel == float("inf") else f"rel {fmt_num(rel)}"
            line = f"  ~ {col}:/{path} {t} max|d| {fmt_num(max_abs)} {how}"
            per = self.by_slice.get((col, path))
            if per is not None and charts:
                line += f"  {_stacked.describe(per, 'change')}"
            lines.append(line)
        lines += [f"  + {c}:/{p}" for c, p in self.added]
        lines += [f"  - {c}:/{p}" for c, p in self.removed]
        if self.rng_moved:
            moved = ", ".join(f"{c}:/{p}" for c, p in self.rng_moved)
            lines.append(f"  rng streams moved on (not counted): {moved}")
        return lines

    def text(self) -> str:
        """Plain text, one line per changed, added or removed variable."""
        return "\n".join(self._lines())

    def html_body(self) -> str:
        """HTML table."""
        lines = self._lines(charts=False)  # the chart is drawn once, below
        rows = []
        sparks = [self.by_slice.get(k) for k, *_ in self.changed] + [None] * (
            len(lines) - 1 - len(self.changed)
        )
        g = Gloss()  # max|d|, rel, ... explained on hover where first shown
        for line, per in zip(lines[1:], sparks):
            cls = {"+": "add", "-": "del", "r": "m"}.get(line.strip()[0], "")
            svg = (
                f" {_stacked.spark_html(per, 'change', gloss=g)}"
                if per is not None
                else ""
            )
            rows.append(f"<div class='{cls}'>{_line_html(line, g)}{svg}</div>")
        return f"<div class='c'>{e(lines[0])}</div>{''.join(rows)}"


def _line_html(line: str, g: Gloss) -> str:
    """One line of the diff: the path as given, the words after it explained on
    hover (a path named ``rel`` is not a term)."""
    for cut in (" max|d| ", "rng streams moved on"):
        at = line.find(cut)
        if at >= 0:
            return e(line[:at]) + g(line[at:])
    return e(line)


def _numbers(value: Any) -> np.ndarray:
    """A leaf's values as float64 (a PRNG key array: its key data)."""
    import jax
    import jax.numpy as jnp

    if isinstance(value, jax.Array) and jnp.issubdtype(
        value.dtype, jax.dtypes.prng_key
    ):
        value = jax.random.key_data(value)
    return np.asarray(value, dtype=np.float64)


def diff(before: Any, after: Any, atol: float = 0.0) -> DiffView:
    """Which leaves changed between two variable trees, and by how much.

    ``before``/``after`` are variable dicts (``{collection: {...}}``), or
    lens.nnx States or modules (grouped by variable type, as they display).

    Example:
        >>> import numpy as np
        >>> d = diff({"params": {"w": np.zeros(2)}}, {"params": {"w": np.ones(2)}})
        >>> print(d.text())
        Diff: 1 changed, 0 unchanged, 0 added, 0 removed
          ~ params:/w f64[2] max|d| 1 (was all 0)
    """
    return DiffView(_as_collections(before), _as_collections(after), atol)


def _as_collections(x: Any) -> Any:
    """A lens.nnx State or object as ``{variable type: nested dict}``."""
    import sys

    nnx = sys.modules.get("lens.nnx")  # loaded if the user has nnx objects
    if nnx is not None and isinstance(x, nnx.State | nnx.Pytree):
        from lens.nnx.visualization import variables_by_type

        return variables_by_type(x if isinstance(x, nnx.State) else nnx.state(x))
    return x
