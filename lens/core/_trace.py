"""Pack traces: a JSON record of what every ``pack`` call did, stage by stage.

Inside ``with trace_packs() as trace:`` each ``pack`` call appends a record (nested
packs become ``children`` of the pack they ran in). When no trace is active, ``pack``
gets a recorder that does nothing (one context-variable read). The tracing state lives
in a ``contextvars.ContextVar``: a trace records the transforms of its own thread (or
asyncio task) only. The record format is described by ``pack_trace.schema.json``
next to this file (``SCHEMA_VERSION``); the displays and the JupyterLab extension
draw it.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

import jax
import numpy as np

from lens._views import Displayable
from lens.core import _lanes, _meta

SCHEMA_ID = "lens.pack-trace"
SCHEMA_VERSION = 2
MIME_TYPE = "application/vnd.lens.pack+json"


class _Tracing:
    """The innermost active trace of a context and the stack of records being filled."""

    __slots__ = ("trace", "stack", "outer")

    def __init__(self, trace: PackTrace, outer: _Tracing | None = None):
        self.trace = trace
        self.stack: list[dict[str, Any]] = []
        self.outer = outer  # the enclosing trace_packs block: it records these too

    def chain(self) -> list[_Tracing]:
        """This trace and every enclosing one, innermost first."""
        out, st = [], self
        while st is not None:
            out.append(st)
            st = st.outer
        return out


_STATE: contextvars.ContextVar[_Tracing | None] = contextvars.ContextVar(
    "lens_pack_trace", default=None
)


def active() -> bool:
    """Whether a :func:`trace_packs` block is recording in this context."""
    return _STATE.get() is not None


def jsonable(x: Any) -> Any:
    """A JSON-safe rendering of a transform option (filters, axes, callables)."""
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)  # JSON has no NaN or infinity: "nan", "inf", "-inf"
    if x is None or isinstance(x, bool | int | float | str):
        return x
    if isinstance(x, Mapping):
        return [[jsonable(k), jsonable(v)] for k, v in x.items()]
    if isinstance(x, list | tuple | set | frozenset):
        items = sorted(x, key=repr) if isinstance(x, set | frozenset) else x
        return [jsonable(v) for v in items]
    name = getattr(x, "__name__", None)
    if callable(x) and name:
        return f"<function {name}>"
    return repr(x)


def leaf_spec(x: Any) -> dict[str, Any]:
    """Shape, dtype and (for boxes) box type and axis names of one leaf."""
    spec: dict[str, Any] = {}
    if isinstance(x, _meta.AxisMetadata):
        spec["box"] = type(x).__name__
        names = getattr(x, "names", None)
        if names is not None:
            spec["names"] = [None if n is None else str(n) for n in names]
        x = _meta.unbox(x)
    shape = getattr(x, "shape", None)
    spec["shape"] = list(shape) if shape is not None else list(np.shape(x))
    dtype = getattr(x, "dtype", None)
    spec["dtype"] = str(dtype) if dtype is not None else type(x).__name__
    return spec


def flatten_vars(
    tree: Mapping[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yields ``(path, leaf)`` for every variable of a nested dict (boxes are leaves)."""
    for k, v in tree.items():
        if isinstance(v, Mapping):
            yield from flatten_vars(v, prefix + (str(k),))
        else:
            yield prefix + (str(k),), v


def _spec_tree(v: Any) -> dict[str, Any]:
    leaves = jax.tree_util.tree_leaves(v, is_leaf=_meta.is_axis_metadata)
    if len(leaves) == 1:
        return leaf_spec(leaves[0])
    return {"shape": [], "dtype": "pytree", "leaves": [leaf_spec(x) for x in leaves]}


class PackTrace(Displayable):
    """The records collected by one :func:`trace_packs` block."""

    __lens_view__ = "pack trace"  # drawn by lens.display
    __lens_protocols__ = ("bundle",)

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def to_json(self) -> dict[str, Any]:
        """The whole trace as a JSON-serialisable dict (schema ``lens.pack-trace``).

        Each record carries what ``pack`` saw at each stage, and what that means per
        variable (``lanes``), per rng stream and per scope, and a one-line ``summary``.
        """
        return _finite(
            {
                "schema": SCHEMA_ID,
                "version": SCHEMA_VERSION,
                "packs": [_lanes.describe(r) for r in self.records],
            }
        )

    def dumps(self) -> str:
        """The trace as a JSON string (strict JSON: no NaN or infinity)."""
        return json.dumps(self.to_json(), allow_nan=False)

    def transforms(self) -> list[str]:
        """Names of the top-level transforms recorded, in order."""
        return [r["transform"] for r in self.records]

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"PackTrace({len(self.records)} pack calls: {self.transforms()})"


