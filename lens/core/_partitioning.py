"""``Partitioned``: axis metadata naming the mesh axis each array axis is sharded over."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import jax
import jax.core
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from lens import errors
from lens._facades import show_at_flax_paths
from lens.core._meta import AxisMetadata
from lens.struct import PyTreeNode, field

A = TypeVar("A")

PARTITION_NAME = "partition_name"
"""The ``metadata_params`` key that names the axis a ``vmap``/``scan`` adds."""


class Partitioned(PyTreeNode, AxisMetadata[A]):
    """A box holding a value and, per axis, the mesh axis it is sharded over.

    Example:
        >>> import jax.numpy as jnp
        >>> from jax.sharding import PartitionSpec
        >>> from lens.core.meta import PARTITION_NAME, Partitioned
        >>> p = Partitioned(jnp.ones((4, 8)), (None, "data"))
        >>> p.get_partition_spec() == PartitionSpec(None, "data")
        True
        >>> p.add_axis(0, {PARTITION_NAME: "layers"}).names
        ('layers', None, 'data')
    """

    # the design's spelling of the metadata_params key (metadata_params=
    # {nn.Partitioned.AXIS_NAME: "layers"}): PARTITION_NAME itself
    AXIS_NAME: ClassVar[str] = PARTITION_NAME

    value: Any
    names: tuple[str | None, ...] = field(pytree_node=False)
    mesh: Mesh | None = field(default=None, pytree_node=False)

    def unbox(self, apply_constraint: bool = True) -> Any:
        """The wrapped value; inside ``jit`` under a mesh, constrained to its sharding.

        ``apply_constraint=False`` gives the value as is.
        """
        mesh = self.mesh or current_mesh()
        if (
            not apply_constraint
            or mesh is None
            or not isinstance(self.value, jax.core.Tracer)
        ):
            return self.value
        return jax.lax.with_sharding_constraint(
            self.value, NamedSharding(mesh, self.get_partition_spec())
        )

    def __repr__(self) -> str:
        # Flax's (the dataclass's): every field, mesh=None and rules=None included
        fields = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
        )
        return f"{type(self).__name__}({fields})"

    def replace_boxed(self, val: Any) -> Partitioned:
        """Returns this box around ``val``."""
        return self.replace(value=val)

    def _get_partition_name(self, params: dict[Any, Any]) -> Any:
        """The axis name a ``vmap``/``scan`` gave in ``metadata_params`` (under
        :data:`PARTITION_NAME`, alias ``Partitioned.AXIS_NAME``); a subclass may
        read it elsewhere."""
        if PARTITION_NAME not in params:
            raise errors.PartitionNameMissingError(
                f"A transform added or removed an axis of a Partitioned value (names "
                f"{self.names}) but did not say which mesh axis it maps to.\nPass "
                f"metadata_params={{nn.PARTITION_NAME: 'layers'}} (or None) to the "
                "vmap/scan."
            )
        return params[PARTITION_NAME]

    def add_axis(self, index: int, params: dict[Any, Any]) -> Partitioned:
        """Inserts the transform's partition name at ``index`` (past the end, the
        names between are ``None``, as in Flax)."""
        name = self._get_partition_name(params)
        names = list(self.names)
        names += [None] * (index - len(names))
        names.insert(index, name)
        return self.replace(names=tuple(names))

    def remove_axis(self, index: int, params: dict[Any, Any]) -> Partitioned:
        """Removes the name at ``index`` (it must be the transform's)."""
        name = self._get_partition_name(params)
        names = list(self.names)
        if names[index] != name:
            raise errors.PartitionAxisMismatchError(index, names[index], name)
        names.pop(index)
        return self.replace(names=tuple(names))

    def get_partition_spec(self) -> PartitionSpec:
        """The ``PartitionSpec`` of the value."""
        return PartitionSpec(*self.names)

    def to_nnx_metadata(self) -> dict[str, Any]:
        """The box as ``lens.nnx`` variable metadata (``names`` -> ``out_sharding``),
        ``value`` included: what ``nnx.bridge`` builds the Variable from."""
        metadata = dict(vars(self))
        metadata["out_sharding"] = metadata.pop("names")
        return metadata

    @classmethod
    def from_nnx_metadata(cls, metadata: dict[str, Any]) -> Partitioned:
        """The box of a ``lens.nnx`` Variable's metadata (with its ``value``);
        keys that are not fields of the box are left out."""
        import dataclasses

        metadata = dict(metadata)
        metadata["names"] = metadata.pop("out_sharding")
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in metadata.items() if k in fields})

    def get_sharding(self, mesh: Mesh | None = None) -> NamedSharding:
        """The ``NamedSharding`` of the value on ``mesh`` (or the box's own mesh)."""
        mesh = mesh or self.mesh
        if mesh is None:
            raise ValueError(
                "get_sharding needs a mesh: pass one, or box with mesh=..."
            )
        return NamedSharding(mesh, self.get_partition_spec())


def with_partitioning(
    fn: Callable[..., Any], names: tuple[str | None, ...], mesh: Mesh | None = None
) -> Callable[..., Partitioned]:
    """Wraps an initializer so its result is boxed in :class:`Partitioned`.

    Example:
        >>> import jax
        >>> init = with_partitioning(jax.nn.initializers.ones, (None, "model"))
        >>> init(jax.random.key(0), (2, 3)).names
        (None, 'model')
    """

    def wrapper(*args: Any, **kwargs: Any) -> Partitioned:
        return Partitioned(fn(*args, **kwargs), tuple(names), mesh)

    return wrapper


def get_sharding(tree: Any, mesh: Mesh) -> Any:
    """Maps every leaf to its ``NamedSharding`` on ``mesh`` (replicated if unboxed)."""
    from lens.core._meta import is_axis_metadata

    def sharding(x: Any) -> Any:
        if hasattr(x, "get_sharding"):
            return x.get_sharding(mesh)
        if hasattr(x, "get_partition_spec"):
            return NamedSharding(mesh, x.get_partition_spec())
        return NamedSharding(mesh, PartitionSpec())

    return jax.tree_util.tree_map(sharding, tree, is_leaf=is_axis_metadata)


def current_mesh() -> Mesh | None:
    """The mesh of the enclosing ``jax.set_mesh`` (or ``with mesh:``) block, or None."""
    try:
        mesh = jax.sharding.get_mesh()
        if mesh is not None and not mesh.empty:
            return mesh
    except Exception:  # noqa: BLE001 - the API moves between JAX versions
        pass
    try:
        from jax._src import mesh as mesh_lib

        physical = mesh_lib.thread_resources.env.physical_mesh
        if not physical.empty:
            return physical
    except Exception:  # noqa: BLE001
        pass
    return None


show_at_flax_paths(__name__)
