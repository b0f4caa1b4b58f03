"""Logical axis rules (``lens.core.spmd``, like ``flax.core.spmd``).

Rules map *logical* axis names (``'embed'``, ``'mlp'``) to mesh axes
(``('mlp', 'model')``). The rules in effect live in a ``contextvars`` variable:
each thread, task and notebook kernel sees its own.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import jax
from jax.experimental.layout import Format
from jax.sharding import NamedSharding, PartitionSpec

from lens.typing import LogicalRules, Sharding

_rules: contextvars.ContextVar[LogicalRules] = contextvars.ContextVar(
    "lens_logical_axis_rules", default=()
)


def set_logical_axis_rules(rules: LogicalRules) -> None:
    """Sets the logical axis rules of this context (prefer :func:`logical_axis_rules`)."""
    _rules.set(rules)


def get_logical_axis_rules() -> LogicalRules:
    """The logical axis rules in effect."""
    return _rules.get()


@contextlib.contextmanager
def logical_axis_rules(rules: LogicalRules) -> Iterator[None]:
    """Uses ``rules`` (``[(logical, mesh axes or None), ...]``) inside the block.

    Example:
        >>> with logical_axis_rules([("embed", None), ("mlp", "model")]):
        ...     get_logical_axis_rules()
        [('embed', None), ('mlp', 'model')]
    """
    token = _rules.set(rules)
    try:
        yield
    finally:
        _rules.reset(token)


def composite_rules(rule1: LogicalRules, rule2: LogicalRules) -> LogicalRules:
    """The union of two rule sets.

    Raises:
      ValueError: if they map one logical name differently.
    """
    if not rule1 and not rule2:
        return ()
    if rule1 and not rule2:
        return rule1
    if rule2 and not rule1:
        return rule2
    rules = dict(rule1)
    for alias, value in rule2:
        if alias in rules and rules[alias] != value:
            raise ValueError(
                f"Inconsistent logical axis annotations for {alias}: "
                f"{rules[alias]} vs {value}"
            )
        rules[alias] = value
    return tuple(rules.items())


def map_sharding(f: Callable[[Any], Any], sharding: Any) -> Any:
    """Maps ``f`` over the axis names of a ``PartitionSpec`` (or ``NamedSharding``)."""
    if isinstance(sharding, PartitionSpec | tuple):
        return PartitionSpec(*map(f, sharding))
    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, map_sharding(f, sharding.spec))
    if isinstance(sharding, Format):  # a layout with its sharding
        return Format(sharding.layout, map_sharding(f, sharding.sharding))
    return sharding


def get_mesh(sharding: Any) -> Any:
    """The mesh of a ``NamedSharding`` or ``Format`` (None for a spec)."""
    if isinstance(sharding, NamedSharding):
        return sharding.mesh
    if isinstance(sharding, Format):
        return get_mesh(sharding.sharding)
    return None


def get_pspec(
    sharding: Any, sharding_rules: LogicalRules | None = None
) -> PartitionSpec:
    """The mesh ``PartitionSpec`` of logical names, under the rules in effect."""
    if get_logical_axis_rules() or sharding_rules:
        rules = dict(composite_rules(get_logical_axis_rules(), sharding_rules or ()))
    else:
        rules = {}
    return map_sharding(lambda a: rules.get(a, a), sharding)


def apply_rules(sharding: Any, sharding_rules: LogicalRules | None) -> Any:
    """``sharding`` with logical names mapped to mesh axes."""
    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, get_pspec(sharding.spec, sharding_rules))
    return get_pspec(sharding, sharding_rules)


def from_sharding_rules(sharding: Sharding, sharding_rules: LogicalRules) -> Sharding:
    """``sharding`` with each logical name replaced by its mesh axis."""
    rules = dict(sharding_rules)
    return tuple(rules[str(s)] if (s and str(s) in rules) else s for s in sharding)


def shard_value(value: Any, out_sharding: Any, sharding_rules: Any, mesh: Any) -> Any:
    """``value`` constrained (or resharded) to ``out_sharding`` on ``mesh``.

    Raises:
      ValueError: if there is no mesh to shard on.
    """
    if not out_sharding:
        return value
    from lens.core._meta import get_global_mesh

    mesh = mesh if mesh is not None else get_global_mesh()
    out_sharding = apply_rules(out_sharding, sharding_rules)
    mesh = get_mesh(out_sharding) or mesh
    if mesh is None:
        raise ValueError(
            "An auto mesh context or metadata is required if creating a variable "
            f"with annotation {out_sharding=}. For more guidance, see "
            "https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html."
            "\nlens: use jax.set_mesh(mesh) around the model's construction, or "
            "pass a NamedSharding."
        )
    if isinstance(out_sharding, PartitionSpec):
        out_sharding = NamedSharding(mesh, out_sharding)
    if isinstance(out_sharding, Format):
        return jax.lax.with_sharding_constraint(value, out_sharding)
    if getattr(mesh, "are_all_axes_explicit", False):
        return jax.sharding.reshard(value, out_sharding)
    return jax.lax.with_sharding_constraint(value, out_sharding)
