"""Logical axis names and sharding (``lens.nn.spmd``, like ``flax.linen.spmd``).

Parameters are annotated with *logical* axis names (``'embed'``, ``'mlp'``,
``'heads'``). Rules map logical names to mesh axes (``('mlp', 'model')``); the same
model then shards differently on another mesh by changing the rules only. lens hands
the resulting specs to JAX's own SPMD partitioner (``NamedSharding``, ``jax.jit``).

Rules are applied in order: each logical axis takes the mesh axes of the first rule
that names it whose mesh axes are still free in that array (a mesh axis shards at
most one dimension). Unmatched logical axes are replicated (or, with another
:class:`RulesFallback`, raise or stay unconstrained).

(The code lives here rather than in a private module so that tests written for
Flax can patch ``spmd._with_sharding_constraint``.)
"""

from __future__ import annotations

import collections
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.core
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from lens import struct
from lens.core import Partitioned, current_mesh
from lens.core import meta as _meta
from lens.core.spmd import get_logical_axis_rules as get_logical_axis_rules
from lens.core.spmd import logical_axis_rules as logical_axis_rules
from lens.core.spmd import set_logical_axis_rules as set_logical_axis_rules
from lens.typing import ArrayPytree, LogicalNames, LogicalRules


class _UnassignedAxis:
    """Marks a named axis that no rule has assigned yet."""

    def __repr__(self) -> str:
        return "UnassignedAxis"

    def __bool__(self) -> bool:
        return False


_unassigned_axis = _UnassignedAxis()


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return x if isinstance(x, tuple) else (x,)


def _mesh_assignment_free(new_assignment: Any, existing: Sequence[Any]) -> bool:
    """Whether ``new_assignment``'s mesh axes are unused (None and UNCONSTRAINED repeat)."""
    free = (None, PartitionSpec.UNCONSTRAINED)
    used = set()
    for a in existing:
        if a is not _unassigned_axis and a not in free:
            used.update(_as_tuple(a))
    if new_assignment in free:
        return True
    return not (set(_as_tuple(new_assignment)) & used)


def _logical_to_mesh_axes(
    array_dim_names: Sequence[str | None] | None, rules: LogicalRules | None = None
) -> list[Any] | None:
    """``logical_to_mesh_axes`` without filling in unassigned axes."""
    if array_dim_names is None:
        return None
    if rules is None:
        rules = get_logical_axis_rules()
    names = list(array_dim_names)
    dups = tuple(
        k for k, v in collections.Counter(names).items() if v > 1 and isinstance(k, str)
    )
    if dups:
        raise ValueError(
            f"Unsupported: Dimensions {dups} occur more than once in array names.\n"
            "Give each array dimension its own logical name."
        )
    if not isinstance(rules, tuple | list):
        raise ValueError(
            "Unknown axis rule specification type.\nRules are a sequence of "
            "(logical name, mesh axes) pairs."
        )
    result: list[Any] = [_unassigned_axis if isinstance(n, str) else n for n in names]
    for logical, mesh_names in rules:
        if logical in names:
            pos = names.index(logical)
            if result[pos] is _unassigned_axis and _mesh_assignment_free(
                mesh_names, result
            ):
                result[pos] = mesh_names
    return result


def logical_to_mesh_axes(
    array_dim_names: Sequence[str | None] | None, rules: LogicalRules | None = None
) -> PartitionSpec | None:
    """The mesh ``PartitionSpec`` of an array whose axes have the given logical names.

    Unassigned names are replicated (``None``).

    Example:
        >>> with logical_axis_rules([("embed", None), ("mlp", "model")]):
        ...     tuple(logical_to_mesh_axes(("embed", "mlp")))
        (None, 'model')

    Raises:
      ValueError: if a logical name occurs twice, or rules are not a sequence.
    """
    result = _logical_to_mesh_axes(array_dim_names, rules)
    if result is None:
        return None
    return PartitionSpec(*[None if x is _unassigned_axis else x for x in result])


