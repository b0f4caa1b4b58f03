"""Per-layer statistics of parameters and gradients, sampled while a loop runs.

``Layers.sample`` runs on the loop's thread but costs it one small dispatch: a
jitted reduction to the sum of squares of each leaf (per slice for a leaf of a
scanned or vmapped stack, found by ``_stacked.stacked_leaves``), whose few numbers
stay on the device until the drawer thread fetches them. Samples are taken every
``every`` calls, or at most ``per_second`` times a second.

Leaves are grouped by module (their path without the last name): a group's RMS is
``sqrt(sum of squares / count)`` over its leaves, per layer for a stack, so one row
of the heatmap is one layer (or one plain module) over time.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
from typing import Any

import numpy as np

from lens.display._leaf import make_leaf, printable
from lens.display._stacked import stacked_leaves

MAX_SAMPLES = 128
"""Samples kept (a heatmap draws at most 60 columns); past this, every other one
is dropped, so the oldest steps are kept at a coarser spacing."""

_SKIP = {"value", "raw_value"}  # attribute steps of boxes and nnx variables


@dataclasses.dataclass
class Group:
    """One module: its name, the leaves it sums over and whether it is a stack."""

    name: str
    members: list[int]  # indices into the flat leaves
    count: int  # elements per layer (or in all, when not stacked)
    layers: int  # 0 when not stacked
    shapes: str


@dataclasses.dataclass
class Sample:
    """One sampled step: per group, the RMS (per layer for a stack).

    ``vectors`` holds the same numbers end to end per kind (``'params'``,
    ``'grads'``), groups in order: a heatmap stacks these, one per sample.
    """

    step: float
    params: dict[str, np.ndarray]
    grads: dict[str, np.ndarray] | None
    vectors: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


def vector(rms: dict[str, np.ndarray]) -> np.ndarray:
    """The groups' RMS end to end (one entry per layer of a stack)."""
    return np.concatenate([np.ravel(v) for v in rms.values()]) if rms else np.zeros(0)


