"""Logical axis names and sharding (``nn.LogicallyPartitioned``, ``nn.logical_axis_rules``).

Parameters are annotated with *logical* axis names (``'embed'``, ``'mlp'``,
``'heads'``). Rules map logical names to mesh axes (``('mlp', 'model')``); the same
model then shards differently on another mesh by changing the rules only. lens hands
the resulting specs to JAX's own SPMD partitioner (``NamedSharding``, ``jax.jit``).

Rules are applied in order: each logical axis takes the mesh axes of the first rule
that names it whose mesh axes are still free in that array (a mesh axis shards at
most one dimension). Unmatched logical axes are replicated.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from lens.core._partitioning import Partitioned, current_mesh
from lens.struct import field

LogicalRules = Sequence[tuple[str, str | tuple[str, ...] | None]]


class _Rules(threading.local):
    def __init__(self) -> None:
        self.rules: LogicalRules = ()


_rules = _Rules()


def set_logical_axis_rules(rules: LogicalRules) -> None:
    """Sets the global logical axis rules (prefer :func:`logical_axis_rules`)."""
    _rules.rules = tuple(tuple(r) for r in rules)  # type: ignore[misc]


def get_logical_axis_rules() -> LogicalRules:
    """The logical axis rules in effect."""
    return _rules.rules


@contextlib.contextmanager
def logical_axis_rules(rules: LogicalRules) -> Iterator[None]:
    """Uses ``rules`` (``[(logical, mesh axes or None), ...]``) inside the block.

    Example:
        >>> with logical_axis_rules([("embed", None), ("mlp", "model")]):
        ...     spec = logical_to_mesh_axes(("embed", "mlp"))
        >>> tuple(spec)
        (None, 'model')
    """
    old = _rules.rules
    set_logical_axis_rules(rules)
    try:
        yield
    finally:
        _rules.rules = old


class _Unassigned:
    def __repr__(self) -> str:
        return "_unassigned"


_UNASSIGNED = _Unassigned()


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return x if isinstance(x, tuple) else (x,)


def logical_to_mesh_axes(
    array_dim_names: Sequence[str | None] | None, rules: LogicalRules | None = None
) -> PartitionSpec | None:
    """The ``PartitionSpec`` of an array whose axes have the given logical names.

    Raises:
      ValueError: if a logical name occurs twice, or rules are not a sequence.
    """
    if array_dim_names is None:
        return None
    rules = get_logical_axis_rules() if rules is None else rules
    if not isinstance(rules, list | tuple):
        raise ValueError(
            f"Logical axis rules must be a sequence of (logical, mesh) pairs, got {rules!r}."
        )
    names = list(array_dim_names)
    dups = [k for k, v in collections.Counter(names).items() if v > 1 and k is not None]
    if dups:
        raise ValueError(
            f"Logical axis names {dups} occur more than once in {tuple(names)}; each array "
            "dimension needs its own logical name."
        )
    result: list[Any] = [_UNASSIGNED if isinstance(n, str) else n for n in names]
    for logical, mesh_axes in rules:
        if logical not in names:
            continue
        pos = names.index(logical)
        if result[pos] is not _UNASSIGNED:
            continue
        used: set[Any] = set()
        for r in result:
            if r is not _UNASSIGNED and r is not None:
                used.update(_as_tuple(r))
        if mesh_axes is not None and used & set(_as_tuple(mesh_axes)):
            continue
        result[pos] = mesh_axes
    return PartitionSpec(*[None if r is _UNASSIGNED else r for r in result])


def logical_to_mesh(tree: Any, rules: LogicalRules | None = None) -> Any:
    """Maps a tree of logical ``PartitionSpec``s to mesh ``PartitionSpec``s."""
    return jax.tree_util.tree_map(
        lambda spec: logical_to_mesh_axes(tuple(spec), rules),
        tree,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


def logical_to_mesh_sharding(
    tree: Any, mesh: Mesh, rules: LogicalRules | None = None
) -> Any:
    """Maps a tree of logical ``PartitionSpec``s to ``NamedSharding``s on ``mesh``."""
    return jax.tree_util.tree_map(
        lambda spec: NamedSharding(mesh, logical_to_mesh_axes(tuple(spec), rules)),
        tree,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


def with_logical_constraint(
    x: Any,
    logical_axis_resources: Sequence[str | None] | PartitionSpec,
    rules: LogicalRules | None = None,
    mesh: Mesh | None = None,
) -> Any:
    """``jax.lax.with_sharding_constraint`` by logical names; a no-op with no mesh."""
    mesh = mesh or current_mesh()
    if mesh is None:
        return x
    spec = logical_to_mesh_axes(tuple(logical_axis_resources), rules)
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


class LogicallyPartitioned(Partitioned):
    """A :class:`~lens.nn.Partitioned` box whose names are logical axis names.

    ``get_partition_spec()`` gives the logical spec (as in Flax: map it with
    :func:`logical_to_mesh_sharding`); ``get_sharding(mesh)`` and
    ``nn.get_sharding`` resolve it with the rules (its own ``rules``, else those in
    effect). Inside ``jit`` under a mesh, unboxing constrains the value.
    """

    rules: LogicalRules | None = field(default=None, pytree_node=False)

    def get_mesh_partition_spec(self) -> PartitionSpec:
        """The mesh ``PartitionSpec`` under the logical axis rules in effect.

        (``get_partition_spec`` gives the logical names, as in Flax.)
        """
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

    def unbox(self) -> Any:
        """The value; inside ``jit`` under a mesh, constrained to its sharding."""
        mesh = self.mesh or current_mesh()
        if mesh is None or not isinstance(self.value, jax.core.Tracer):
            return self.value
        return jax.lax.with_sharding_constraint(self.value, self.get_sharding(mesh))


def with_logical_partitioning(
    fn: Callable[..., Any],
    names: Sequence[str | None],
    mesh: Mesh | None = None,
    rules: LogicalRules | None = None,
) -> Callable[..., LogicallyPartitioned]:
    """Wraps an initializer so its result is boxed with logical axis ``names``."""

    def wrapper(*args: Any, **kwargs: Any) -> LogicallyPartitioned:
        return LogicallyPartitioned(fn(*args, **kwargs), tuple(names), mesh, rules)

    return wrapper
