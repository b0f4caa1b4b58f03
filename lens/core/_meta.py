"""Axis metadata: boxes that carry per-axis information through lifted transforms.

A box wraps a value (usually an array) and some metadata about its axes. Modules see
the unboxed value by default; ``vmap``/``scan`` call :meth:`AxisMetadata.remove_axis`
on the way in and :meth:`AxisMetadata.add_axis` on the way out with the transform's
``metadata_params``.
"""

from __future__ import annotations

import abc
import functools
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from lens._facades import show_at_flax_paths
from lens._views import Displayable

A = TypeVar("A")
TAxisMetadata = TypeVar("TAxisMetadata", bound="AxisMetadata[Any]")


class AxisMetadata(Displayable, Generic[A], metaclass=abc.ABCMeta):
    """Abstract base class for boxed metadata; generic in the boxed value's type.

    ``AxisMetadata[jax.Array]`` annotates a box holding an array.

    Subclasses must be pytree nodes whose leaves are the leaves of ``unbox()``, so
    ``jax.tree.map`` over a boxed tree maps over the values and keeps the boxes. The
    easiest way is ``class MyBox(lens.struct.PyTreeNode, AxisMetadata)``.

    ``add_axis`` and ``remove_axis`` must be inverses:
    ``x.add_axis(i, p).remove_axis(i, p) == x``.
    """

    __lens_view__ = "axis metadata"  # drawn by lens.display
    __lens_protocols__ = ("bundle", "rich")

    @abc.abstractmethod
    def unbox(self) -> Any:
        """Returns the wrapped value (not recursively unboxed)."""

    @abc.abstractmethod
    def replace_boxed(self: TAxisMetadata, val: Any) -> TAxisMetadata:
        """Returns a box like this one holding ``val`` instead."""

    @abc.abstractmethod
    def add_axis(
        self: TAxisMetadata, index: int, params: dict[Any, Any]
    ) -> TAxisMetadata:
        """Returns the box with metadata for a new axis inserted at ``index``.

        Args:
          index: where the new axis is inserted.
          params: the ``metadata_params`` of the transform that adds the axis.
        """

    @abc.abstractmethod
    def remove_axis(
        self: TAxisMetadata, index: int, params: dict[Any, Any]
    ) -> TAxisMetadata:
        """Returns the box with the metadata of axis ``index`` removed.

        Args:
          index: the axis being removed.
          params: the ``metadata_params`` of the transform that added the axis.
        """


# Boxes display through lens.display (registered there; loaded when one is shown).


def is_axis_metadata(val: Any) -> bool:
    """True if ``x`` is an :class:`AxisMetadata` box."""
    return isinstance(val, AxisMetadata)


def unbox(tree: Any) -> Any:
    """Strips every :class:`AxisMetadata` box from ``tree``, recursively.

    Example:
        >>> unbox({"a": 1})
        {'a': 1}
    """
    return jax.tree_util.tree_map(
        lambda x: unbox(x.unbox()) if isinstance(x, AxisMetadata) else x,
        tree,
        is_leaf=is_axis_metadata,
    )


@functools.cache
def _takes_apply_constraint(cls: type) -> bool:
    try:
        return "apply_constraint" in inspect.signature(cls.unbox).parameters
    except (TypeError, ValueError):
        return False


def raw_value(box: AxisMetadata) -> Any:
    """The value inside ``box``, without the sharding constraint ``unbox`` may add.

    Used where a boxed value is taken out only to be reshaped or replaced: the
    constraint belongs to the final value, whose rank may differ.
    """
    if _takes_apply_constraint(type(box)):
        return box.unbox(apply_constraint=False)  # type: ignore[call-arg]
    return box.unbox()


