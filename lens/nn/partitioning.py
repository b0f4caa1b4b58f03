"""Logical axis names kept as a separate collection (``flax.linen.partitioning``).

The older way to name parameter axes, still used by T5X-era models:
:func:`param_with_axes` stores the parameter in ``params`` and its logical axis
names, as an :class:`AxisMetadata` record, in a parallel ``params_axes``
collection (``{'kernel_axes': AxisMetadata(names=('embed', 'mlp'))}``).
:func:`get_axis_names` turns such a collection into logical ``PartitionSpec``\\ s;
:func:`scan_with_axes` and :func:`vmap_with_axes` insert the lifted axis into the
recorded names.

New code boxes the parameter itself instead (:func:`lens.nn.with_partitioning`,
:func:`lens.nn.with_logical_partitioning`), which needs no parallel collection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import jax

from lens import struct
from lens._frozen_dict import freeze, unfreeze
from lens.core import CollectionFilter as CollectionFilter
from lens.core import PRNGSequenceFilter as PRNGSequenceFilter
from lens.core import Variable, lift, union_filters
from lens.core.spmd import get_logical_axis_rules as get_axis_rules
from lens.core.spmd import logical_axis_rules as axis_rules
from lens.core.spmd import set_logical_axis_rules as set_axis_rules
from lens.errors import ScopeVariableNotFoundError
from lens.nn import _context
from lens.nn._lifting import lift_transform
from lens.nn._transforms import map_variables
from lens.nn.spmd import RulesFallback as RulesFallback
from lens.nn.spmd import _is_logical_spec
from lens.nn.spmd import _with_sharding_constraint as _with_sharding_constraint
from lens.nn.spmd import logical_to_mesh as logical_to_mesh
from lens.nn.spmd import logical_to_mesh_axes as logical_to_mesh_axes
from lens.nn.spmd import with_logical_constraint as with_sharding_constraint
from lens.traverse_util import flatten_dict, unflatten_dict
from lens.typing import ArrayPytree as ArrayPytree
from lens.typing import In as ScanIn
from lens.typing import LogicalPartitionSpec as LogicalPartitionSpec
from lens.typing import LogicalPartitionSpecPytree
from lens.typing import LogicalRules as LogicalRules
from lens.typing import Out as ScanOut
from lens.typing import PartitionSpecPytree as PartitionSpecPytree

__all__ = [
    "AxisMetadata",
    "PartitionedVariable",
    "RulesFallback",
    "ScanIn",
    "ScanOut",
    "axis_rules",
    "core_remat_static",
    "get_axis_names",
    "get_axis_rules",
    "logical_to_mesh",
    "logical_to_mesh_axes",
    "param_with_axes",
    "remat",
    "scan_with_axes",
    "set_axis_rules",
    "variable_with_axes",
    "vmap_with_axes",
    "with_sharding_constraint",
]


@struct.dataclass
class AxisMetadata:
    """The logical axis names of one variable (a tuple, or a pytree of tuples)."""

    names: LogicalPartitionSpecPytree = struct.field(pytree_node=False)


def _current_module(module: Any, what: str) -> Any:
    if module is None:
        module = _context.current_module()
        if module is None:
            raise ValueError(
                f"{what} is called outside of a Module method.\n"
                f"Call it inside a @compact method or setup(), or pass module=."
            )
    return module


def _param_with_axes_sow_reduce_fn(x: Any, y: Any) -> Any:
    """Keeps the sown names; a second sow must name the same axes."""
    if not isinstance(y, AxisMetadata):
        raise TypeError("Expected newly sown value to be an AxisMetadata")
    if isinstance(x, AxisMetadata):
        if x != y:
            raise ValueError(
                f"If axis names are sown twice, expected them to match. Got {x} and {y}."
                "\nA variable declared again (a module called twice) must name the "
                "same axes each time."
            )
    elif x:
        raise AssertionError(f"Non-initial-or-AxisMetadata value encountered: {x}")
    return y


def param_with_axes(
    name: str,
    init_fn: Callable[..., Any],
    *init_args: Any,
    axes: tuple[str, ...] | None = None,
    module: Any = None,
    **init_kwargs: Any,
) -> Any:
    """Declares parameter ``name`` (like ``Module.param``) with logical ``axes``.

    The names go to ``params_axes`` under ``f'{name}_axes'`` when that collection
    is mutable (``init`` makes every collection mutable).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> import lens.nn as nn
        >>> class M(nn.Module):
        ...     @nn.compact
        ...     def __call__(self, x):
        ...         w = param_with_axes("w", nn.initializers.ones, (2, 3),
        ...                             axes=("embed", "mlp"))
        ...         return x @ w
        >>> v = M().init(jax.random.key(0), jnp.ones((1, 2)))
        >>> v["params_axes"]["w_axes"]
        AxisMetadata(names=('embed', 'mlp'))
    """
    module = _current_module(module, "param_with_axes")
    value = module.param(name, init_fn, *init_args, **init_kwargs)
    if axes is not None:
        value = with_sharding_constraint(value, jax.sharding.PartitionSpec(*axes))
        module.sow(
            "params_axes",
            f"{name}_axes",
            AxisMetadata(axes),  # type: ignore[arg-type]
            reduce_fn=_param_with_axes_sow_reduce_fn,
        )
    return value


class PartitionedVariable(Variable):
    """A :class:`~lens.core.Variable` that constrains its value to logical ``axes``.

    Reading and writing ``.value`` applies :func:`with_sharding_constraint` by
    the logical axis rules in effect (a no-op without rules or mesh).
    """

    __slots__ = ("axes", "fallback")

    def __init__(
        self,
        scope: Any,
        collection: str,
        name: str,
        axes: tuple[str, ...] | None = None,
        fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
    ):
        super().__init__(scope, collection, name, unbox=False)
        self.axes = axes
        self.fallback = fallback

    @property
    def value(self) -> Any:
        """The value, constrained to the variable's logical axes."""
        value = self.scope.get_variable(self.collection, self.name)
        if self.axes is not None:
            value = with_sharding_constraint(value, self.axes, fallback=self.fallback)
        return value

    @value.setter
    def value(self, value: Any) -> None:
        if self.axes is not None:
            value = with_sharding_constraint(value, self.axes, fallback=self.fallback)
        self.scope.put_variable(self.collection, self.name, value)


