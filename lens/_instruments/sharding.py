"""Sharding at a glance: ``lens.sharding(tree, mesh=None, rules=None)``.

Give it what a model holds (a Linen variable collection, boxed or not; an nnx
``State`` or Module; any pytree of arrays or ``jax.ShapeDtypeStruct``\\ s) and it
says, without compiling anything:

- how many bytes each device holds: for placed arrays from their addressable
  shards, for abstract ones from the sharding's shard shape and devices, for
  boxes and nnx Variables that name axes from the spec lens resolves for them
  (the same code as ``nn.get_sharding`` and ``nnx.get_partition_spec``);
- each array's layout over the mesh axes: its PartitionSpec, which mesh axes
  split which dimension, the shard shape, the blocks and the devices holding
  each (what the script-free picture draws);
- which replicated arrays are big enough to be worth sharding, and what
  sharding one along a mesh axis would save per device;
- the mistakes that JAX reports only when it compiles or places the array (or
  never: lens.nn replicates a logical name without a rule silently), each named
  by the variable's path, its module and the rule or mesh axis at fault.

``lens.display`` draws the :class:`ShardingReport` (text, rich, script-free HTML).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from lens._instruments.sharding_checks import (
    KINDS,
    Checks,
    Leaf,
    Problem,
    axes_of,
    is_variable,
    leaves,
    mesh_str,
    placed,
    placement,
    rules_of,
    short_type,
    spec_str,
)
from lens._instruments.units import fmt_bytes
from lens._views import Displayable
from lens.core import current_mesh
from lens.typing import LogicalRules

THRESHOLD = 1 << 20
"""Replicated arrays from this many bytes up are flagged (``threshold=``)."""
SAME_LISTED = 8
"""Paths listed for the other arrays of a group of like problems."""
DEVICE_ROWS = 32
"""Devices shown one per row; past this, runs of devices holding the same bytes
share a row."""

# -- the records


class Block(NamedTuple):
    """One part of an array and the devices that hold a copy of it."""

    start: tuple[int, ...]
    stop: tuple[int, ...]
    devices: tuple[int, ...]  # device ids


@dataclasses.dataclass(frozen=True)
class ArrayLayout:
    """One array laid out over the mesh (or not: ``state`` says)."""

    path: str  # "params/Dense_0/kernel", "/layers/0/linear/kernel"
    module: str  # "/Dense_0", "/layers/0/linear"
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # the whole array
    names: tuple[Any, ...] | None  # the annotation's axis names (logical or mesh)
    spec: str | None  # "P(None, 'model')": the mesh spec it has (placed) or gets
    axes: tuple[tuple[str, ...], ...]  # per dimension, the mesh axes splitting it
    shard_shape: tuple[int, ...] | None
    devices: int  # devices holding part of it
    replicas: int  # copies of each part
    # "placed" (a jax Array), "abstract" (a ShapeDtypeStruct's sharding),
    # "annotated" (as its annotation asks), "default" (no annotation under a
    # mesh: replicated), "host" (a NumPy array), "deleted" (donated to a jitted
    # call: laid out as it was, its bytes freed) or "unresolved" (a problem)
    state: str
    blocks: tuple[Block, ...] = ()

    @property
    def replicated(self) -> bool:
        """Every one of (more than one) devices holds all of it."""
        return self.devices > 1 and self.replicas == self.devices

    @property
    def shard_bytes(self) -> int | None:
        """Bytes of one shard (what each device holding part of it stores)."""
        if self.shard_shape is None:
            return None
        whole = math.prod(self.shape)
        return self.nbytes * math.prod(self.shard_shape) // whole if whole else 0

    def split(self) -> str:
        """``dim 1 by model (4)``; ``not split``."""
        parts = [f"dim {i} by {'×'.join(a)}" for i, a in enumerate(self.axes) if a]
        return ", ".join(parts) if parts else "not split"


@dataclasses.dataclass(frozen=True)
class DeviceBytes:
    """What one device holds of the tree."""

    id: int
    process: int
    bytes: int
    arrays: int  # arrays with a part on it
    addressable: bool  # this process's own device
    in_mesh: bool

    def name(self, processes: int) -> str:
        """``d3``, or ``p1:d2051`` when there are several processes."""
        return f"p{self.process}:d{self.id}" if processes > 1 else f"d{self.id}"


class DeviceGroup(NamedTuple):
    """Neighbouring devices of one process that hold the same bytes (one row)."""

    ids: tuple[int, ...]
    process: int
    bytes: int  # on each
    arrays: int
    in_mesh: bool

    def name(self, processes: int) -> str:
        """``d0``, ``d0-127``, ``p1:d2048-2051``."""
        ids = f"d{self.ids[0]}" + (f"-{self.ids[-1]}" if len(self.ids) > 1 else "")
        return f"p{self.process}:{ids}" if processes > 1 else ids


@dataclasses.dataclass(frozen=True)
class Replicated:
    """A replicated array above the threshold, and how sharding it would help."""

    path: str
    module: str
    nbytes: int  # on every device
    devices: int
    axis: str | None  # a mesh axis that divides one of its dimensions
    dim: int | None
    saved: int  # bytes per device saved by sharding ``dim`` over ``axis``

    def line(self) -> str:
        where = (
            f"shard dim {self.dim} over {self.axis!r}: saves {fmt_bytes(self.saved)} "
            "per device"
            if self.axis is not None
            else "no mesh axis divides any of its dimensions"
        )
        return (
            f"{self.path}: {fmt_bytes(self.nbytes)} on each of {self.devices} "
            f"devices; {where}"
        )


@dataclasses.dataclass(frozen=True)
class ShardingReport(Displayable):
    """Where a tree's arrays live: ``lens.sharding(tree, mesh, rules)`` returns one."""

    __lens_view__ = "sharding"  # its view: lens.display._sharding
    __lens_protocols__ = ("bundle", "rich")

    mesh: tuple[tuple[str, int], ...]  # (axis, size); () without a mesh
    devices: tuple[DeviceBytes, ...]
    arrays: tuple[ArrayLayout, ...]
    problems: tuple[Problem, ...]
    flagged: tuple[Replicated, ...]
    threshold: int
    processes: int
    rules: tuple[tuple[str, Any], ...]

    @property
    def total_bytes(self) -> int:
        """The arrays' bytes, each counted once."""
        return sum(a.nbytes for a in self.arrays)

    @property
    def uncounted(self) -> tuple[ArrayLayout, ...]:
        """Arrays on no device: on the host, or whose layout a problem prevents."""
        return tuple(a for a in self.arrays if a.state in ("host", "unresolved"))

    def bytes_per_device(self) -> dict[int, int]:
        """``{device id: bytes}``."""
        return {d.id: d.bytes for d in self.devices}

    def kinds(self) -> list[str]:
        """The problems' kinds, in order."""
        return [p.kind for p in self.problems]

    def mesh_str(self) -> str:
        """``2x4 mesh (data=2, model=4)``; ``no mesh``."""
        if not self.mesh:
            return "no mesh"
        shape = "x".join(str(n) for _, n in self.mesh)
        return f"{shape} mesh ({', '.join(f'{a}={n}' for a, n in self.mesh)})"

    def headline(self) -> str:
        """The first line: arrays, bytes, mesh, devices, the most on one device."""
        n = len(self.arrays)
        per = [d.bytes for d in self.devices]
        most = f", at most {fmt_bytes(max(per))} per device" if per else ""
        where = f"on a {self.mesh_str()}" if self.mesh else "with no mesh"
        return (
            f"Sharding of {n} array{'s' if n != 1 else ''} "
            f"({fmt_bytes(self.total_bytes)}) {where}, "
            f"{len(self.devices)} device{'s' if len(self.devices) != 1 else ''}"
            + (f" of {self.processes} processes" if self.processes > 1 else "")
            + most
        )

    def device_groups(self, limit: int = DEVICE_ROWS) -> list[DeviceGroup]:
        """The devices as rows: one each up to ``limit`` devices; past that, a
        run of neighbours holding the same bytes (of one process) is one row."""
        rows: list[DeviceGroup] = []
        for d in self.devices:
            last = rows[-1] if rows else None
            if (
                len(self.devices) > limit
                and last is not None
                and (last.bytes, last.arrays, last.process, last.in_mesh)
                == (d.bytes, d.arrays, d.process, d.in_mesh)
            ):
                rows[-1] = last._replace(ids=(*last.ids, d.id))
            else:
                rows.append(
                    DeviceGroup((d.id,), d.process, d.bytes, d.arrays, d.in_mesh)
                )
        return rows

    def problem_groups(self) -> list[tuple[Problem, tuple[Problem, ...]]]:
        """The problems, those of one kind, name and rule together (the first,
        then the others): 48 layers missing one rule are one group."""
        groups: dict[tuple[Any, ...], list[Problem]] = {}
        for p in self.problems:
            groups.setdefault((p.kind, p.axis, p.rule), []).append(p)
        return [(ps[0], tuple(ps[1:])) for ps in groups.values()]

    def text(self) -> str:
        lines = [self.headline()]
        if self.problems:
            n = len(self.problems)
            lines.append(f"{n} problem{'s' if n != 1 else ''}, found before compiling:")
            for p, same in self.problem_groups():
                head, *rest = p.message.splitlines()
                lines.append(f"  {p.kind}: {head}")
                lines += [f"      {r}" for r in rest]
                if same:
                    paths = ", ".join(q.path for q in same[:SAME_LISTED])
                    more = len(same) - SAME_LISTED
                    lines.append(
                        f"      the same for {len(same)} more: {paths}"
                        + (f" … and {more} more" if more > 0 else "")
                    )
        else:
            lines.append("no problems found")
        if self.flagged:
            lines.append(f"replicated, {fmt_bytes(self.threshold)} or more:")
            lines += [f"  {r.line()}" for r in self.flagged]
        if self.devices:
            lines.append("bytes per device:")
            groups = self.device_groups()
            most = max(g.bytes for g in groups) or 1
            width = max(len(g.name(self.processes)) for g in groups)
            for g in groups:
                bar = "█" * round(24 * g.bytes / most)
                note = "" if g.in_mesh else "  (outside the mesh)"
                each = " each" if len(g.ids) > 1 else ""
                lines.append(
                    f"  {g.name(self.processes):<{width}}  {bar:<24}  "
                    f"{fmt_bytes(g.bytes):>9}{each}  {g.arrays} arrays{note}"
                )
        if self.uncounted:
            b = sum(a.nbytes for a in self.uncounted)
            n = len(self.uncounted)
            lines.append(
                f"not on any device: {n} array{'s' if n != 1 else ''} ({fmt_bytes(b)})"
            )
        lines.append("arrays:")
        width = min(40, max((len(a.path) for a in self.arrays), default=0))
        for a in self.arrays:
            lines.append(f"  {a.path:<{width}}  {array_line(a)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()


def array_line(a: ArrayLayout) -> str:
    """One array's line of the text form (after its path)."""
    parts = [type_str(a)]
    if a.names is not None:
        parts.append("(" + ",".join(repr(n) for n in a.names) + ")")
    if a.state == "host":
        return "  ".join([*parts, "on the host (not placed)"])
    if a.state == "unresolved":
        return "  ".join([*parts, a.spec or "", "(not laid out: see the problems)"])
    parts.append(where_str(a))
    if a.shard_shape is not None and a.shard_shape != a.shape:
        parts.append(f"shard {type_str(a, a.shard_shape)}")
    if a.replicated:
        parts.append(f"replicated on {a.devices} devices")
    elif a.replicas > 1:
        parts.append(f"{a.replicas} copies of each part")
    if a.state == "deleted":
        parts.append("deleted (donated?): its bytes are freed")
    return "  ".join(parts)


def where_str(a: ArrayLayout) -> str:
    """``P(None, 'model')  dim 1 by model``; ``on d3 alone`` (one device, no
    mesh); the dimensions split, unnamed, for a sharding without mesh axes."""
    if a.spec is not None:
        return f"{a.spec}  {a.split()}"
    if a.devices == 1 and a.blocks:
        return f"on d{a.blocks[0].devices[0]} alone"
    return a.split()


def type_str(a: ArrayLayout, shape: tuple[int, ...] | None = None) -> str:
    """``f32[8,32]`` (or of ``shape``, a shard's)."""
    return short_type(a.dtype, a.shape if shape is None else shape)


# -- devices, blocks and bytes


def _index_bytes(index: tuple[slice, ...], shape: tuple[int, ...], item: int) -> int:
    n = 1
    for s, size in zip(index, shape, strict=False):
        start, stop, step = s.indices(size)
        n *= max(0, len(range(start, stop, step)))
    return n * item


def _blocks(
    indices: Mapping[Any, tuple[slice, ...]], shape: tuple[int, ...]
) -> tuple[Block, ...]:
    parts: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for device, index in indices.items():
        key = tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=False))
        parts.setdefault(key, []).append(device.id)
    return tuple(
        Block(
            tuple(a for a, _ in key),
            tuple(b for _, b in key),
            tuple(sorted(ids)),
        )
        for key, ids in parts.items()
    )