def logical_to_mesh(tree: Any, rules: LogicalRules | None = None) -> Any:
    """Maps a tree of logical ``PartitionSpec``s to mesh ``PartitionSpec``s."""
    return jax.tree_util.tree_map(
        lambda x: logical_to_mesh_axes(x, rules),
        tree,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


def logical_to_mesh_sharding(
    tree: Any, mesh: Mesh, rules: LogicalRules | None = None
) -> Any:
    """Maps a tree of logical ``PartitionSpec``s to ``NamedSharding``s on ``mesh``."""
    return jax.tree_util.tree_map(
        lambda x: NamedSharding(mesh, x),
        logical_to_mesh(tree, rules),
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


class RulesFallback(enum.Enum):
    """What a constraint does for a logical name that no rule maps."""

    AXIS_IS_UNSHARDED = "axis_is_unsharded"
    RAISE_ERROR = "raise_error"
    NO_CONSTRAINT = "no_constraint"


def _with_sharding_constraint(
    x: Any, axis_resources: PartitionSpec | None, mesh: Mesh | None = None
) -> Any:
    """``lax.with_sharding_constraint``; a no-op without a mesh."""
    if mesh is None and not _meta.global_mesh_defined():
        mesh = current_mesh()
        if mesh is None:
            return x
        if axis_resources is None:
            return x
        return lax.with_sharding_constraint(x, NamedSharding(mesh, axis_resources))
    if mesh is not None and axis_resources is not None:
        return lax.with_sharding_constraint(x, NamedSharding(mesh, axis_resources))
    return lax.with_sharding_constraint(x, axis_resources)


def _with_sharding_constraint_one_fallback(
    axis_resources: Any,
    x: Any,
    fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
    rules: LogicalRules | None = None,
    mesh: Mesh | None = None,
) -> Any:
    mesh_axes = _logical_to_mesh_axes(axis_resources, rules)
    if mesh_axes is None:
        return _with_sharding_constraint(x, None, mesh=mesh)
    if fallback == RulesFallback.AXIS_IS_UNSHARDED:
        mesh_axes = [None if a is _unassigned_axis else a for a in mesh_axes]
    elif any(a is _unassigned_axis for a in mesh_axes):
        if fallback == RulesFallback.RAISE_ERROR:
            raise ValueError(
                f"Axis names {axis_resources} did not match a rule\nAdd a rule for "
                "each logical name, or use RulesFallback.AXIS_IS_UNSHARDED."
            )
        return x
    return _with_sharding_constraint(x, PartitionSpec(*mesh_axes), mesh=mesh)


def _is_axis_spec(x: Any) -> bool:
    return isinstance(x, str) or x is PartitionSpec.UNCONSTRAINED or x is None


def _is_logical_spec(x: Any) -> bool:
    return x is None or (isinstance(x, tuple) and all(_is_axis_spec(e) for e in x))


def with_logical_constraint(
    x: ArrayPytree,
    logical_axis_resources: Any,
    rules: LogicalRules | None = None,
    mesh: Mesh | None = None,
    fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
) -> Any:
    """``jax.lax.with_sharding_constraint`` by logical names.

    A no-op when no rules are in effect or there is no mesh.
    """
    if rules is None:
        rules = get_logical_axis_rules()
    if not rules or logical_axis_resources is None:
        return x
    return jax.tree_util.tree_map(
        functools.partial(
            _with_sharding_constraint_one_fallback,
            fallback=fallback,
            rules=rules,
            mesh=mesh,
        ),
        logical_axis_resources,
        x,
        is_leaf=_is_logical_spec,
    )


class LogicallyPartitioned(Partitioned):
    """A :class:`~lens.nn.Partitioned` box whose names are logical axis names.

    ``get_partition_spec()`` gives the logical spec (map it with
    :func:`logical_to_mesh_sharding`); ``get_sharding(mesh)`` (lens) resolves it
    with the rules. Unboxing under a mesh constrains the value by the rules.
    """

    rules: LogicalRules | None = struct.field(default=None, pytree_node=False)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is self.__class__:
            return (self.value,) == (other.value,)  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def unbox(self, apply_constraint: bool = True) -> Any:
        """The value, constrained to its sharding when a mesh is in effect."""
        if apply_constraint and (_meta.global_mesh_defined() or self.mesh is not None):
            return with_logical_constraint(
                self.value, self.get_partition_spec(), rules=self.rules, mesh=self.mesh
            )
        mesh = self.mesh or current_mesh()
        if (
            apply_constraint
            and mesh is not None
            and isinstance(self.value, jax.core.Tracer)
        ):
            return lax.with_sharding_constraint(self.value, self.get_sharding(mesh))
        return self.value

    def get_mesh_partition_spec(self) -> PartitionSpec:
        """The mesh ``PartitionSpec`` under the rules (lens; Flax has the logical one)."""
        spec = logical_to_mesh_axes(self.names, self.rules)
        assert spec is not None
        return spec

    def get_sharding(self, mesh: Mesh | None = None) -> NamedSharding:
        """The ``NamedSharding`` on ``mesh``, mapping logical names with the rules."""
        mesh = mesh or self.mesh or current_mesh()
        if mesh is None:
            raise ValueError(
                "get_sharding needs a mesh: pass one, or use jax.set_mesh(mesh)."
            )
        return NamedSharding(mesh, self.get_mesh_partition_spec())

    def to_nnx_metadata(self) -> dict[str, Any]:
        """The metadata as ``lens.nnx`` variable metadata."""
        metadata = dict(vars(self))
        if "names" in metadata:
            metadata["out_sharding"] = metadata.pop("names")
        if "rules" in metadata:
            metadata["sharding_rules"] = metadata.pop("rules")
        return metadata

    @classmethod
    def from_nnx_metadata(cls, metadata: dict[str, Any]) -> LogicallyPartitioned:
        """A box from ``lens.nnx`` variable metadata."""
        import dataclasses

        metadata = dict(metadata)
        metadata["names"] = metadata.pop("out_sharding")
        metadata["rules"] = metadata.pop("sharding_rules", None)
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in metadata.items() if k in fields})


def with_logical_partitioning(
    fn: Callable[..., Any],
    names: LogicalNames,
    mesh: Mesh | None = None,
    rules: LogicalRules | None = None,
) -> Callable[..., LogicallyPartitioned]:
    """Wraps an initializer so its result is boxed with logical axis ``names``.

    Example:
        >>> import jax
        >>> init = with_logical_partitioning(jax.nn.initializers.ones, ("embed", "mlp"))
        >>> init(jax.random.key(0), (2, 3)).names
        ('embed', 'mlp')
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> LogicallyPartitioned:
        return LogicallyPartitioned(fn(*args, **kwargs), names, mesh=mesh, rules=rules)

    return wrapper