def _core_variable_with_axes(
    scope: Any,
    col: str,
    name: str,
    init_fn: Callable[..., Any],
    *init_args: Any,
    axes: tuple[str, ...] | None = None,
    fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
    **init_kwargs: Any,
) -> PartitionedVariable:
    scope.reserve(name, col)
    if not scope.has_variable(col, name):
        if not scope.is_mutable_collection(col):
            raise ScopeVariableNotFoundError(name, col, scope.path_text)
        value = init_fn(*init_args, **init_kwargs)
        if axes is not None:
            value = with_sharding_constraint(value, axes, fallback=fallback)
        scope.put_variable(col, name, value)
    return PartitionedVariable(scope, col, name, axes, fallback)


def variable_with_axes(
    collection: str,
    name: str,
    init_fn: Callable[..., Any],
    *init_args: Any,
    axes: tuple[str, ...] | None = None,
    module: Any = None,
    fallback: RulesFallback = RulesFallback.AXIS_IS_UNSHARDED,
    **init_kwargs: Any,
) -> PartitionedVariable:
    """Declares variable ``name`` in ``collection`` with logical ``axes``.

    The names go to ``f'{collection}_axes'`` under ``f'{name}_axes'``.
    Returns a :class:`PartitionedVariable`.
    """
    module = _current_module(module, "variable_with_axes")
    variable = _core_variable_with_axes(
        module._require("store variables"),
        collection,
        name,
        init_fn,
        *init_args,
        axes=axes,
        fallback=fallback,
        **init_kwargs,
    )
    module._state.children[name] = collection
    if axes is not None:
        module.sow(
            f"{collection}_axes",
            f"{name}_axes",
            AxisMetadata(axes),  # type: ignore[arg-type]
            reduce_fn=_param_with_axes_sow_reduce_fn,
        )
    return variable


def get_axis_names(axes_metadata: Any) -> Any:
    """Logical ``PartitionSpec``\\ s from an axes collection, ``_axes`` suffixes removed.

    Example:
        >>> get_axis_names({"dense": {"kernel_axes": AxisMetadata(("embed", "mlp"))}})
        FrozenDict({
            dense: {
                kernel: P('embed', 'mlp'),
            },
        })
    """

    def rewrite(names: Any) -> Any:
        return jax.tree_util.tree_map(
            lambda x: None if x is None else jax.sharding.PartitionSpec(*x),
            names,
            is_leaf=_is_logical_spec,
        )

    flat = {
        path[:-1] + (re.sub(r"_axes$", "", path[-1]),): rewrite(v.names)
        for path, v in flatten_dict(unfreeze(axes_metadata)).items()
    }
    return freeze(unflatten_dict(flat))


def _tree_map_axes(fn: Callable[[Any], Any], tree: Any) -> Any:
    return jax.tree_util.tree_map(
        lambda x: fn(x) if isinstance(x, AxisMetadata) else x,
        tree,
        is_leaf=lambda x: isinstance(x, AxisMetadata),
    )


def _is_mutable(axis_col: str) -> bool:
    """Whether ``axis_col`` is mutable in the current module (True outside one)."""
    module = _context.current_module()
    if module is None:
        return True
    return module.is_mutable_collection(axis_col)


