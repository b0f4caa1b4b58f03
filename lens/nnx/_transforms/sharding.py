"""``nnx.shard_map``: ``jax.shard_map`` for functions of objects.

Each argument's spec is a ``PartitionSpec`` prefix, as in JAX; for an object,
one spec applies to all its variables, or ``StateSharding({filter: spec})``
gives each variable the spec of the first filter it matches (filters see the
path inside the object, e.g. ``('linear1', 'kernel')``). Argument objects'
updates come back with their input specs; outputs follow ``out_specs``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.iteration import StructureChanged, mapped_body, per_argument
from lens.nnx._transforms.modes import transform_mode, with_calling_conventions
from lens.nnx._transforms.recipe import (
    check_structure,
    merge_outputs,
    split_args,
    write_back,
)
from lens.nnx._transforms.specs import Carrier, StateAxes, axes_resolver
from lens.traceback_util import api_boundary


class StateSharding(StateAxes):
    """Per-filter ``PartitionSpec`` s for one object in :func:`shard_map`'s specs.

    ``StateSharding({nnx.Param: P(None, 'model'), ...: P()})``: params split on
    their second axis over ``'model'``, everything else replicated. Filters are
    tried in order; every variable must match one.
    """

    _what = "spec"

    def __init__(self, filter_sharding: Any, /):
        super().__init__(filter_sharding)

    @property
    def shardings(self) -> tuple[Any, ...]:
        """The spec of each filter, in order (flax.nnx's name for ``axes``)."""
        return self.axes

    def __repr__(self) -> str:
        return "StateSharding" + super().__repr__()[len("StateAxes") :]


def _describe(spec: Any) -> str:
    return f"spec {spec!r}"


def shard_map(
    f: Callable[..., Any] | None = None,
    *,
    mesh: Any,
    in_specs: Any,
    out_specs: Any,
    axis_names: Any = frozenset(),
    check_vma: bool = True,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.shard_map`` whose arguments and results may hold objects.

    Example (data parallel)::

        mesh = jax.make_mesh((8,), ("data",))

        @nnx.shard_map(mesh=mesh, in_specs=(P(), P("data")), out_specs=P("data"))
        def f(model, x):
            return model(x)
    """
    mode = transform_mode("shard_map", f, graph, graph_updates)
    if f is None:
        return functools.partial(
            shard_map,
            mesh=mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            axis_names=axis_names,
            check_vma=check_vma,
            graph=graph,
            graph_updates=graph_updates,
        )

    @functools.wraps(f)
    @api_boundary
    def wrapper(*args: Any) -> Any:
        specs = per_argument("shard_map", "in_specs", in_specs, args)
        walker = Walker(axes_resolver, describe=_describe, transform="shard_map")
        skel, entries = split_args(args, specs, walker)
        graph_specs = [e.spec for e in entries if e.leaf is not None]

        try:
            new_values, outs = jax.shard_map(
                mapped_body("shard_map", f, skel, specs, out_specs, _describe),
                mesh=mesh,
                in_specs=(Carrier([e.spec for e in entries], None),),
                out_specs=(graph_specs, out_specs),
                axis_names=axis_names,
                check_vma=check_vma,
            )(Carrier([e.value for e in entries], None))
        except StructureChanged as change:  # only vmap builds new state inside
            check_structure(skel, change.changed.value[0], "shard_map")
            raise
        write_back(entries, new_values)
        return merge_outputs(outs, walker.nodes)

    return with_calling_conventions(mode, f, wrapper)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