class _Tally:
    """Bytes and arrays per device."""

    def __init__(self) -> None:
        self.bytes: dict[Any, int] = {}
        self.arrays: dict[Any, int] = {}

    def add(self, device: Any, n: int) -> None:
        self.bytes[device] = self.bytes.get(device, 0) + n
        self.arrays[device] = self.arrays.get(device, 0) + 1


def _layout(
    leaf: Leaf,
    sharding: Any,
    state: str,
    names: tuple[Any, ...] | None,
    tally: _Tally,
) -> ArrayLayout:
    """An array laid out by ``sharding``; its bytes added to ``tally``."""
    x = leaf.value
    shape = tuple(x.shape)
    nbytes = _nbytes(x)
    item = nbytes // math.prod(shape) if math.prod(shape) else 1
    indices = sharding.devices_indices_map(shape)
    if state == "placed":
        local = set()
        for shard in x.addressable_shards:  # this process's devices: its shards
            tally.add(shard.device, _index_bytes(shard.index, shape, item))
            local.add(shard.device)
        for device, index in indices.items():  # other processes' devices
            if device not in local:
                tally.add(device, _index_bytes(index, shape, item))
    elif state != "deleted":  # a deleted (donated) array's bytes are freed
        for device, index in indices.items():
            tally.add(device, _index_bytes(index, shape, item))
    blocks = _blocks(indices, shape)
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        entries = tuple(spec) + (None,) * (len(shape) - len(spec))
        axes = tuple(axes_of(e) for e in entries[: len(shape)])
        spec_s = spec_str(tuple(spec))
    else:  # a sharding without mesh axes: which dimensions are split, unnamed
        shard = sharding.shard_shape(shape)
        axes = tuple(
            ("?",) if s != n else () for s, n in zip(shard, shape, strict=True)
        )
        spec_s = None
    devices = len(indices)
    return ArrayLayout(
        path=leaf.path,
        module=leaf.module,
        shape=shape,
        dtype=str(x.dtype),
        nbytes=nbytes,
        names=names,
        spec=spec_s,
        axes=axes,
        shard_shape=tuple(sharding.shard_shape(shape)),
        devices=devices,
        replicas=devices // max(1, len(blocks)),
        state=state,
        blocks=blocks,
    )


