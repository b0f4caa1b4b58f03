"""Sharding metadata on lens.nnx variables.

A variable's ``out_sharding`` metadata (a tuple of mesh or logical axis names, one
per array axis) says how it is laid out. :func:`with_partitioning` puts it on an
initializer's output, layers take it through ``kernel_metadata=...``, and
:func:`get_partition_spec` / :func:`get_named_sharding` read it back as a tree of
``PartitionSpec`` / ``NamedSharding`` to give ``jax.jit`` or ``jax.device_put``.
``vmap``/``scan`` with ``transform_metadata={nnx.PARTITION_NAME: 'layers'}`` add
(and remove) the mapped axis's name in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
from jax.sharding import NamedSharding, PartitionSpec

from lens.core.spmd import composite_rules, from_sharding_rules, get_logical_axis_rules
from lens.nnx._graph.ops import iter_graph, split
from lens.nnx._transforms import axes
from lens.nnx._transforms.axes import PARTITION_NAME as PARTITION_NAME
from lens.nnx._transforms.branches import eval_shape
from lens.nnx._variables.hooks import with_metadata
from lens.nnx._variables.variable import Variable
from lens.nnx.deprecations import deprecated

A = TypeVar("A")


F = TypeVar("F", bound=Callable[..., Any])


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def add_axis(tree: A, index: int, transform_metadata: Mapping[Any, Any]) -> A:
    """Records on every Variable in ``tree`` that a transform added axis
    ``index``: ``transform_metadata[nnx.PARTITION_NAME]`` goes into its
    ``out_sharding`` (and each other entry into the tuple metadata of that name),
    then its ``add_axis`` hook runs. Returns ``tree`` (changed in place).

    >>> import jax.numpy as jnp
    >>> from lens import nnx
    >>> v = nnx.Param(jnp.ones((3, 4)), out_sharding=("a", "b"), eager_sharding=False)
    >>> _ = nnx.spmd.add_axis([v], 0, {nnx.PARTITION_NAME: "layers"})
    >>> v.out_sharding
    ('layers', 'a', 'b')
    """
    for v in jax.tree.leaves(tree, is_leaf=_is_var):
        if isinstance(v, Variable):
            axes.add_axis(v, index, transform_metadata)
    return tree


def remove_axis(tree: A, index: int, transform_metadata: Mapping[Any, Any]) -> A:
    """The inverse of :func:`add_axis`: removes the name at ``index`` of each
    Variable's ``out_sharding`` (and of the other named metadata).

    Raises:
        ValueError: a Variable's name at ``index`` is not the transform's.
    """
    paths = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_var)[0]
    for path, v in paths:
        if isinstance(v, Variable):
            where = jax.tree_util.keystr(path) or type(v).__name__
            axes.remove_axis(v, index, transform_metadata, where)
    return tree


def with_partitioning(
    initializer: F,
    sharding: Any,
    mesh: jax.sharding.Mesh | None = None,
    **metadata: Any,
) -> F:
    """``initializer`` whose variables get ``out_sharding=sharding`` (and ``mesh``).

    >>> from lens import nnx
    >>> init = nnx.with_partitioning(nnx.initializers.ones, (None, "model"))
    >>> with nnx.use_eager_sharding(False):
    ...     layer = nnx.Linear(2, 4, kernel_init=init, rngs=nnx.Rngs(0))
    >>> nnx.get_partition_spec(nnx.state(layer))["kernel"].value
    P(None, 'model')
    """
    return with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)


def get_var_pspec(v: Variable) -> PartitionSpec | None:
    """The PartitionSpec of one variable: its ``out_sharding`` through the logical
    axis rules in effect, ``PartitionSpec()`` (replicated) when it has none."""
    sharding = v.metadata.get("out_sharding")
    if sharding:
        local = v.metadata.get("sharding_rules", ())
        if get_logical_axis_rules() or local:
            rules = composite_rules(get_logical_axis_rules(), local)
            return PartitionSpec(*from_sharding_rules(sharding, rules))
        return PartitionSpec(*sharding)
    if hasattr(v.value, "shape"):
        return PartitionSpec()
    return None


def get_partition_spec(tree: A) -> A:
    """``tree`` (a State, or any pytree of variables and arrays) with each
    variable's value replaced by its PartitionSpec and each array by ``P()``."""

    def spec(x: Any) -> Any:
        if isinstance(x, Variable):
            return x.replace(get_var_pspec(x))
        if hasattr(x, "shape"):
            return PartitionSpec()
        return None

    return jax.tree.map(spec, tree, is_leaf=_is_var)


def get_named_sharding(tree: A, mesh: jax.sharding.Mesh) -> A:
    """:func:`get_partition_spec` as ``NamedSharding`` on ``mesh``."""
    return jax.tree.map(
        lambda p: NamedSharding(mesh, p),
        get_partition_spec(tree),
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


def get_abstract_model(
    init_fn: Callable[[], Any], mesh: jax.sharding.Mesh, *, graph: bool | None = None
) -> tuple[Any, Any]:
    """``(graphdef, abstract state)`` of the model ``init_fn`` builds, each leaf a
    ``ShapeDtypeStruct`` carrying its NamedSharding on ``mesh``; nothing is
    allocated."""
    with jax.set_mesh(mesh):
        abstract = eval_shape(init_fn, graph=graph)
        gdef, abs_state = split(abstract)
        shardings = get_named_sharding(abs_state, mesh)
        abs_state = jax.tree.map(
            lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
            abs_state,
            shardings,
        )
    return gdef, abs_state


def as_abstract(tree: A, graph: bool | None = None) -> A:
    """Gives each abstract variable (a ``ShapeDtypeStruct`` value, from
    :func:`eval_shape`) that has ``out_sharding`` and no sharding yet the
    NamedSharding its metadata names, on its ``mesh`` or the current mesh."""
    for _, node in iter_graph(tree):
        if not isinstance(node, Variable):
            continue
        value = node.value
        if (
            isinstance(value, jax.ShapeDtypeStruct)
            and getattr(value, "sharding", None) is None
            and node.metadata.get("out_sharding") is not None
        ):
            mesh = node.metadata.get("mesh") or jax.sharding.get_abstract_mesh()
            sharding = NamedSharding(mesh, get_var_pspec(node) or PartitionSpec())
            object.__setattr__(
                node,
                "_raw_value",
                jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding),
            )
    return tree


abstract_with_sharding = deprecated(as_abstract)
"""The old name of :func:`as_abstract` (warns, then calls it)."""
