"""What can be wrong with an array's sharding, found before anything compiles.

:class:`Checks` resolves each annotation the way lens does when it places the
array (``nn.LogicallyPartitioned`` through lens.nn's rule resolution, an nnx
Variable's ``out_sharding`` through lens.nnx's ``get_var_pspec``, an
``nn.Partitioned`` box's mesh axes as they are), then checks the mesh spec
against the array and the mesh, and records each mistake as a :class:`Problem`
naming the variable's path, its module and the rule or mesh axis at fault.

The mistakes are those that JAX reports only when it places or compiles the
array, deep inside (a spec naming a mesh axis the mesh lacks, a dimension not
divisible by its mesh axes, a spec longer than the array's rank, one mesh axis
on two dimensions), and those nothing reports: lens.nn replicates a logical
name without a rule silently, and splits only one of two dimensions whose rules
name the same mesh axis (the silent rule conflicts of maxtext's issues).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import jax
from jax.sharding import Mesh, PartitionSpec

from lens.core import AxisMetadata, is_axis_metadata
from lens.core.spmd import composite_rules, get_logical_axis_rules
from lens.core.spmd import logical_axis_rules as rules_in_effect

KINDS = {
    "no-rule": "a logical axis name that no rule maps to a mesh axis",
    "axis-conflict": "one mesh axis asked to split two dimensions of one array",
    "indivisible": "a dimension not divisible by the size of its mesh axes",
    "unknown-axis": "a mesh axis that the mesh does not have",
    "rank": "a spec naming more dimensions than the array has",
    "duplicate-name": "one logical name on two dimensions of one array",
    "rules-disagree": "two rule sets, or two rules, map one name differently",
    "placement": "an array placed otherwise than its annotation says",
    "no-sharding": "an abstract array without a sharding among sharded ones",
    "not-on-mesh": "an array on devices outside the mesh",
    "no-mesh": "axis names but no mesh to lay them out on",
}
"""Each kind of problem lens reports, in plain words."""

COLLECTIONS = frozenset(
    {"params", "batch_stats", "cache", "intermediates", "losses", "stats", "state"}
)
"""First path keys read as a Linen collection, not a module (``params/Dense_0``)."""


@dataclasses.dataclass(frozen=True)
class Problem:
    """A sharding mistake, found before anything compiles."""

    kind: str  # see KINDS
    path: str  # the variable, "params/Dense_0/kernel" or "/layers/0/linear/kernel"
    module: str  # its module path, "/Dense_0"
    axis: str | None  # the logical name or mesh axis at fault
    rule: str | None  # the rule at fault, "('mlp', 'model')"
    message: str  # what, where, how to fix (two to four lines)

    def line(self) -> str:
        """The message's first line."""
        return self.message.splitlines()[0]