def _add_axis_to_metadata(
    fn: Any, axis_pos: Any, axis_name: str, axis_col: str = "params_axes"
) -> Any:
    """Wraps ``fn`` so ``axis_name`` appears at ``axis_pos`` in ``axis_col``'s names."""
    if hasattr(axis_pos, "axis"):
        axis_pos = axis_pos.axis

    def insert_leaf(names: Any) -> Any:
        if names is None:
            return names
        names = list(names)
        names.insert(axis_pos, axis_name)
        return tuple(names)

    def remove_leaf(names: Any) -> Any:
        if names is None:
            return names
        names = list(names)
        if names[axis_pos] != axis_name:
            raise ValueError(
                f"Expected axis {axis_name} at position {axis_pos} in axis metadata "
                f"{names}.\nThe {axis_col!r} collection was made by another "
                "transform: initialize the variables with this model."
            )
        names.pop(axis_pos)
        return tuple(names)

    def insert(x: Any) -> AxisMetadata:  # a box with names (Partitioned)
        return x.replace(
            names=jax.tree_util.tree_map(insert_leaf, x.names, is_leaf=_is_logical_spec)
        )

    def remove(x: Any) -> AxisMetadata:
        return x.replace(
            names=jax.tree_util.tree_map(remove_leaf, x.names, is_leaf=_is_logical_spec)
        )

    return map_variables(
        fn,
        axis_col,
        mutable=_is_mutable(axis_col),
        trans_in_fn=lambda tree: _tree_map_axes(remove, tree),
        trans_out_fn=lambda tree: _tree_map_axes(insert, tree),
    )


def scan_with_axes(
    target: Any,
    variable_axes: Mapping[CollectionFilter, Any] = {},  # noqa: B006 - read only
    variable_broadcast: CollectionFilter = False,
    variable_carry: CollectionFilter = False,
    split_rngs: Mapping[PRNGSequenceFilter, bool] = {},  # noqa: B006 - read only
    in_axes: Any = 0,
    out_axes: Any = 0,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    axis_name: str = "layers",
    axes_collections: tuple[str, ...] = ("params",),
    data_transform: Callable[..., Any] | None = None,
    methods: Any = None,
) -> Any:
    """:func:`lens.nn.scan` that records the scanned axis as ``axis_name``.

    The ``*_axes`` collections of ``axes_collections`` are broadcast through the
    loop; names of collections scanned over get ``axis_name`` at their axis.
    """
    axes_filters = tuple(f"{col}_axes" for col in axes_collections)
    scanned = lift_transform(
        lift.scan,
        target,
        variable_axes=variable_axes,
        variable_broadcast=union_filters(variable_broadcast, axes_filters),
        variable_carry=variable_carry,
        split_rngs=split_rngs,
        in_axes=in_axes,
        out_axes=out_axes,
        length=length,
        reverse=reverse,
        unroll=unroll,
        data_transform=data_transform,
        methods=methods,
    )
    for col in axes_collections:
        if col in variable_axes:
            scanned = _add_axis_to_metadata(
                scanned,
                axis_pos=variable_axes[col],
                axis_name=axis_name,
                axis_col=f"{col}_axes",
            )
    return scanned


def vmap_with_axes(
    target: Any,
    variable_axes: Mapping[CollectionFilter, Any],
    split_rngs: Mapping[PRNGSequenceFilter, bool] = {},  # noqa: B006 - read only
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    partitioning_axis_names: Mapping[Any, str] = {},  # noqa: B006 - read only
    spmd_axis_name: str | None = None,
    methods: Any = None,
) -> Any:
    """:func:`lens.nn.vmap` that records the mapped axis in ``*_axes`` collections.

    ``partitioning_axis_names`` maps a collection to the logical name of its
    mapped axis (``{'params': 'ensemble'}``).
    """
    variable_axes = dict(variable_axes)
    for name in partitioning_axis_names:
        variable_axes[f"{name}_axes"] = None
    vmapped = lift_transform(
        lift.vmap,
        target,
        variable_axes=variable_axes,
        split_rngs=split_rngs,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_size=axis_size,
        axis_name=axis_name,
        spmd_axis_name=spmd_axis_name,
        methods=methods,
    )
    for col, axis in variable_axes.items():
        if col in partitioning_axis_names:
            vmapped = _add_axis_to_metadata(
                vmapped,
                axis_pos=axis,
                axis_name=partitioning_axis_names[col],
                axis_col=f"{col}_axes",
            )
    return vmapped


def core_remat_static(
    fn: Callable[..., Any],
    variables: CollectionFilter = True,
    rngs: PRNGSequenceFilter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
) -> Callable[..., Any]:
    """:func:`lens.core.lift.checkpoint` (``static_argnums`` count after the scope)."""
    if concrete:
        raise NotImplementedError(
            "The concrete argument is deprecated. Use static_argnums instead."
        )
    return lift.checkpoint(
        fn,
        variables=variables,
        rngs=rngs,
        prevent_cse=prevent_cse,
        static_argnums=tuple(sorted(static_argnums)),
        policy=policy,
    )


def remat(
    target: Any,
    variables: CollectionFilter = True,
    rngs: PRNGSequenceFilter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
    methods: Any = None,
) -> Any:
    """Lifted remat whose ``static_argnums`` do not count ``self``.

    (:func:`lens.nn.remat` counts ``self`` as 0; this legacy form counts the
    first argument after ``self`` as 0.)
    """
    return lift_transform(
        core_remat_static,
        target,
        variables=variables,
        rngs=rngs,
        concrete=concrete,
        prevent_cse=prevent_cse,
        static_argnums=static_argnums,
        policy=policy,
        methods=methods,
    )