def _nbytes(x: Any) -> int:
    try:
        item = np.dtype(x.dtype).itemsize
    except TypeError:
        item = getattr(x, "itemsize", None) or getattr(x.dtype, "itemsize", 0) or 0
    return int(math.prod(x.shape)) * int(item)


def _flat_layout(
    leaf: Leaf, state: str, names: tuple[Any, ...] | None, spec: str | None = None
) -> ArrayLayout:
    shape = tuple(leaf.value.shape)
    return ArrayLayout(
        path=leaf.path,
        module=leaf.module,
        shape=shape,
        dtype=str(leaf.value.dtype),
        nbytes=_nbytes(leaf.value),
        names=names,
        spec=spec,
        axes=tuple(() for _ in shape),
        shard_shape=None,
        devices=0,
        replicas=0,
        state=state,
    )


# -- the one entry point


def sharding(
    tree: Any,
    mesh: Mesh | None = None,
    rules: LogicalRules | Mapping[str, Any] | None = None,
    *,
    threshold: int = THRESHOLD,
) -> ShardingReport:
    """Where the arrays of ``tree`` live, or will live, on ``mesh``; and what is
    wrong with their sharding, found before anything compiles.

    Args:
      tree: a Linen variable collection (boxes such as ``nn.Partitioned`` and
        ``LogicallyPartitioned`` included), an nnx ``State`` or Module, or any
        pytree of jax Arrays (placed or not) or ``jax.ShapeDtypeStruct``\\ s.
      mesh: the mesh the annotations are laid out on; default: the mesh of the
        enclosing ``jax.set_mesh``, then a box's own, then a placed array's.
      rules: logical axis rules (``[(logical name, mesh axes), ...]``); default:
        those of the enclosing ``nn.logical_axis_rules``.
      threshold: replicated arrays of this many bytes or more are flagged.

    Returns:
      A :class:`ShardingReport`: bytes per device, each array's layout, the
      flagged replicated arrays and the problems. In a notebook it shows as a
      table, a bar per device and a picture per array.

    Example:
      >>> import jax, numpy as np
      >>> from jax.sharding import NamedSharding, PartitionSpec as P
      >>> mesh = jax.make_mesh((2, 4), ("data", "model"))
      >>> s = NamedSharding(mesh, P("data", "model"))
      >>> x = jax.device_put(np.zeros((8, 16), np.float32), s)
      >>> report = sharding({"x": x})
      >>> report.bytes_per_device()[0], report.arrays[0].shard_shape
      (64, (4, 4))
    """
    found = list(leaves(tree))
    rules_t = rules_of(rules)
    if mesh is not None and mesh.empty:
        mesh = None
    default_mesh = mesh if mesh is not None else current_mesh()
    if default_mesh is None:
        default_mesh = next(
            (
                m
                for leaf in found
                for m in (
                    _box_mesh(leaf.box),
                    getattr(getattr(leaf.value, "sharding", None), "mesh", None),
                )
                if isinstance(m, Mesh) and not m.empty
            ),
            None,
        )
    check = Checks(default_mesh, rules_t)
    tally = _Tally()
    layouts: list[ArrayLayout] = []
    abstract_sharded = any(
        isinstance(leaf.value, jax.ShapeDtypeStruct)
        and getattr(leaf.value, "sharding", None) is not None
        for leaf in found
    )
    for leaf in found:
        layouts.append(_one(leaf, check, tally, abstract_sharded))
    check.finish()
    return ShardingReport(
        mesh=tuple((str(a), int(n)) for a, n in default_mesh.shape.items())
        if default_mesh is not None
        else (),
        devices=_devices(tally, default_mesh),
        arrays=tuple(layouts),
        problems=tuple(check.problems),
        flagged=tuple(
            sorted(
                _flags(layouts, default_mesh, threshold),
                key=lambda f: (-f.saved, -f.nbytes),
            )
        ),
        threshold=threshold,
        processes=max(
            [jax.process_count()] + [d.process_index + 1 for d in tally.bytes]
        ),
        rules=rules_t,
    )