@contextlib.contextmanager
def trace_packs() -> Iterator[PackTrace]:
    """Records every ``pack`` call made inside the block.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens.core import init, lift
        >>> def f(scope, x):
        ...     return x * scope.param("w", lambda k: jnp.ones(()))
        >>> vf = lift.vmap(f, variable_axes={"params": 0},
        ...                split_rngs={"params": True})
        >>> with trace_packs() as t:
        ...     _ = init(vf)(jax.random.key(0), jnp.ones((3,)))
        >>> t.transforms()
        ['vmap']
    """
    trace = PackTrace()
    token = _STATE.set(_Tracing(trace, outer=_STATE.get()))
    try:
        yield trace
    finally:
        _STATE.reset(token)


def schema() -> dict[str, Any]:
    """The JSON schema of pack-trace records."""
    text = resources.files("lens.core").joinpath("pack_trace.schema.json").read_text()
    return json.loads(text)


class NullRecorder:
    """The recorder ``pack`` gets when no trace is active: every stage is a no-op."""

    active = False

    def close(self) -> None:
        pass

    def scopes(self, *args: Any) -> None:
        pass

    groups = rngs = inner = repack = commit = arguments = scopes


NULL_RECORDER = NullRecorder()


def recorder(transform: str, options: Mapping[str, Any] | None) -> Any:
    """A :class:`Recorder` for one ``pack`` call, or the null one when not tracing."""
    state = _STATE.get()
    if state is None:
        return NULL_RECORDER
    return Recorder(state, transform, options or {})


