"""Variables across the bridge: Linen collections and boxes as nnx Variables and
back, and ``with_partitioning`` for either side.

A Linen variable ``variables[col][path...]`` is the nnx Variable at ``path`` whose
type is the collection's (``params`` -> ``Param``, other names registered as
they come); a Linen metadata box (``nn.Partitioned``, ``nn.LogicallyPartitioned``)
becomes the Variable's metadata, with ``linen_meta_type`` to box it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import jax

from lens.core import AxisMetadata, Partitioned, get_global_mesh
from lens.nnx._variables.names import variable_name_from_type, variable_type_from_name
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Variable
from lens.nnx.spmd import get_var_pspec
from lens.nnx.spmd import with_partitioning as _nnx_with_partitioning
from lens.struct import PyTreeNode, field
from lens.traverse_util import flatten_dict, unflatten_dict

A = TypeVar("A")
B = TypeVar("B")

# metadata every Variable may carry (flax's Variable.required_metadata): a
# Variable with only these is plain across the bridge
_REQUIRED_METADATA = frozenset({"eager_sharding", "hijax", "ref"})


def sort_variable_types(types: Iterable[type]) -> list[type]:
    """``types`` most derived first (by how many Variable classes each has among
    its bases), so that a filter by type tries ``Param`` before ``Variable``."""
    types = list(types)

    def depth(t: type) -> int:
        return sum(1 for p in t.mro() if issubclass(p, Variable))

    return sorted(types, key=lambda t: -depth(t))


class NNXMeta(PyTreeNode, AxisMetadata[A]):
    """An nnx Variable's value in Linen variables, boxed with its type and
    metadata (what a Variable with metadata becomes across the bridge); it
    knows its partition spec from ``out_sharding``."""

    var_type: type[Variable[Any]] = field(pytree_node=False)
    value: Any = field(pytree_node=True)
    metadata: dict[str, Any] = field(pytree_node=False)

    def unbox(self) -> A:
        return self.value

    def replace_boxed(self, val: B) -> NNXMeta[B]:
        return self.replace(value=val)  # type: ignore[return-value]

    def add_axis(self, index: int, params: dict[Any, Any]) -> NNXMeta[A]:
        return self  # as flax: variable hooks are not run across the bridge

    def remove_axis(self, index: int, params: dict[Any, Any]) -> NNXMeta[A]:
        return self

    def get_partition_spec(self) -> jax.sharding.PartitionSpec:
        spec = get_var_pspec(self.to_nnx_variable())
        return spec if spec is not None else jax.sharding.PartitionSpec()

    def to_nnx_variable(self) -> Variable:
        return self.var_type(self.value, **{"eager_sharding": False, **self.metadata})


def is_vanilla_variable(vs: Variable) -> bool:
    """Whether ``vs`` has no metadata of its own (only the flags every Variable
    has, and empty ``*_hooks``): such a Variable is its plain value in Linen."""
    for key, value in vs.get_metadata().items():
        if key in _REQUIRED_METADATA or (key.endswith("_hooks") and value == ()):
            continue
        return False
    return True


def to_linen_var(vs: Variable) -> Any:
    """An nnx Variable as a Linen value: back in its Linen box when it came from
    one (``linen_meta_type``), its plain value when it is vanilla
    (:func:`is_vanilla_variable`), else an :class:`NNXMeta`."""
    metadata = {
        k: x for k, x in vs.get_metadata().items() if k not in _REQUIRED_METADATA
    }
    linen_type = metadata.pop("linen_meta_type", None)
    if linen_type is not None:
        if hasattr(linen_type, "from_nnx_metadata"):
            return linen_type.from_nnx_metadata({"value": vs.value, **metadata})
        return linen_type(vs.value, **metadata)
    if is_vanilla_variable(vs):
        return vs.value
    return NNXMeta(type(vs), vs.value, metadata)


def get_col_name(keypath: Sequence[Any]) -> str:
    """The Linen collection of a leaf of Linen variables, from its JAX key path
    (the first key, a ``DictKey``, names the collection)."""
    if not keypath or not isinstance(keypath[0], jax.tree_util.DictKey):
        raise ValueError(
            f"get_col_name: the key path {jax.tree_util.keystr(tuple(keypath))} does "
            "not start with a collection name.\nPass the path of a leaf of Linen "
            "variables, {collection: {...}} (e.g. from jax.tree_util.tree_map_with_path)."
        )
    return str(keypath[0].key)


def to_nnx_var(col: str, x: Any) -> Variable:
    """A Linen variable of collection ``col`` as an nnx Variable of that
    collection's type; a Linen box's fields become the Variable's metadata."""
    vtype = variable_type_from_name(col, allow_register=True)
    if isinstance(x, NNXMeta):
        if x.var_type is not vtype:
            raise ValueError(
                f"Type stored in NNXMeta {x.var_type} != type inferred from "
                f"collection name {vtype} (collection {col!r}).\nKeep each boxed "
                "variable in the collection of its type."
            )
        return x.to_nnx_variable()
    if not isinstance(x, AxisMetadata):
        return vtype(x)
    to_meta = getattr(x, "to_nnx_metadata", None)
    metadata = dict(to_meta() if to_meta is not None else vars(x))
    value = metadata.pop("value") if "value" in metadata else x.unbox()
    metadata["linen_meta_type"] = type(x)
    if metadata.get("out_sharding") and (
        metadata.get("mesh") is None and get_global_mesh() is None
    ):
        # lens: with no mesh to shard on, the names are kept as metadata only
        # (flax.nnx raises here); under a mesh the value is sharded as in flax
        metadata["eager_sharding"] = False
    return vtype(value, **metadata)


