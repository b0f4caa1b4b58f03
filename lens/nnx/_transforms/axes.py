"""Axis names on mapped variables: ``transform_metadata`` (``nnx.PARTITION_NAME``)
added to and removed from variables' sharding as ``vmap``/``scan`` map them, and
``StateAxes`` placed in outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from lens._frozen_dict import FrozenDict
from lens.nnx._graph.walk import Walker, is_graph_node, path_str
from lens.nnx._transforms.recipe import split_args, split_outputs
from lens.nnx._transforms.specs import Carrier, StateAxes, axes_resolver
from lens.nnx._variables.variable import Variable

NO_AXIS_METADATA: Mapping[str, Any] = FrozenDict({})


class AxisNames:
    """``transform_metadata={nnx.PARTITION_NAME: name}``: inside the transform,
    ``name`` is taken out of the ``out_sharding`` of every variable mapped on an
    axis; on the way out it is put back, and put into new objects' variables at
    their out axis (so a stack built by vmap says which axis is the stack)."""

    def __init__(self, name: str, transform_metadata: Mapping[str, Any]):
        self.name = name
        self.meta = transform_metadata if PARTITION_NAME in transform_metadata else None
        if transform_metadata and self.meta is None:
            raise ValueError(
                f"nnx.{name}(transform_metadata={dict(transform_metadata)!r}) names no "
                "axis.\nGive transform_metadata={nnx.PARTITION_NAME: 'axis name'}."
            )

    def enter(self, args: tuple, specs: tuple) -> list[tuple[Any, int]]:
        if self.meta is None:
            return []
        w = Walker(axes_resolver, transform=self.name)
        _, entries = split_args(args, specs, w)
        done = []
        for e in entries:
            if e.leaf is None or e.leaf.variable is None or not _is_axis(e.spec):
                continue
            v = e.leaf.variable
            remove_axis(v, e.spec, self.meta, path_str(e.leaf.path))
            done.append((v, e.spec))
        return done

    def exit(
        self,
        done: list[tuple[Any, int]],
        out: Any,
        out_spec: Any,
        fr: Any,
        args: tuple = (),
        specs: tuple = (),
        hooks: bool = True,
    ) -> None:
        """Puts the axis name back into the variables :meth:`enter` took it
        from, and into variables made inside: in the outputs (at their out axis)
        and in the arguments (at their in axis: an ``__init__`` under vmap).
        ``hooks=False`` updates the metadata without calling the Variables'
        ``add_axis`` (a second trace of a body whose first trace already did)."""
        if self.meta is None:
            return
        seen = set()
        for v, axis in done:
            add_axis(v, axis, self.meta, hooks=hooks)
            seen.add(id(v))
        w = Walker(axes_resolver, transform=self.name)
        leaves = []
        if args:
            split_args(args, specs, w)
            leaves = list(w.leaves)
            w = Walker(axes_resolver, transform=self.name)
        w.frame = fr
        split_outputs(out, out_spec, w)
        for lf in leaves + list(w.leaves):
            if lf.variable is not None and id(lf.variable) not in seen:
                if _is_axis(lf.spec):
                    add_axis(lf.variable, lf.spec, self.meta, hooks=hooks)
                seen.add(id(lf.variable))


def _is_axis(spec: Any) -> bool:
    return isinstance(spec, int) and not isinstance(spec, bool)


def describe_axes(spec: Any) -> str:
    return f"axis {spec!r}"


def place_state_axes(out: Any) -> Any:
    """Moves the values of new objects returned under a StateAxes to their axes
    (they left ``jax.vmap`` on axis 0; a ``None`` axis keeps one copy)."""

    def place(c: Any) -> Any:
        if not isinstance(c, Carrier) or c.axes is None:
            return c
        values = [
            v[0] if ax is None else jnp.moveaxis(v, 0, ax)
            for v, ax in zip(c.values, c.axes, strict=True)
        ]
        return Carrier(values, c.aux)

    return jax.tree.map(place, out, is_leaf=lambda x: isinstance(x, Carrier))


def strip_state_axes(tree: Any) -> Any:
    """``tree`` with each per-variable spec (a StateAxes, or a tree-mode
    ``nnx.prefix`` result: an object of prefixes) as axis 0: its values leave
    ``jax.vmap`` in a Carrier that :func:`place_state_axes` puts in place."""

    def per_variable(x: Any) -> bool:
        return isinstance(x, StateAxes) or (
            is_graph_node(x) and not isinstance(x, Variable)
        )

    return jax.tree.map(
        lambda x: 0 if per_variable(x) else x,
        tree,
        is_leaf=lambda x: x is None or per_variable(x),
    )


PARTITION_NAME = "partition_name"


def _insert(fields: Any, index: int, value: Any) -> tuple[Any, ...]:
    items = list(fields)
    while len(items) < index:
        items.append(None)
    items.insert(index, value)
    return tuple(items)


def _remove(fields: Any, index: int, value: Any, where: str) -> tuple[Any, ...]:
    items = list(fields)
    removed = items.pop(index)
    if removed != value:
        raise ValueError(
            f"Expected to remove {value!r} at index {index} from {tuple(fields)!r}, "
            f"but found {removed!r} (variable {where}).\nThe transform's "
            "transform_metadata must name the axis the variable was mapped on."
        )
    return tuple(items)


def _partition_name(transform_metadata: Mapping[str, Any]) -> tuple[Any, dict]:
    if PARTITION_NAME not in transform_metadata:
        raise ValueError(
            'Trying to transform a Partitioned variable but "partition_name" is not '
            f"specified in transform_metadata: {dict(transform_metadata)}\nPass "
            "transform_metadata={nnx.PARTITION_NAME: 'axis name'}."
        )
    other = dict(transform_metadata)
    return other.pop(PARTITION_NAME), other


def add_axis(
    v: Variable,
    index: int,
    transform_metadata: Mapping[str, Any],
    *,
    hooks: bool = True,
) -> None:
    """Records that a transform added axis ``index`` to ``v`` (its out_axes);
    ``v.add_axis`` (the Variable's hooks) runs unless ``hooks=False``."""
    name, other = _partition_name(transform_metadata)
    meta = v.metadata
    if meta.get("out_sharding"):
        meta["out_sharding"] = _insert(meta["out_sharding"], index, name)
    for k, val in other.items():
        if isinstance(meta.get(k), tuple) and meta[k]:
            meta[k] = _insert(meta[k], index, val)
    if hooks:
        v.add_axis(index, name)


def remove_axis(
    v: Variable, index: int, transform_metadata: Mapping[str, Any], where: str
) -> None:
    """Records that a transform removed axis ``index`` of ``v`` (its in_axes)."""
    name, other = _partition_name(transform_metadata)
    meta = v.metadata
    if meta.get("out_sharding"):
        meta["out_sharding"] = _remove(meta["out_sharding"], index, name, where)
    for k, val in other.items():
        if isinstance(meta.get(k), tuple) and meta[k]:
            meta[k] = _remove(meta[k], index, val, where)
    v.remove_axis(index, name)