class Structure:
    """What is measured in one tree: float leaves, their groups, the reduction."""

    def __init__(self, tree: Any) -> None:
        import jax

        from lens.core import meta as _meta

        pairs, self.treedef = jax.tree_util.tree_flatten_with_path(
            tree, is_leaf=lambda x: isinstance(x, _meta.AxisMetadata)
        )
        leaves = []
        self.index: list[int] = []  # flat positions of the measured leaves
        for i, (path, value) in enumerate(pairs):
            names = _path_names(path)
            leaf = make_leaf("params", names[:-1], names[-1], value, False)
            if _is_float(leaf.dtype) and leaf.count > 0:
                leaves.append(leaf)
                self.index.append(i)
        stacked = stacked_leaves(leaves)
        self.stacked = tuple(id(x) in stacked for x in leaves)
        self.groups = _group(leaves, self.stacked)
        self.reduce = _reducer(self.stacked)

    def dispatch(self, tree: Any) -> list[Any]:
        """The sums of squares, as device arrays (no wait)."""
        import jax

        from lens.core import meta as _meta

        flat = jax.tree_util.tree_leaves(
            tree, is_leaf=lambda x: isinstance(x, _meta.AxisMetadata)
        )
        return self.reduce([_meta.unbox(flat[i]) for i in self.index])

    def rms(self, sums: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Per group, the RMS from the fetched sums (per layer for a stack)."""
        out = {}
        for g in self.groups:
            total = sum(np.asarray(sums[i], np.float64) for i in g.members)
            with np.errstate(over="ignore", invalid="ignore"):
                out[g.name] = np.sqrt(np.asarray(total) / max(g.count, 1))
        return out


@functools.lru_cache(maxsize=64)
def _reducer(stacked: tuple[bool, ...]) -> Any:
    """The jitted sums of squares for leaves with these stack flags: one function
    per flags, so jax compiles it once per process and shapes (not once per view)."""
    import jax

    return jax.jit(lambda xs: [_sumsq(x, s) for x, s in zip(xs, stacked)])


def _sumsq(x: Any, stacked: bool) -> Any:
    import jax.numpy as jnp

    x = x.astype(jnp.float32)
    if stacked:
        return jnp.sum(x * x, axis=tuple(range(1, x.ndim)))
    return jnp.sum(x * x)


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _path_names(path: tuple[Any, ...]) -> tuple[str, ...]:
    names = []
    for k in path:
        name = getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))
        if str(name) not in _SKIP:
            names.append(printable(name))
    return tuple(names) or ("",)


def _group(leaves: list[Any], stacked: tuple[bool, ...]) -> list[Group]:
    by: dict[tuple[tuple[str, ...], bool], list[int]] = {}
    for i, (leaf, s) in enumerate(zip(leaves, stacked)):
        by.setdefault((leaf.path, s), []).append(i)
    groups = []
    for (path, s), members in by.items():
        first = leaves[members[0]]
        layers = first.shape[0] if s else 0
        count = sum(leaves[i].count for i in members) // max(layers, 1)
        name = "/".join(path) or "/"
        if any(g.name == name for g in groups):
            name += " (stacked)" if s else " (plain)"
        shapes = ", ".join(f"{leaves[i].name} {leaves[i].type_str}" for i in members)
        groups.append(Group(name, members, count, layers, shapes))
    return groups


def _check(params: Any, grads: Any) -> Any:
    """``params``' tree structure, after refusing tracers and mismatched grads."""
    import jax
    from jax.core import Tracer

    if any(isinstance(x, Tracer) for x in jax.tree.leaves(params)):
        raise TypeError(
            "live.layers: params hold tracers: live.layers was called inside a "
            "jitted or transformed function. Return params and grads from the "
            "step and call live.layers after it."
        )
    for name, tree in (("params", params), ("grads", grads)):
        for path, x in jax.tree_util.tree_leaves_with_path(tree):
            if isinstance(x, jax.Array) and x.is_deleted():
                raise ValueError(
                    f"live.layers: {name}{jax.tree_util.keystr(path)} is a "
                    "deleted array: it was donated to a jitted step "
                    "(donate_argnums) or deleted. Pass the values the step "
                    "returned (state = step(state, batch); live.layers(step, "
                    "state.params))."
                )
    treedef = jax.tree_util.tree_structure(params)
    if grads is not None and jax.tree_util.tree_structure(grads) != treedef:
        raise ValueError(
            "live.layers: grads do not have the structure of params "
            f"({jax.tree_util.tree_structure(grads)} vs {treedef}); pass the "
            "gradients of exactly these params (for lens.nnx: "
            "nnx.state(model, nnx.Param) and the grads of nnx.grad)."
        )
    return treedef


class Layers:
    """Samples of per-group RMS over time, for params and (optionally) grads."""

    def __init__(self, every: int | None, per_second: float) -> None:
        self.lock = threading.Lock()
        self.draining = threading.Lock()  # one drain at a time: none is missed
        self.every = every
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self.calls = 0
        self.last = -math.inf
        self.structures: dict[Any, Structure] = {}
        self.structure: Structure | None = None
        self.pending: list[tuple[Any, Structure, Any, Any]] = []
        self.samples: list[Sample] = []

    def due(self) -> bool:
        """Whether this call takes a sample (counts the call)."""
        self.calls += 1
        if self.every is not None:
            return (self.calls - 1) % self.every == 0
        now = time.perf_counter()
        if now - self.last < self.interval:
            return False
        self.last = now
        return True

    def sample(self, step: Any, params: Any, grads: Any = None) -> None:
        """Dispatches the reductions of ``params`` (and ``grads``); no device wait."""
        import jax

        with self.lock:
            before = (self.calls, self.last)
            if not self.due():
                return
            try:
                treedef = _check(params, grads)
            except Exception:
                self.calls, self.last = before  # a refused call takes no turn
                raise
            shapes = tuple(getattr(x, "shape", None) for x in jax.tree.leaves(params))
            key = (treedef, shapes)
            st = self.structures.get(key)
            if st is None:
                st = self.structures[key] = Structure(params)
            self.structure = st
        p = st.dispatch(params)
        g = st.dispatch(grads) if grads is not None else None
        with self.lock:
            self.pending.append((step, st, p, g))

    def drain(self) -> int:
        """Fetches and files everything queued (one caller at a time)."""
        with self.draining:
            return self._drain()

    def _drain(self) -> int:
        """Fetches pending samples (drawer thread); returns how many."""
        import jax

        with self.lock:
            batch, self.pending = self.pending, []
        if not batch:
            return 0
        got = []
        for step, st, p, g in batch:
            try:
                step, p, g = jax.device_get((step, p, g))
            except Exception:  # noqa: BLE001 - a deleted buffer: skip the sample
                continue
            params = st.rms(p)
            grads = st.rms(g) if g is not None else None
            vectors = {"params": vector(params)}
            if grads is not None:
                vectors["grads"] = vector(grads)
            got.append(Sample(float(np.asarray(step)), params, grads, vectors))
        with self.lock:
            self.samples.extend(got)
            while len(self.samples) > MAX_SAMPLES:
                self.samples = self.samples[::2]
        return len(batch)

    def snapshot(self) -> tuple[list[Group], list[Sample]]:
        """The groups of the latest structure and the samples taken with it."""
        with self.lock:
            st = self.structure
            if st is None:
                return [], []
            names = {g.name for g in st.groups}
            return list(st.groups), [s for s in self.samples if set(s.params) == names]