def _box_mesh(box: Any) -> Any:
    if box is None:
        return None
    if is_variable(box):
        return box.metadata.get("mesh")
    return getattr(box, "mesh", None)


def _one(
    leaf: Leaf, check: Checks, tally: _Tally, abstract_sharded: bool
) -> ArrayLayout:
    """The layout of one leaf; its problems reported to ``check``."""
    x = leaf.value
    own_mesh = _box_mesh(leaf.box)
    mesh = check.mesh if check.mesh is not None else own_mesh
    plan = check.plan(leaf, mesh)
    names = plan.names if plan is not None else None
    if plan is not None and plan.spec is None:
        return _flat_layout(leaf, "unresolved", names)
    intended = None
    if plan is not None and plan.spec is not None:
        if mesh is None:
            check.no_mesh.append(leaf)
            if not placed(x):
                return _flat_layout(leaf, "unresolved", names, spec_str(plan.spec))
        elif not check.validate(leaf, plan.spec, plan, mesh):
            return _flat_layout(leaf, "unresolved", names, spec_str(plan.spec))
        else:
            intended = NamedSharding(mesh, PartitionSpec(*plan.spec))
    has = getattr(x, "sharding", None) if placed(x) else None
    if isinstance(x, jax.ShapeDtypeStruct) and x.sharding is not None:
        has = x.sharding
        spec, its_mesh = getattr(has, "spec", None), getattr(has, "mesh", None)
        if spec is not None and isinstance(its_mesh, Mesh):
            if not check.validate(leaf, tuple(spec), plan, its_mesh):
                return _flat_layout(leaf, "unresolved", names, spec_str(tuple(spec)))
    if has is not None:
        state = "abstract"
        if placed(x):
            assert isinstance(x, jax.Array)  # what placed() checks
            state = "deleted" if x.is_deleted() else "placed"
        layout = _layout(leaf, has, state, names, tally)
        if intended is not None and not has.is_equivalent_to(intended, len(x.shape)):
            check.mismatch(leaf, names or (), intended, has)
        elif mesh is not None and _outside(has, mesh):
            check.report(
                "not-on-mesh",
                leaf,
                f"{check.where(leaf)}: it is placed as {placement(has)}, on "
                f"devices the {mesh_str(mesh)} does not hold.\njax.jit raises "
                "('Mesh for all inputs should be equal', 'incompatible devices') "
                "when it meets it with arrays on the mesh.\n"
                "fix: jax.device_put it onto a NamedSharding of this mesh.",
            )
        return layout
    if intended is not None:
        return _layout(leaf, intended, "annotated", names, tally)
    if isinstance(x, jax.ShapeDtypeStruct) and abstract_sharded:
        check.report(
            "no-sharding",
            leaf,
            f"{check.where(leaf)}: an abstract array without a sharding, among "
            "abstract arrays that have one.\nA restore or jit with this target "
            "puts it whole on one device (flax#5110: eval_shape dropped it).\n"
            "fix: give it its sharding: jax.ShapeDtypeStruct(shape, dtype, "
            "sharding=...), from nn.get_sharding or nnx.get_abstract_model.",
        )
    if mesh is not None and not isinstance(x, np.ndarray):
        # unannotated under a mesh: replicated, as nn.get_sharding lays it out
        replicated = NamedSharding(mesh, PartitionSpec())
        return _layout(leaf, replicated, "default", names, tally)
    return _flat_layout(leaf, "host", names)


