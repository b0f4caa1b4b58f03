"""Where a jitted step's device memory goes: ``lens.memory(step_fn, *args)``.

XLA's compiled memory analysis gives four numbers for a program: the bytes of
its arguments, of its outputs, of the outputs that reuse (alias) a donated
argument's buffer, and of its temporaries, and on most backends the peak. lens
splits them by what the bytes *are*, which only the caller's arguments can say:

- arguments, by walking them with their paths: parameters, optimizer state,
  other variable collections (batch statistics, caches, by collection or
  Variable type), rng state and inputs (the batch), each per top module path;
- outputs that are new buffers (outputs less what aliases a donated argument);
- temporaries: gradients (estimated: one per trainable parameter when the step
  differentiates, at most the temporaries) and activations and other scratch
  (the rest).

The categories sum to ``argument + output - alias + temp`` of XLA's analysis.
Arguments that could be donated and are not (an output of the same shape and
dtype could reuse their buffer) are named with the bytes donating them saves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from lens._instruments.signature import parameter_names
from lens._instruments.units import fmt_bytes
from lens._views import Displayable

PARAMETERS = "parameters"
OPTIMIZER = "optimizer state"
RNG = "rng state"
INPUTS = "inputs"
GRADIENTS = "gradients (estimated)"
TEMPORARIES = "activations and other temporaries"
OUTPUTS = "new outputs"
ORDER = [PARAMETERS, OPTIMIZER, RNG, INPUTS, GRADIENTS, TEMPORARIES, OUTPUTS]


@dataclasses.dataclass(frozen=True)
class Part:
    """Argument bytes of one category under one top module path."""

    category: str
    module: str  # "/Dense_0", "/layers", or "" for an input
    argument: str
    bytes: int
    count: int


@dataclasses.dataclass(frozen=True)
class Donation:
    """An argument not donated whose buffers an output of the same shape and
    dtype could reuse (``donate_argnums``/``donate_argnames``)."""

    argument: str
    position: int | None
    bytes: int


@dataclasses.dataclass(frozen=True)
class Memory(Displayable):
    """One compiled call's device memory, by category and module (bytes)."""

    __lens_view__ = "memory"  # drawn by lens.display
    __lens_protocols__ = ("bundle", "rich")

    function: str
    parts: tuple[Part, ...]
    argument_bytes: int  # XLA's
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    peak_bytes: int | None
    differentiates: bool
    donations: tuple[Donation, ...]

    @property
    def xla_total(self) -> int:
        """What XLA's analysis adds up to: arguments, new outputs, temporaries."""
        return (
            self.argument_bytes + self.output_bytes - self.alias_bytes + self.temp_bytes
        )

    def categories(self) -> dict[str, int]:
        """Bytes per category, in a fixed order; they sum to about ``xla_total``."""
        out: dict[str, int] = {}
        for p in self.parts:
            out[p.category] = out.get(p.category, 0) + p.bytes
        trainable = out.get(PARAMETERS, 0)
        grads = min(trainable, self.temp_bytes) if self.differentiates else 0
        out[GRADIENTS] = grads
        out[TEMPORARIES] = self.temp_bytes - grads
        out[OUTPUTS] = self.output_bytes - self.alias_bytes
        order = {c: i for i, c in enumerate(ORDER)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], 3.5)))

    def by_module(self) -> dict[str, dict[str, int]]:
        """Argument bytes per top module path and category."""
        out: dict[str, dict[str, int]] = {}
        for p in self.parts:
            if p.module:
                row = out.setdefault(p.module, {})
                row[p.category] = row.get(p.category, 0) + p.bytes
        return dict(sorted(out.items(), key=lambda kv: -sum(kv[1].values())))

    @property
    def donation_bytes(self) -> int:
        return sum(d.bytes for d in self.donations)

    def text(self) -> str:
        cats = self.categories()
        total = sum(cats.values())
        lines = [
            f"Memory of {self.function}: {fmt_bytes(total)} "
            f"(XLA: arguments {fmt_bytes(self.argument_bytes)}, new outputs "
            f"{fmt_bytes(self.output_bytes - self.alias_bytes)}, temporaries "
            f"{fmt_bytes(self.temp_bytes)}"
            + (f", peak {fmt_bytes(self.peak_bytes)}" if self.peak_bytes else "")
            + ")"
        ]
        width = max(len(c) for c in cats)
        for c, b in cats.items():
            share = b / total if total else 0.0
            lines.append(f"  {c:<{width}}  {fmt_bytes(b):>9}  {share:6.1%}")
        modules = self.by_module()
        if modules:
            lines.append("  by module (arguments):")
            for m, row in list(modules.items())[:12]:
                what = ", ".join(f"{c} {fmt_bytes(b)}" for c, b in row.items())
                lines.append(f"    {m}: {what}")
        for d in self.donations:
            lines.append(
                f"  donate {d.argument}: saves {fmt_bytes(d.bytes)} "
                f"(an output of the same shape and dtype can reuse its buffers)"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()


# -- walking the arguments


def _nbytes(x: Any) -> int:
    if isinstance(x, jax.ShapeDtypeStruct) or hasattr(x, "aval"):
        shape, dtype = x.shape, x.dtype
    elif hasattr(x, "shape") and hasattr(x, "dtype"):
        shape, dtype = x.shape, x.dtype
    elif isinstance(x, (bool, int, float, complex)):
        return 4 if not isinstance(x, complex) else 8
    else:
        return 0
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


_COLLECTION_HINTS = {
    "params": PARAMETERS,
    "opt_state": OPTIMIZER,
}


_OPTAX = frozenset({"mu", "nu", "count", "inner_state", "trace", "params", "value"})


def _category_of_path(keys: list[str]) -> tuple[str, str]:
    """(category, top module) of a leaf of a plain pytree from its path keys."""
    if len(keys) == 2 and keys[1] == "step":  # a TrainState's step count
        return OPTIMIZER, ""
    for i, k in enumerate(keys):
        if k in _COLLECTION_HINTS:
            rest = keys[i + 1 :]
            if _COLLECTION_HINTS[k] == OPTIMIZER:  # optax's mu/nu mirror the params
                inner = [r for r in rest[:-1] if not r.isdigit() and r not in _OPTAX]
                return OPTIMIZER, f"/{inner[0]}" if inner else ""
            return PARAMETERS, f"/{rest[0]}" if len(rest) > 1 else ""
        if k in ("batch_stats", "cache", "intermediates", "losses", "stats"):
            rest = keys[i + 1 :]
            return k, f"/{rest[0]}" if len(rest) > 1 else ""
        if k in ("rng", "rngs", "key", "dropout_rng"):
            return RNG, ""
    return INPUTS, ""


def _key_name(k: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _nnx_parts(
    arg: str, node: Any, seen: set[int], outer: tuple[str, str] = (INPUTS, "")
) -> Iterator[Part]:
    from lens.nnx import graph
    from lens.nnx.variablelib import Variable

    for path, value in graph.iter_graph(node):
        if not isinstance(value, Variable) or id(value) in seen:
            continue
        seen.add(id(value))
        raw = getattr(value, "_raw_value", None)
        size = _nbytes(raw)
        if not size:
            continue
        kind = type(value).__name__
        names = [str(p) for p in path]
        if "opt_state" in names or kind in ("OptState", "OptArray", "OptVariable"):
            category, names = (
                OPTIMIZER,
                names[names.index("opt_state") + 1 :]
                if "opt_state" in names
                else names,
            )
            inner = [n for n in names[:-1] if not n.isdigit() and n not in ("mu", "nu")]
            module = inner[0] if inner else ""
        elif _is_param(value):
            category, module = PARAMETERS, names[0] if names else ""
        elif kind in ("RngKey", "RngCount") or "rngs" in names:
            category, module = RNG, ""
        else:
            category, module = kind, names[0] if names else ""
        if category != OPTIMIZER and names and names[0] == "model":
            module = names[1] if len(names) > 2 else ""  # an Optimizer's model
        if outer[0] != INPUTS:  # a Variable inside an optax state, a params dict
            category, module = outer[0], outer[1].lstrip("/") or module
        yield Part(category, f"/{module}" if module else "", arg, size, 1)


def _is_param(v: Any) -> bool:
    from lens.nnx.variablelib import Param

    return isinstance(v, Param)


def argument_parts(names: list[str], args: tuple[Any, ...]) -> list[Part]:
    """Every argument leaf's bytes, by category and top module path (each array
    counted once, however many paths reach it)."""
    from lens._instruments.signature import _nnx_types

    parts: list[Part] = []
    seen: set[int] = set()
    nnx = _nnx_types()
    for name, value in zip(names, args, strict=True):
        is_node = (lambda x: nnx[1](x)) if nnx is not None else (lambda x: False)
        leaves = jax.tree_util.tree_flatten_with_path(value, is_leaf=is_node)[0]
        for path, leaf in leaves:
            if nnx is not None and nnx[1](leaf):
                keys = [name] + [_key_name(k) for k in path]
                parts += _nnx_parts(name, leaf, seen, _category_of_path(keys))
                continue
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            size = _nbytes(leaf)
            if not size:
                continue
            keys = [name] + [_key_name(k) for k in path]
            category, module = _category_of_path(keys)
            parts.append(Part(category, module, name, size, 1))
    return _merged(parts)


def _merged(parts: list[Part]) -> list[Part]:
    out: dict[tuple[str, str, str], Part] = {}
    for p in parts:
        k = (p.category, p.module, p.argument)
        q = out.get(k)
        out[k] = (
            p
            if q is None
            else dataclasses.replace(
                q, bytes=q.bytes + p.bytes, count=q.count + p.count
            )
        )
    return list(out.values())


# -- compiling


def _stages(fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(lowered, compiled) for one call of ``fn`` (jitted or not)."""
    if not callable(fn):
        raise TypeError(
            f"lens.memory measures a function, got a {type(fn).__name__}.\nPass the "
            "jitted step and its arguments: lens.memory(train_step, state, batch)."
        )
    lower = getattr(fn, "lower", None)
    if lower is None:
        fn = jax.jit(fn)
        lower = fn.lower
    lowered = lower(*args, **kwargs)
    return lowered, lowered.compile()


def _differentiates(lowered: Any) -> bool:
    """Whether the program takes a gradient (JAX's name stack says transpose)."""
    inner = getattr(lowered, "lowered", lowered)  # nnx.jit's stage wraps JAX's
    try:
        text = inner.as_text(debug_info=True)
    except Exception:  # a stage that cannot print: say nothing of gradients
        return False
    return "transpose(" in text


def _array_leaves(value: Any) -> list[tuple[tuple[int, ...], str, int]]:
    """(shape, dtype, bytes) of each array in an argument, nnx Variables' too."""
    from lens._instruments.signature import _nnx_types

    nnx = _nnx_types()
    out = []
    for leaf in jax.tree.leaves(value, is_leaf=lambda x: nnx is not None and nnx[1](x)):
        if nnx is not None and nnx[1](leaf):
            for _, v in nnx[0](leaf):
                raw = getattr(v, "_raw_value", None) if isinstance(v, nnx[2]) else None
                if raw is not None and _nbytes(raw):
                    out.append((tuple(raw.shape), str(raw.dtype), _nbytes(raw)))
        elif _nbytes(leaf) and hasattr(leaf, "shape"):
            out.append((tuple(leaf.shape), str(leaf.dtype), _nbytes(leaf)))
    return out


def _donated_positions(fn: Any, lowered: Any, n: int) -> set[int]:
    specs = getattr(fn, "specs", None)  # nnx.jit
    if specs is not None:
        return {i % n for i in specs.donate if -n <= i < n}
    info = getattr(lowered, "args_info", None)
    if info is None:
        return set()
    positional = info[0] if isinstance(info, tuple) and len(info) == 2 else info
    return {
        i
        for i, arg in enumerate(positional)
        if any(getattr(leaf, "donated", False) for leaf in jax.tree.leaves(arg))
    }


def _donations(
    fn: Any, lowered: Any, compiled: Any, names: list[str], args: tuple
) -> list[Donation]:
    """Arguments not donated whose arrays outputs of the same shape and dtype
    could take the place of (each output counted once)."""
    out_info = getattr(compiled, "out_info", None)
    if out_info is None:
        return []
    outputs: dict[tuple, int] = {}
    for o in jax.tree.leaves(out_info):
        key = (tuple(o.shape), str(o.dtype))
        outputs[key] = outputs.get(key, 0) + 1
    donated = _donated_positions(fn, lowered, len(args))
    found = []
    for i, (name, value) in enumerate(zip(names, args, strict=True)):
        if i in donated:
            continue
        saved = 0
        for shape, dtype, size in _array_leaves(value):
            if shape and outputs.get((shape, dtype), 0) > 0:
                outputs[(shape, dtype)] -= 1
                saved += size
        if saved:
            found.append(Donation(name, i, saved))
    return found


def memory(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Memory:
    """Where one call of ``fn(*args, **kwargs)`` puts its device bytes.

    ``fn`` is a jitted step (``jax.jit``, ``nnx.jit``, a function taking a
    ``TrainState`` or an ``nnx.Optimizer``) or a plain function (jitted here).
    Nothing runs: the call is lowered and compiled, and XLA's memory analysis is
    split by what the arguments are (see the module docstring). Returns a
    :class:`Memory`; in a notebook it shows as stacked bars per category and a
    table per module.
    """
    lowered, compiled = _stages(fn, args, kwargs)
    analysis = compiled.memory_analysis()
    if analysis is None:
        raise RuntimeError(
            "lens.memory: this backend gives no memory analysis for compiled "
            f"programs ({jax.default_backend()}).\nRun it on CPU, GPU or TPU."
        )
    user_fn = getattr(fn, "fun", None) or getattr(fn, "__wrapped__", fn)
    names = parameter_names(user_fn, len(args))
    parts = argument_parts(names + list(kwargs), (*args, *kwargs.values()))
    return Memory(
        function=getattr(user_fn, "__qualname__", None) or repr(fn),
        parts=tuple(parts),
        argument_bytes=int(analysis.argument_size_in_bytes),
        output_bytes=int(analysis.output_size_in_bytes),
        alias_bytes=int(analysis.alias_size_in_bytes),
        temp_bytes=int(analysis.temp_size_in_bytes),
        peak_bytes=getattr(analysis, "peak_memory_in_bytes", None) or None,
        differentiates=_differentiates(lowered),
        donations=tuple(_donations(fn, lowered, compiled, names, args)),
    )