def replace_boxed(tree: Any, updates: Any) -> Any:
    """Puts ``updates`` into the boxes of ``tree``, box by box: where ``tree`` has
    a box, the update at that place goes inside it; elsewhere the update replaces
    what was there. ``updates`` has ``tree``'s structure, boxes counted as leaves
    (a box that holds a pytree takes that whole pytree).

    A box given as the update replaces the box (Flax would put it inside the old
    one, boxing twice: docs/porting.md).

    Example:
        >>> from lens.core.meta import Partitioned
        >>> replace_boxed(Partitioned(1, ("a",)), 2)
        Partitioned(value=2, names=('a',), mesh=None)
        >>> replace_boxed({"w": Partitioned(1, ("a",)), "n": 0}, {"w": 2, "n": 3})
        {'n': 3, 'w': Partitioned(value=2, names=('a',), mesh=None)}
    """

    def put(box: Any, update: Any) -> Any:
        if isinstance(box, AxisMetadata) and not isinstance(update, AxisMetadata):
            return box.replace_boxed(replace_boxed(raw_value(box), update))
        return update

    if isinstance(tree, AxisMetadata):  # the common case: one box
        return put(tree, updates)
    return jax.tree_util.tree_map(put, tree, updates, is_leaf=is_axis_metadata)


def boxes_take(tree: Any, value: Any) -> bool:
    """Whether writing ``value`` over ``tree`` (a Variable's ``value =``) puts it
    into ``tree``'s boxes, by Flax's rule: ``tree`` holds a box and ``value`` has
    ``tree``'s structure, boxes counted as leaves. Otherwise ``value`` is stored
    as given."""
    if isinstance(tree, AxisMetadata):  # the common case: one box, value a leaf
        return _structure(value) == _LEAF
    if isinstance(tree, jax.Array | np.ndarray | int | float) or tree is None:
        return False  # no box in it
    leaves, structure = jax.tree_util.tree_flatten(tree, is_leaf=is_axis_metadata)
    if not any(isinstance(leaf, AxisMetadata) for leaf in leaves):
        return False
    return _structure(value) == structure


def _structure(x: Any) -> Any:
    return jax.tree_util.tree_structure(x, is_leaf=is_axis_metadata)


_LEAF = jax.tree_util.tree_structure(0)


def map_axis_meta(fn: Callable[[AxisMetadata], Any], tree: Any) -> Any:
    """Applies ``fn`` to every box in ``tree``, leaving other leaves alone."""
    return jax.tree_util.tree_map(
        lambda x: fn(x) if isinstance(x, AxisMetadata) else x,
        tree,
        is_leaf=is_axis_metadata,
    )


def add_axis(tree: Any, index: int, params: dict[Any, Any]) -> Any:
    """Calls ``add_axis(index, params)`` on every box in ``tree``."""
    return map_axis_meta(lambda x: x.add_axis(index, params), tree)


def remove_axis(tree: Any, index: int, params: dict[Any, Any]) -> Any:
    """Calls ``remove_axis(index, params)`` on every box in ``tree``."""
    return map_axis_meta(lambda x: x.remove_axis(index, params), tree)


def get_partition_spec(tree: Any) -> Any:
    """Maps each box that knows its partition spec to it; other arrays to ``P()``.

    Leaves that are not arrays (e.g. Python scalars) map to ``None``.
    """
    from jax.sharding import PartitionSpec

    def spec(x: Any) -> Any:
        if hasattr(x, "get_partition_spec"):
            return x.get_partition_spec()
        if isinstance(x, AxisMetadata):
            return spec(x.unbox())
        if hasattr(x, "shape"):
            return PartitionSpec()
        return None

    return jax.tree_util.tree_map(spec, tree, is_leaf=is_axis_metadata)


def get_global_mesh() -> Any:
    """The mesh of the enclosing ``jax.set_mesh`` (abstract inside jit), or None."""
    try:
        mesh = jax.sharding.get_abstract_mesh()
    except Exception:  # noqa: BLE001 - the API moves between JAX versions
        return None
    return None if mesh is None or mesh.empty else mesh


def global_mesh_defined() -> bool:
    """Whether a mesh is in effect (``jax.set_mesh``)."""
    return get_global_mesh() is not None


show_at_flax_paths(__name__)
