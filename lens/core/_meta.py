"""Axis metadata: boxes that carry per-axis information through lifted transforms.

A box wraps a value (usually an array) and some metadata about its axes. Modules see
the unboxed value by default; ``vmap``/``scan`` call :meth:`AxisMetadata.remove_axis`
on the way in and :meth:`AxisMetadata.add_axis` on the way out with the transform's
``metadata_params``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, TypeVar

import jax

TAxisMetadata = TypeVar("TAxisMetadata", bound="AxisMetadata")


class AxisMetadata(abc.ABC):
    """Abstract base class for boxed metadata.

    Subclasses must be pytree nodes whose leaves are the leaves of ``unbox()``, so
    ``jax.tree.map`` over a boxed tree maps over the values and keeps the boxes. The
    easiest way is ``class MyBox(lens.struct.PyTreeNode, AxisMetadata)``.

    ``add_axis`` and ``remove_axis`` must be inverses:
    ``x.add_axis(i, p).remove_axis(i, p) == x``.
    """

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


def _box_bundle(
    self: AxisMetadata, include: Any = None, exclude: Any = None
) -> dict[str, Any]:
    from lens.display import BoxView

    return BoxView(self)._repr_mimebundle_()


def _box_rich(self: AxisMetadata) -> Any:
    from lens.display import BoxView

    return BoxView(self).__rich__()


# Boxes display through lens.display, imported only when one is shown.
AxisMetadata._repr_mimebundle_ = _box_bundle  # type: ignore[attr-defined]
AxisMetadata.__rich__ = _box_rich  # type: ignore[attr-defined]


def is_axis_metadata(x: Any) -> bool:
    """True if ``x`` is an :class:`AxisMetadata` box."""
    return isinstance(x, AxisMetadata)


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


def replace_boxed(old: Any, new: Any) -> Any:
    """Puts ``new`` into the box of ``old`` (if ``old`` is boxed and ``new`` is not)."""
    if isinstance(old, AxisMetadata) and not isinstance(new, AxisMetadata):
        inner = old.unbox()
        return old.replace_boxed(replace_boxed(inner, new))
    return new


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