def _flat(tree: Any) -> dict[tuple, Any]:
    if not isinstance(tree, Mapping) or isinstance(tree, State):
        return {(): tree}
    return flatten_dict(tree, is_leaf=lambda _, x: isinstance(x, State))


def linen_vars_to_nnx_attrs(variables: Mapping[str, Any]) -> dict[str, Any]:
    """Linen variables ``{collection: tree}`` as one nested dict of nnx Variables
    (the collection becomes the Variable's type).

    Raises:
        ValueError: two collections hold a variable at the same path.
    """
    flat: dict[tuple, Variable] = {}
    for col in sorted(variables):
        for path, x in _flat(variables[col]).items():
            v = to_nnx_var(col, x)
            if path in flat:
                raise ValueError(
                    f"Found duplicate variable path {path} with variables "
                    f"{flat[path]} and {v}. This is not allowed in NNX.\nIn the "
                    "Linen module, give the variables of different collections "
                    "different names."
                )
            flat[path] = v
    return unflatten_dict(flat)


def nnx_attrs_to_linen_vars(nnx_attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A nested dict of nnx Variables as Linen variables ``{collection: tree}``
    (each value through :func:`to_linen_var`).

    Raises:
        ValueError: a leaf is not a Variable (its collection cannot be told).
    """
    linen: dict[tuple, Any] = {}
    for path, v in _flat(nnx_attrs).items():
        if not isinstance(v, Variable):
            raise ValueError(
                f"Cannot infer collection name from value: {v!r} (at "
                f"{'/'.join(map(str, path))}).\nOnly nnx Variables become Linen "
                "variables: wrap the value in one (nnx.Param, nnx.BatchStat, ...)."
            )
        col = variable_name_from_type(type(v), allow_register=True)
        linen[(col, *path)] = to_linen_var(v)
    return unflatten_dict(linen)


def with_partitioning(
    fn: Callable[..., Any], names: Any, mesh: jax.sharding.Mesh | None = None
) -> Callable[..., Any]:
    """An initializer whose nnx variables are annotated with ``names`` and come
    back to Linen as ``nn.Partitioned``."""
    return _nnx_with_partitioning(fn, names, mesh, linen_meta_type=Partitioned)