def _outside(s: Any, mesh: Mesh) -> bool:
    """Whether an array committed to devices (more than one) is on another
    device set than ``mesh``'s: jit cannot take it with the mesh's arrays."""
    held = set(s.device_set)
    return len(held) > 1 and held != set(mesh.devices.flat)


def _devices(tally: _Tally, mesh: Mesh | None) -> tuple[DeviceBytes, ...]:
    order = list(mesh.devices.flat) if mesh is not None else []
    order += sorted((d for d in tally.bytes if d not in set(order)), key=lambda d: d.id)
    in_mesh = set(mesh.devices.flat) if mesh is not None else set()
    me = jax.process_index()
    return tuple(
        DeviceBytes(
            id=int(d.id),
            process=int(d.process_index),
            bytes=tally.bytes.get(d, 0),
            arrays=tally.arrays.get(d, 0),
            addressable=d.process_index == me,
            in_mesh=mesh is None or d in in_mesh,
        )
        for d in order
    )


def _flags(
    layouts: list[ArrayLayout], mesh: Mesh | None, threshold: int
) -> Iterator[Replicated]:
    sizes = dict(mesh.shape) if mesh is not None else {}
    for a in layouts:
        if not a.replicated or a.nbytes < threshold:
            continue
        best: tuple[int, str, int] | None = None
        for axis, size in sizes.items():
            if size < 2:
                continue
            for dim in sorted(range(len(a.shape)), key=lambda d: -a.shape[d]):
                if a.shape[dim] % size == 0:
                    saved = a.nbytes - a.nbytes // size
                    if best is None or saved > best[0]:
                        best = (saved, axis, dim)
                    break
        yield Replicated(
            path=a.path,
            module=a.module,
            nbytes=a.nbytes,
            devices=a.devices,
            axis=best[1] if best else None,
            dim=best[2] if best else None,
            saved=best[0] if best else 0,
        )


__all__ = [
    "KINDS",
    "THRESHOLD",
    "ArrayLayout",
    "Block",
    "DeviceBytes",
    "Problem",
    "Replicated",
    "ShardingReport",
    "sharding",
]