class Recorder:
    """Fills one record as ``pack`` goes through its six stages."""

    active = True

    def __init__(self, state: _Tracing, transform: str, options: Mapping[str, Any]):
        self.rec: dict[str, Any] = {
            "id": _next_id(),
            "transform": transform,
            "options": {k: jsonable(v) for k, v in options.items()},
            "scopes": [],
            "groups": [],
            "rngs": [],
            "inner": {"recorded": False},
            "repack": {"created": [], "mutated": []},
            "commit": [],
            "children": [],
        }
        self._vars: dict[tuple[int, str, tuple[str, ...]], dict[str, Any]] = {}
        # A nested trace_packs block records into every enclosing one too.
        self._stacks = [st.stack for st in state.chain()]
        for st in state.chain():
            if st.stack:
                st.stack[-1]["children"].append(self.rec)
            else:
                st.trace.records.append(self.rec)
            st.stack.append(self.rec)

    def close(self) -> None:
        """Ends the record (nested packs no longer go into it)."""
        for stack in self._stacks:
            if stack and stack[-1] is self.rec:
                stack.pop()

    # the call
    def arguments(
        self,
        ins: Sequence[tuple[str, Any]],
        outs: Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        """How this call's arguments go in (and its results come out, part by
        part): ``(name, axis)`` pairs, recorded as ``arg_axes``."""

        def pairs(xs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
            return [{"arg": name, "axis": jsonable(axis)} for name, axis in xs]

        self.rec["arg_axes"] = {
            "in": pairs(ins),
            "out": None if outs is None else pairs(outs),
        }

    # stage 1
    def scopes(
        self,
        paths: Sequence[tuple[str, ...]],
        roots: Sequence[int],
        rel: Sequence[tuple[int, tuple[str, ...]]],
    ) -> None:
        for i, path in enumerate(paths):
            ri, relpath = rel[i]
            self.rec["scopes"].append(
                {
                    "path": "/" + "/".join(path),
                    "root": i in roots,
                    "root_index": ri,
                    "relative_path": list(relpath),
                }
            )

    # stage 2
    def groups(
        self,
        filters: Sequence[Any],
        labels: Sequence[str],
        out_filters: Sequence[Any],
        groups_xs: Sequence[Sequence[Mapping[str, Any]]],
        root_paths: Sequence[tuple[str, ...]],
        hidden: Sequence[str],
    ) -> None:
        for gi, f in enumerate(filters):
            group: dict[str, Any] = {
                "index": gi,
                "filter": jsonable(f),
                "label": labels[gi] if gi < len(labels) else "",
                "collections": [],
                "variables": [],
            }
            cols: list[str] = []
            for ri, root_groups in enumerate(groups_xs):
                for col, tree in root_groups[gi].items():
                    if col not in cols:
                        cols.append(col)
                    for p, leaf in flatten_vars(tree):
                        v = {
                            "collection": col,
                            "scope": ri,
                            "path": "/" + "/".join(root_paths[ri] + p),
                            "outer": _spec_tree(leaf),
                            "inner": None,
                            "axis": group["label"],
                        }
                        self._vars[(ri, col, p)] = v
                        group["variables"].append(v)
            group["collections"] = cols
            self.rec["groups"].append(group)
        self.rec["out_filters"] = [jsonable(f) for f in out_filters]
        self.rec["hidden_collections"] = list(hidden)

    def rngs(
        self,
        filters: Sequence[Any],
        labels: Sequence[str],
        groups_xs: Sequence[Sequence[Mapping[str, Any]]],
        hidden: Sequence[str],
    ) -> None:
        for gi, f in enumerate(filters):
            streams: list[str] = []
            for root_groups in groups_xs:
                streams += [s for s in root_groups[gi] if s not in streams]
            label = labels[gi] if gi < len(labels) else "shared"
            for s in streams:
                self.rec["rngs"].append(
                    {
                        "stream": s,
                        "group": gi,
                        "filter": jsonable(f),
                        "split": label == "split",
                        "label": label,
                    }
                )
        self.rec["hidden_rngs"] = list(hidden)

    # stage 3/4
    def inner(self, groups_xs: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        if self.rec["inner"]["recorded"]:
            return
        self.rec["inner"]["recorded"] = True
        for ri, root_groups in enumerate(groups_xs):
            for group in root_groups:
                for col, tree in group.items():
                    for p, leaf in flatten_vars(tree):
                        v = self._vars.get((ri, col, p))
                        if v is not None:
                            v["inner"] = _spec_tree(leaf)

    # stage 5
    def repack(
        self,
        ri: int,
        root_path: tuple[str, ...],
        col: str,
        tree: Mapping[str, Any],
        tracked: set[tuple[str, tuple[str, ...]]] | None,
    ) -> None:
        for p, leaf in flatten_vars(tree):
            full = root_path + p
            entry = {
                "collection": col,
                "scope": ri,
                "path": "/" + "/".join(full),
                "inner": _spec_tree(leaf),
            }
            if (ri, col, p) not in self._vars:
                _put(self.rec["repack"]["created"], entry)
            elif tracked is not None and (col, full) in tracked:
                _put(self.rec["repack"]["mutated"], entry)

    # stage 6
    def commit(
        self, ri: int, root_path: tuple[str, ...], col: str, tree: Mapping[str, Any]
    ) -> None:
        for p, leaf in flatten_vars(tree):
            self.rec["commit"].append(
                {
                    "collection": col,
                    "scope": ri,
                    "path": "/" + "/".join(root_path + p),
                    "outer": _spec_tree(leaf),
                }
            )


def _finite(x: Any) -> Any:
    """``x`` with every NaN or infinite float replaced by its text (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def _put(entries: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Appends ``entry``, or replaces the one for the same variable.

    A loop body is traced more than once (scan's invariants pass, then the loop):
    each variable is listed once, as the last pass left it.
    """
    key = (entry["scope"], entry["collection"], entry["path"])
    for i, e in enumerate(entries):
        if (e["scope"], e["collection"], e["path"]) == key:
            entries[i] = entry
            return
    entries.append(entry)


@contextlib.contextmanager
def rehearsal() -> Iterator[None]:
    """A pass over a body that will be traced again: packs nested in it are dropped.

    Loops (scan, while_loop) run their body once before the loop to create broadcast
    variables and check invariants; the nested packs of that pass would otherwise be
    listed twice.
    """
    state = _STATE.get()
    rec = state.stack[-1] if state is not None and state.stack else None
    n = len(rec["children"]) if rec is not None else 0
    try:
        yield
    finally:
        if rec is not None:
            del rec["children"][n:]


_IDS = itertools.count(1)  # record ids: unique per process, never reset


def _next_id() -> int:
    return next(_IDS)
