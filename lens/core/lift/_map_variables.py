"""``map_variables``: transform a collection on its way into and out of a function.

Example uses: tied weights (an auto-encoder whose decoder uses the transposed
encoder kernel), weight normalisation, or quantised views of parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens.core._filters import Filter, subtract_filters
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def map_variables(
    fn: Callable[..., Any],
    mapped_collections: Filter,
    map_in_fn: Callable[[Any], Any],
    map_out_fn: Callable[[Any], Any],
    init: bool,
    mutable: bool,
    rngs: Filter = True,
    variables: Filter = True,
) -> Callable[..., Any]:
    """Maps ``mapped_collections`` through ``map_in_fn`` before ``fn`` sees them.

    Args:
      fn: ``fn(scope, *args)``.
      mapped_collections: the collections to map.
      map_in_fn: ``{collection: tree} -> {collection: tree}``, applied going in.
      map_out_fn: the inverse, applied to what ``fn`` wrote, going out.
      init: if True, and the mapped collections are mutable, ``fn`` first runs once
        unmapped to create the variables, which are then mapped.
      mutable: whether the mapped collections may be written inside.
      rngs, variables: the streams and other collections visible inside.

    Returns:
      ``wrapper(scope, *args, **kwargs)``.
    """
    writes_target = mutable or init

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        target, other = variable_groups
        if init:
            scopes = scope_fn((target, other), rng_groups)
            fn(scopes, *args, **kwargs)
            target, _ = repack_fn(scopes)
        mapped = tuple(map_in_fn(t) for t in target)
        scopes = scope_fn(
            (mapped, other),
            rng_groups,
            mutable_filter=True
            if mutable
            else subtract_filters(True, mapped_collections),
        )
        y = fn(scopes, *args, **kwargs)
        out_target, out_other = repack_fn(scopes)
        if init and not mutable:
            return y, (target, out_other)
        if writes_target:
            out_target = tuple(map_out_fn(t) for t in out_target)
        return y, (out_target, out_other)

    out_filters = (
        (mapped_collections, variables)
        if writes_target
        else (False, subtract_filters(variables, mapped_collections))
    )
    return pack(
        inner,
        (mapped_collections, variables),
        out_filters,
        (rngs,),
        name="map_variables",
        hint=filter_hint("variables"),
        trace_options=dict(
            mapped_collections=mapped_collections,
            map_in_fn=map_in_fn,
            map_out_fn=map_out_fn,
            init=init,
            mutable=mutable,
        ),
        group_labels=["mapped", "unchanged"],
        rng_labels=["shared"],
    )


def transform(
    fn: Callable[..., Any],
    target: Filter = "params",
    trans_in_fn: Callable[[Any], Any] = lambda x: x,
    trans_out_fn: Callable[[Any], Any] = lambda x: x,
    init: bool = True,
    mutable: bool = False,
    rngs: Filter = True,
    variables: Filter = True,
) -> Callable[..., Any]:
    """The general-purpose ``transform`` of the lifting design note.

    The same as :func:`map_variables` with ``target`` as the mapped collections.
    """
    return map_variables(
        fn, target, trans_in_fn, trans_out_fn, init, mutable, rngs, variables
    )
