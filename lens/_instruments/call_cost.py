"""What one module call costs, from XLA's cost analysis: ``tabulate``'s cost columns.

``nn.tabulate`` and ``nnx.tabulate`` give each row the FLOPs and bytes accessed
of its call and of the call's VJP (forward and backward together, as Flax's
``vjp_flops``), the bytes of its parameters and of its outputs. The FLOPs and
bytes accessed come from XLA's cost analysis of the call lowered alone,
``jax.jit(call).lower(...).cost_analysis()``: the HLO as JAX emits it, before
XLA optimizes it. The lowered analysis, not the compiled one, because

- it needs no compile (a lowering is a trace and an MLIR conversion), so a
  100-layer model tabulates in well under two seconds;
- it adds up: a module's HLO is its submodules' HLO and its own ops, so the top
  row is the whole call's analysis; a call compiled alone is fused differently
  than inside its parent, so compiled rows do not add up to the compiled whole;
- it is what Flax's ``compute_flops`` reports: the numbers are Flax's.

Its FLOPs are the compiled analysis's on the models the tests check (XLA's
optimizations change few FLOPs). Its bytes accessed count every op's operands
and result as if nothing were fused: an upper bound on the memory traffic of
the compiled call, which fusion lowers (often by half or more).

A call is lowered once per *signature*, the caller's key for it (the module's
class and attributes, the method, the shapes and dtypes of its inputs and
variables): a hundred identical layers lower once.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import jax
import numpy as np

from lens._instruments.units import fmt_bytes
from lens.errors import TabulateCostError, TabulateOptionError


@dataclasses.dataclass(frozen=True)
class Analysis:
    """XLA's cost analysis of one lowered call: its FLOPs and bytes accessed."""

    flops: int
    bytes_accessed: int


@dataclasses.dataclass(frozen=True)
class CallCost:
    """What one module call costs (None: not computed).

    Attributes:
      flops, bytes_accessed: XLA's cost analysis of the call lowered alone.
      vjp_flops, vjp_bytes_accessed: the same of its VJP (the forward pass and
        the backward pass with the outputs as their own cotangents).
      param_bytes: the bytes of the module's parameters, its submodules'
        included.
      activation_bytes: the bytes of the call's outputs. In a table's total row:
        the outputs of every call that calls no other module (each time it
        runs), what a backward pass may keep (torchinfo's "forward pass size").
    """

    flops: int | None = None
    vjp_flops: int | None = None
    bytes_accessed: int | None = None
    vjp_bytes_accessed: int | None = None
    param_bytes: int | None = None
    activation_bytes: int | None = None


def analyze(lowered: Any) -> Analysis:
    """The FLOPs and bytes accessed of a ``jax.stages.Lowered``."""
    cost = lowered.cost_analysis()
    if not cost:  # a backend without an analysis of unoptimized HLO
        cost = lowered.compile().cost_analysis()
    if isinstance(cost, list | tuple):  # older JAX: one dict per computation
        cost = cost[0] if cost else None
    if not cost:
        return Analysis(0, 0)
    return Analysis(int(cost.get("flops", 0)), int(cost.get("bytes accessed", 0)))


def nbytes(tree: Any) -> int:
    """The bytes of the arrays (or shape-dtype structs) in ``tree``."""
    return sum(
        int(np.prod(x.shape)) * _itemsize(x.dtype)
        for x in jax.tree_util.tree_leaves(tree)
        if hasattr(x, "shape") and hasattr(x, "dtype")
    )


def _itemsize(dtype: Any) -> int:
    """Bytes per element; a JAX extended dtype (a PRNG key) says its own."""
    size = getattr(dtype, "itemsize", None)
    return int(size) if size is not None else np.dtype(dtype).itemsize