def short_type(dtype: str, shape: tuple[int, ...]) -> str:
    """``f32[8,32]``."""
    for long, short in (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i")):
        if dtype.startswith(long):
            dtype = short + dtype[len(long) :]
            break
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


# -- the leaves of the tree


class Leaf(NamedTuple):
    """One array of the tree, as found: its value and its annotation."""

    keys: tuple[str, ...]
    path: str
    module: str
    value: Any  # a jax Array, a ShapeDtypeStruct, a NumPy array
    box: Any  # a Linen box, an nnx Variable, or None


def _key(k: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def loaded_nnx() -> Any:
    """lens.nnx, if it is loaded (no nnx object exists before)."""
    return sys.modules.get("lens.nnx")


def is_variable(x: Any) -> bool:
    """Whether ``x`` is an nnx Variable (without importing lens.nnx)."""
    nnx = loaded_nnx()
    return nnx is not None and isinstance(x, nnx.Variable)


def leaves(tree: Any) -> Iterator[Leaf]:
    """Each array of ``tree`` with its path, module path and annotation (a Linen
    box, an nnx Variable); nnx paths start with ``/``, Linen's with the
    collection."""
    nnx = loaded_nnx()
    nnx_style = False
    if nnx is not None and (
        isinstance(tree, nnx.State) or nnx.graph.is_graph_node(tree)
    ):
        nnx_style = True
        if not isinstance(tree, nnx.State):
            tree = nnx.state(tree)

    def stop(x: Any) -> bool:
        return is_axis_metadata(x) or is_variable(x)

    flat = jax.tree_util.tree_flatten_with_path(tree, is_leaf=stop)[0]
    for path, x in flat:
        keys = tuple(_key(k) for k in path)
        if nnx_style:
            name, module = "/" + "/".join(keys), "/" + "/".join(keys[:-1])
        else:
            name = "/".join(keys)
            inner = keys[1:-1] if keys and keys[0] in COLLECTIONS else keys[:-1]
            module = "/" + "/".join(inner)
        if is_variable(x):
            value, box = getattr(x, "_raw_value", None), x
        elif isinstance(x, AxisMetadata):
            value, box = _unboxed(x), x
        else:
            value, box = x, None
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            yield Leaf(keys, name or type(x).__name__, module, value, box)


def _unboxed(box: AxisMetadata) -> Any:
    value = getattr(box, "value", None)
    while isinstance(value, AxisMetadata):
        value = getattr(value, "value", None)
    return value


# -- resolving an annotation into a mesh spec


def rules_of(rules: Any) -> tuple[tuple[str, Any], ...]:
    if rules is None:
        rules = get_logical_axis_rules()
    if isinstance(rules, Mapping):
        rules = list(rules.items())
    return tuple((str(k), v) for k, v in rules)


def axes_of(entry: Any) -> tuple[str, ...]:
    """The mesh axes of one spec entry (None, ``'model'``, ``('data', 'model')``)."""
    if entry is None or entry is PartitionSpec.UNCONSTRAINED:
        return ()
    if isinstance(entry, tuple | list):
        return tuple(str(a) for a in entry if a is not None)
    return (str(entry),)


def _and_more(n: int) -> str:
    return f" and {n} more annotated array{'s' if n > 1 else ''}" if n else ""


def rule_str(name: Any, axes: Any) -> str:
    return f"({name!r}, {axes!r})"


def names_str(names: Sequence[Any]) -> str:
    """``('embed', 'mlp')``, ``('model',)``."""
    return repr(tuple(names))


def spec_str(spec: Sequence[Any]) -> str:
    return repr(PartitionSpec(*spec))


class Plan(NamedTuple):
    """An annotation resolved: the mesh spec and, per dimension, where it came
    from (the logical name and its rule)."""

    spec: tuple[Any, ...] | None  # None: it could not be resolved
    origin: tuple[tuple[Any, str | None], ...]  # per named dimension
    names: tuple[Any, ...] | None


class Checks:
    """Everything one call of :func:`sharding` knows, and the problems found."""

    def __init__(self, mesh: Mesh | None, rules: tuple[tuple[str, Any], ...]):
        self.mesh = mesh
        self.rules = rules
        self.problems: list[Problem] = []
        self.no_mesh: list[Leaf] = []
        self.named: set[tuple[str, str]] = set()  # (path, name) without a rule
        self.without_rules: list[tuple[Leaf, str]] = []  # logical names, no rules

    def finish(self) -> None:
        """The problems that are one for the whole tree: logical names but no
        rules at all; axis names but no mesh."""
        if self.without_rules:
            leaf, then = self.without_rules[0]
            self.report(
                "no-rule",
                leaf,
                f"{self.where(leaf)}{_and_more(len(self.without_rules) - 1)} name "
                f"logical axes, but no rules are in effect; {then}.\nfix: run "
                "under nn.logical_axis_rules(rules) (nnx too), or pass rules= to "
                "lens.sharding.",
            )
        if self.no_mesh:
            leaf = self.no_mesh[0]
            self.report(
                "no-mesh",
                leaf,
                f"{self.where(leaf)}{_and_more(len(self.no_mesh) - 1)} name axes, "
                "but there is no mesh to lay them out on (an empty mesh counts as "
                "none).\nlens.nnx raises 'An auto mesh context ... is required' "
                "when it creates them; under an empty mesh JAX fails deep inside "
                "(flax#5124).\nfix: pass mesh= to lens.sharding, or run under "
                "jax.set_mesh(mesh).",
            )

    def report(
        self,
        kind: str,
        leaf: Leaf,
        message: str,
        axis: Any = None,
        rule: str | None = None,
    ) -> None:
        self.problems.append(
            Problem(
                kind,
                leaf.path,
                leaf.module,
                None if axis is None else str(axis),
                rule,
                message,
            )
        )

    # -- one annotation

    def plan(self, leaf: Leaf, mesh: Mesh | None) -> Plan | None:
        """The spec the annotation of ``leaf`` asks for, or None if it has none."""
        box = leaf.box
        if box is None:
            return None
        if is_variable(box):
            names = box.metadata.get("out_sharding")
            if not names:
                return None
            return self._variable(leaf, tuple(names), mesh)
        names = getattr(box, "names", None)
        if names is None:
            return None
        names = tuple(names)
        if hasattr(box, "get_mesh_partition_spec"):  # nn.LogicallyPartitioned
            return self._logical(leaf, names)
        return self._mesh_names(leaf, names)

    def where(self, leaf: Leaf) -> str:
        """``params/Dense_0/kernel (module /Dense_0, f32[8,32])``."""
        where = f"module {leaf.module}" if leaf.module != "/" else "the top module"
        type_ = short_type(str(leaf.value.dtype), tuple(leaf.value.shape))
        return f"{leaf.path} ({where}, {type_})"

    def _duplicates(self, leaf: Leaf, names: tuple[Any, ...]) -> bool:
        seen = [n for n in names if isinstance(n, str)]
        dups = sorted({n for n in seen if seen.count(n) > 1})
        if not dups:
            return False
        dims = [i for i, n in enumerate(names) if n == dups[0]]
        self.report(
            "duplicate-name",
            leaf,
            f"{self.where(leaf)}: the logical name {dups[0]!r} names dimensions "
            f"{dims[0]} and {dims[1]} of {names_str(names)}.\n"
            "lens.nn raises 'Dimensions occur more than once' when it resolves it.\n"
            "fix: give each dimension its own name (e.g. 'embed' and 'embed_out').",
            dups[0],
        )
        return True

    def _logical(self, leaf: Leaf, names: tuple[Any, ...]) -> Plan | None:
        """A Linen ``LogicallyPartitioned`` box: lens.nn's resolution, and why a
        named dimension came out unsplit."""
        box = leaf.box
        rules = self.rules if box.rules is None else rules_of(box.rules)
        if self._duplicates(leaf, names):
            return Plan(None, (), names)
        with rules_in_effect(rules):
            spec = tuple(box.get_mesh_partition_spec())  # lens.nn's own resolution
        spec = spec + (None,) * (len(names) - len(spec))
        origin: list[tuple[Any, str | None]] = []
        for i, name in enumerate(names):
            if not isinstance(name, str):
                origin.append((name, None))
                continue
            found = [m for logical, m in rules if logical == name]
            chosen = next((m for m in found if m == spec[i]), None)
            origin.append((name, rule_str(name, chosen) if found else None))
            if spec[i] is not None:
                continue
            wanted = [m for m in found if axes_of(m)]
            if not found:
                self._no_rule(leaf, names, i, "lens.nn replicates it silently")
            elif wanted:
                self._silent_conflict(leaf, names, spec, rules, i, wanted)
        return Plan(spec, tuple(origin), names)

    def _no_rule(self, leaf: Leaf, names: tuple[Any, ...], i: int, then: str) -> None:
        name = names[i]
        self.named.add((leaf.path, name))
        if not self.rules:  # none at all: one problem for the tree (see finish)
            if not any(n == leaf for n, _ in self.without_rules):
                self.without_rules.append((leaf, then))
            return
        close = difflib.get_close_matches(name, [r for r, _ in self.rules], n=1)
        hint = (
            f" (is the rule {rule_str(close[0], dict(self.rules)[close[0]])} a typo?)"
            if close
            else ""
        )
        example = close and dict(self.rules)[close[0]]
        if not example and self.mesh is not None:  # the largest axis that divides
            sizes = dict(self.mesh.shape)
            fits = [a for a in sizes if leaf.value.shape[i] % sizes[a] == 0]
            example = max(fits, key=lambda a: sizes[a], default=None)
        self.report(
            "no-rule",
            leaf,
            f"{self.where(leaf)}: the logical axis {name!r} (dimension {i} of "
            f"{names_str(names)}) has no rule{hint}; {then}.\n"
            f"fix: add ({name!r}, {example or 'a mesh axis'!r}) to the rules "
            f"(nn.logical_axis_rules or rules=), or ({name!r}, None) to replicate "
            "it on purpose.",
            name,
        )

    def _silent_conflict(
        self,
        leaf: Leaf,
        names: tuple[Any, ...],
        spec: tuple[Any, ...],
        rules: tuple[tuple[str, Any], ...],
        i: int,
        wanted: list[Any],
    ) -> None:
        name = names[i]
        taken = set(axes_of(wanted[0]))
        j = next(
            (k for k, e in enumerate(spec) if k != i and taken & set(axes_of(e))), None
        )
        other = names[j] if j is not None else None
        other_rule = (
            next(
                (rule_str(n, m) for n, m in rules if n == other and m == spec[j]), None
            )
            if j is not None
            else None
        )
        axis = sorted(taken)[0]
        self.report(
            "axis-conflict",
            leaf,
            f"{self.where(leaf)}: {name!r} (dimension {i}) and {other!r} (dimension "
            f"{j}) both map to mesh axis {axis!r} (rules {rule_str(name, wanted[0])}"
            f" and {other_rule}); a mesh axis splits one dimension, so lens.nn splits "
            f"dimension {j} and silently replicates dimension {i}.\n"
            f"fix: map {name!r} to another mesh axis, or to None on purpose.",
            axis,
            rule_str(name, wanted[0]),
        )

    def _mesh_names(self, leaf: Leaf, names: tuple[Any, ...]) -> Plan:
        """A Linen ``Partitioned`` box: its names are mesh axes."""
        spec = tuple(leaf.box.get_partition_spec())
        return Plan(spec, tuple((None, None) for _ in spec), names)

    def _variable(self, leaf: Leaf, names: tuple[Any, ...], mesh: Mesh | None) -> Plan:
        """An nnx Variable's ``out_sharding``: lens.nnx's resolution (each name
        that a rule maps becomes its mesh axes; any other name is a mesh axis)."""
        from lens.nnx.spmd import get_var_pspec

        variable = leaf.box
        local = rules_of(variable.metadata.get("sharding_rules") or ())
        try:
            rules = tuple(composite_rules(self.rules, local))
        except ValueError as err:
            self.report(
                "rules-disagree",
                leaf,
                f"{self.where(leaf)}: its sharding_rules and the rules in effect "
                f"map one name differently ({err}).\nlens.nnx raises this "
                "ValueError when it places the variable.\nfix: drop the variable's "
                "sharding_rules= or make the two agree.",
            )
            return Plan(None, (), names)
        if self._duplicates(leaf, names):
            return Plan(None, (), names)
        with rules_in_effect(self.rules):
            spec = tuple(get_var_pspec(variable) or ())  # lens.nnx's own resolution
        table: dict[str, list[Any]] = {}
        for logical, m in rules:
            table.setdefault(logical, []).append(m)
        origin: list[tuple[Any, str | None]] = []
        for i, name in enumerate(names):
            if not isinstance(name, str) or name not in table:
                origin.append((name, None))
                if isinstance(name, str) and mesh is not None:
                    if name not in mesh.axis_names:
                        self._no_rule(
                            leaf,
                            names,
                            i,
                            "lens.nnx takes it for a mesh axis, and JAX raises "
                            "'Resource axis ... is not found in mesh' when it places "
                            "the variable",
                        )
                continue
            used = table[name][-1]
            origin.append((name, rule_str(name, used)))
            distinct = {repr(m) for m in table[name]}
            if len(distinct) > 1:
                self.report(
                    "rules-disagree",
                    leaf,
                    f"{self.where(leaf)}: the rules map {name!r} "
                    f"{len(table[name])} ways ("
                    + ", ".join(rule_str(name, m) for m in table[name])
                    + f"); lens.nnx uses the last, {rule_str(name, used)}, where "
                    "lens.nn takes the first whose mesh axes are free.\nfix: keep "
                    f"one rule for {name!r} in the rules nnx sees.",
                    name,
                    rule_str(name, used),
                )
        return Plan(spec, tuple(origin), names)

    # -- a mesh spec against the array and the mesh

    def validate(
        self, leaf: Leaf, spec: tuple[Any, ...], plan: Plan | None, mesh: Mesh
    ) -> bool:
        """Whether ``spec`` lays ``leaf`` out on ``mesh``; reports why not."""
        shape = tuple(leaf.value.shape)
        origin = plan.origin if plan is not None else ()
        named = spec_str(spec)

        def whence(i: int) -> str:
            if i < len(origin) and origin[i][1] is not None:
                return f" (logical {origin[i][0]!r}, rule {origin[i][1]})"
            return ""

        def rule(i: int) -> str | None:
            return origin[i][1] if i < len(origin) else None

        if len(spec) > len(shape):
            names = plan.names if plan is not None and plan.names else spec
            self.report(
                "rank",
                leaf,
                f"{self.where(leaf)}: {named} names {len(spec)} dimensions, but "
                f"the array has {len(shape)}.\nJAX raises when it places it, without "
                "the path (an AssertionError, or 'incompatible with its sharding "
                "annotation').\nfix: annotate it "
                f"with {len(shape)} name{'s' if len(shape) != 1 else ''} (a bias "
                "takes the kernel's last name, "
                f"e.g. {names_str(tuple(names)[-len(shape) :] if shape else ())}).",
                rule=rule(0),
            )
            return False
        ok = True
        sizes = dict(mesh.shape)
        used: dict[str, int] = {}
        for i, entry in enumerate(spec):
            for a in axes_of(entry):
                if a not in sizes:
                    ok = False
                    if (leaf.path, a) in self.named:
                        continue  # reported as a logical name without a rule
                    logical = self._logical_name(a)
                    hint = (
                        f"{a!r} has a rule, {rule_str(a, dict(self.rules)[a])}: "
                        "annotate with nn.with_logical_partitioning (names through "
                        "the rules), not nn.with_partitioning (mesh axes)."
                        if logical
                        else f"use one of {tuple(mesh.axis_names)}, or None to "
                        "replicate"
                        + (f"; or fix the rule {rule(i)}" if rule(i) else "")
                        + "."
                    )
                    self.report(
                        "unknown-axis",
                        leaf,
                        f"{self.where(leaf)}: dimension {i} of {named}{whence(i)} "
                        f"names mesh axis {a!r}, which the {mesh_str(mesh)} does "
                        "not have.\nJAX raises 'Resource axis ... is not found in "
                        f"mesh' when it places it.\nfix: {hint}",
                        a,
                        rule(i),
                    )
                elif a in used:
                    ok = False
                    j = used[a]
                    self.report(
                        "axis-conflict",
                        leaf,
                        f"{self.where(leaf)}: dimensions {j}{whence(j)} and "
                        f"{i}{whence(i)} of {named} are both split over mesh axis "
                        f"{a!r}.\nJAX raises DuplicateSpecError when it places it.\n"
                        f"fix: map one of them to another mesh axis, or to None.",
                        a,
                        rule(i),
                    )
                else:
                    used[a] = i
        if not ok:
            return False
        for i, entry in enumerate(spec):
            axes = axes_of(entry)
            parts = math.prod(sizes[a] for a in axes)
            if axes and shape[i] % parts:
                ok = False
                fits = [a for a in mesh.axis_names if shape[i] % sizes[a] == 0]
                fits = [a for a in fits if sizes[a] > 1]
                other = (
                    f", or split it over {fits[0]!r} ({sizes[fits[0]]}), which divides "
                    f"{shape[i]}"
                    if fits
                    else ""
                )
                pad = -(-shape[i] // parts) * parts
                self.report(
                    "indivisible",
                    leaf,
                    f"{self.where(leaf)}: dimension {i} has {shape[i]} entries, "
                    f"not divisible by {'×'.join(axes)} ({parts}) of {named}"
                    f"{whence(i)}.\nJAX raises IndivisibleError when it places it."
                    f"\nfix: pad it to {pad}{other}, or replicate it (None).",
                    "×".join(axes),
                    rule(i),
                )
        return ok

    def _logical_name(self, axis: str) -> bool:
        return axis in dict(self.rules)

    def mismatch(
        self, leaf: Leaf, names: tuple[Any, ...], intended: Any, has: Any
    ) -> None:
        """An array whose sharding is not the one its annotation asks for."""
        verb = "placed" if placed(leaf.value) else "given the sharding"
        fix = (
            "create the model under jax.set_mesh(mesh) (eager sharding), or "
            "jax.device_put it onto its sharding."
            if is_variable(leaf.box)
            else "create it with jax.jit(model.init, out_shardings="
            "nn.get_sharding(abstract, mesh)), or jax.device_put it onto its sharding."
        )
        self.report(
            "placement",
            leaf,
            f"{self.where(leaf)}: its annotation {names_str(names)} asks for "
            f"{spec_str(tuple(intended.spec))} on the {mesh_str(intended.mesh)}, "
            f"but it is {verb} {placement(has)}.\nEach step then reshards it, or "
            f"each device holds all of it.\nfix: {fix}",
        )


def placement(s: Any) -> str:
    spec = getattr(s, "spec", None)
    devices = len(s.device_set)
    where = (
        f"on {devices} devices"
        if devices > 1
        else f"on device {next(iter(s.device_set)).id} alone"
    )
    if spec is not None:
        return f"{spec_str(tuple(spec))} {where}"
    return where


def mesh_str(mesh: Mesh) -> str:
    shape = "x".join(str(n) for n in mesh.shape.values())
    return f"{shape} mesh {tuple(mesh.axis_names)}"


def placed(x: Any) -> bool:
    """Whether ``x`` is an array on devices (not a tracer or an abstract value).
    A deleted (donated) array still is: its sharding says where it was."""
    if not isinstance(x, jax.Array):
        return False
    try:
        return hasattr(x, "addressable_shards")
    except RuntimeError:  # deleted: JAX refuses to list its shards
        return True