def signature(tree: Any) -> Hashable | None:
    """``tree`` as a hashable key: its structure, each array leaf's shape and
    dtype and each other leaf's value; None when a leaf is not hashable."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    parts = tuple(
        (tuple(x.shape), str(x.dtype))
        if hasattr(x, "shape") and hasattr(x, "dtype")
        else ("static", x)
        for x in leaves
    )
    return hashable((treedef, parts))


def static_key(x: Any, _seen: frozenset[int] = frozenset()) -> Hashable:
    """``x`` (a module attribute) as a key that values computing alike share: a
    function by its code and what it closes over (two ``normal(0.02)``
    initializers made apart are one key), a ``functools.partial`` by its
    function and arguments, lists, tuples and dicts by their items, any other
    value as itself. Raises TypeError when a value does not hash (an array)."""
    if id(x) in _seen:  # a function that refers to itself
        return ("cycle",)
    seen = _seen | {id(x)}
    if isinstance(x, functools.partial):
        keywords = tuple((k, static_key(v, seen)) for k, v in x.keywords.items())
        args = tuple(static_key(a, seen) for a in x.args)
        return functools.partial, static_key(x.func, seen), args, keywords
    if isinstance(x, types.FunctionType):
        try:
            cells = tuple(c.cell_contents for c in x.__closure__ or ())
        except ValueError:  # an empty cell: the function as itself
            return x
        closed = (cells, x.__defaults__ or (), x.__kwdefaults__ or {})
        return types.FunctionType, x.__code__, static_key(closed, seen)
    if isinstance(x, Mapping):
        return type(x), tuple((k, static_key(v, seen)) for k, v in x.items())
    if isinstance(x, list | tuple):
        return type(x), tuple(static_key(v, seen) for v in x)
    hash(x)
    return x


def hashable(key: Any) -> Hashable | None:
    """``key`` if it hashes, else None (a call that is never deduplicated)."""
    try:
        hash(key)
    except TypeError:
        return None
    return key


class Lowerings:
    """Lowers and analyses each distinct call once (by its key).

    ``count`` says how many lowerings it made: what the speed depends on.
    """

    def __init__(self, tool: str) -> None:
        self.tool = tool  # "nn.tabulate" or "nnx.tabulate", for errors
        self.count = 0
        self._done: dict[Hashable, Analysis] = {}

    def done(self, key: Hashable | None) -> Analysis | None:
        """The analysis already made for ``key``, if any."""
        return None if key is None else self._done.get(key)

    def analysis(
        self,
        key: Hashable | None,
        lower: Callable[[], Any],
        *,
        where: str,
        option: str,
    ) -> Analysis:
        """The analysis of ``lower()``, lowered once per ``key`` (None: always).

        ``where`` names the call (``/encoder/Dense_0 (Dense.__call__)``) and
        ``option`` the tabulate option that asked for it, for the error.
        """
        if key is not None and key in self._done:
            return self._done[key]
        try:
            result = analyze(lower())
        except Exception as e:
            raise TabulateCostError(
                self.tool, where, option, f"{type(e).__name__}: {e}"
            ) from e
        self.count += 1
        if key is not None:
            self._done[key] = result
        return result


@dataclasses.dataclass(frozen=True)
class Options:
    """The cost options of a ``tabulate`` call."""

    flops: bool  # compute_flops (Flax's)
    vjp: bool  # compute_vjp_flops (Flax's)
    cost: bool  # compute_cost (lens's)

    @classmethod
    def checked(
        cls, tool: str, compute_flops: Any, compute_vjp_flops: Any, compute_cost: Any
    ) -> Options:
        """The options, or :class:`TabulateOptionError` for one not a bool."""
        given = {
            "compute_flops": compute_flops,
            "compute_vjp_flops": compute_vjp_flops,
            "compute_cost": compute_cost,
        }
        for name, value in given.items():
            if not isinstance(value, bool | np.bool_):
                raise TabulateOptionError(tool, name, repr(value))
        return cls(bool(compute_flops), bool(compute_vjp_flops), bool(compute_cost))

    @property
    def any(self) -> bool:
        """Whether any call is lowered."""
        return self.flops or self.vjp or self.cost


def fmt_flops(n: int | None) -> str:
    """``66.6 kFLOP``: three significant digits, SI prefixes."""
    if n is None or n < 0:
        return ""
    value, prefix = float(n), ""
    for p in ("k", "M", "G", "T", "P", "E"):
        if value < 999.5:
            break
        value, prefix = value / 1000, p
    if not prefix:
        return f"{n} FLOP"
    digits = 0 if value >= 99.95 else 1 if value >= 9.995 else 2
    return f"{value:.{digits}f} {prefix}FLOP"


def fmt_size(n: int | None) -> str:
    """``36.5 KiB`` as the instruments write bytes; empty when not computed."""
    return "" if n is None or n < 0 else fmt_bytes(n)


@dataclasses.dataclass(frozen=True)
class Column:
    """A cost column of the table: its header and how a cell reads."""

    name: str
    field: str  # the CallCost attribute
    fmt: Callable[[int | None], str]

    def cell(self, cost: CallCost | None) -> str:
        return "" if cost is None else self.fmt(getattr(cost, self.field))


# How a cost column sits in a rich table: numbers right-aligned; in a console
# too narrow for the table, folded, never cut (a minimum width would push the
# table past the console's edge, where rich crops it). fit_rich narrows them.
RICH_COLUMN: dict[str, Any] = {"justify": "right", "overflow": "fold"}
# The widths fit_rich tries: as wide as the widest number ("1.54 MFLOP"; a
# header wraps between words), then a number over its unit ("332.7" / "KiB").
_WIDTHS = (10, 6)


def fit_rich(console: Any, table: Any, first: int, count: int) -> None:
    """Narrows the ``count`` cost columns from ``first`` (those the caller gave
    no ``max_width``) while ``table`` is wider than ``console``, before rich cuts
    Flax's columns (``float32[2,16,…``) to make room for them."""
    from rich.measure import Measurement

    unbounded = console.options.update_width(1 << 20)  # the table's own width

    def too_wide() -> bool:
        return Measurement.get(console, unbounded, table).maximum > console.width

    ours = [c for c in table.columns[first : first + count] if c.max_width is None]
    for width in _WIDTHS:
        if not ours or not too_wide():
            return
        for column in ours:
            column.max_width = width


def columns(compute_flops: bool, compute_vjp_flops: bool) -> list[Column]:
    """The columns of a table with ``compute_cost``: Flax's two FLOPs columns
    where asked for, then bytes accessed (forward, and the VJP's with
    ``compute_vjp_flops``), parameter bytes and activation bytes."""
    out = []
    if compute_flops:
        out.append(Column("flops", "flops", fmt_flops))
    if compute_vjp_flops:
        out.append(Column("vjp_flops", "vjp_flops", fmt_flops))
    out.append(Column("bytes accessed", "bytes_accessed", fmt_size))
    if compute_vjp_flops:
        out.append(Column("vjp bytes accessed", "vjp_bytes_accessed", fmt_size))
    out.append(Column("param bytes", "param_bytes", fmt_size))
    out.append(Column("activation bytes", "activation_bytes", fmt_size))
    return out


CAPTION = (
    "Costs: XLA's cost analysis of each call lowered alone (before fusion). "
    "vjp: forward and backward. Total: the whole call; its activation bytes: the "
    "outputs of the calls that call no other module."
)


def total(top: CallCost | None, leaf_activation_bytes: int) -> CallCost | None:
    """The total row: the top call's costs, activations summed over leaf calls."""
    if top is None:
        return None
    return dataclasses.replace(top, activation_bytes=leaf_activation_bytes)
