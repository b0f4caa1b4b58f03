"""``map_variables``: transform a collection on its way into and out of a function.

Example uses: tied weights (an auto-encoder whose decoder uses the transposed
encoder kernel), weight normalisation, or quantised views of parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax

from lens._frozen_dict import unfreeze
from lens.core._filters import Filter, is_filter_empty, subtract_filters
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint, id_fn


def map_variables(
    fn: Callable[..., Any],
    mapped_collections: Filter,
    map_in_fn: Callable[[Any], Any] = id_fn,
    map_out_fn: Callable[[Any], Any] = id_fn,
    init: bool = False,
    mutable: bool = False,
    rngs: Filter = True,
    variables: Filter = True,
) -> Callable[..., Any]:
    """Maps ``mapped_collections`` through ``map_in_fn`` before ``fn`` sees them.

    Args:
      fn: ``fn(scope, *args)``.
      mapped_collections: the collections to map.
      map_in_fn: ``{collection: tree} -> {collection: tree}``, applied going in.
      map_out_fn: the inverse, applied to what ``fn`` wrote, going out.
      init: when the collections are mutable (at init), first run ``fn`` on the
        unmapped variables to create them, map them out (``map_out_fn``) and then
        in again (``map_in_fn``) for the real call.
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
            leaves = jax.tree_util.tree_leaves(
                scopes, is_leaf=lambda x: hasattr(x, "make_rng")
            )
            if any(not is_filter_empty(s.mutable) for s in leaves):
                fn(scopes, *args, **kwargs)
                target, _ = repack_fn(scopes)
                target = tuple(_mapped(map_out_fn, "map_out_fn", t) for t in target)
        target = tuple(_mapped(map_in_fn, "map_in_fn", unfreeze(t)) for t in target)
        mutable_filter: Filter = True
        if not writes_target:
            # the mapped collections are read-only inside unless the mapping is
            # invertible for writes (init=True or mutable=True)
            mutable_filter = subtract_filters(True, mapped_collections)
        scopes = scope_fn((target, other), rng_groups, mutable_filter=mutable_filter)
        y = fn(scopes, *args, **kwargs)
        out_target, out_other = repack_fn(scopes)
        if writes_target:
            out_target = tuple(_mapped(map_out_fn, "map_out_fn", t) for t in out_target)
        return y, (out_target, out_other)

    in_filters = (mapped_collections, variables)
    out_filters = (
        in_filters
        if writes_target
        else (False, subtract_filters(variables, mapped_collections))
    )
    return pack(
        inner,
        in_filters,
        out_filters,
        (rngs,),
        name="map_variables",
        enable_kwargs=True,
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


def _mapped(fn: Callable[[Any], Any], name: str, tree: Any) -> Any:
    """``fn(tree)``, refused unless it is a ``{collection: tree}`` dict."""
    out = fn(tree)
    if not isinstance(out, Mapping):
        raise TypeError(
            f"map_variables: {name} returned a value of type {type(out).__name__}, "
            "not the variables as {collection: nested dict}.\nReturn the "
            "(mapped) dict it was given, e.g. lambda v: jax.tree.map(f, v)."
        )
    return out


def swap_collection(
    fn: Callable[..., Any], col_a: str, col_b: str
) -> Callable[..., Any]:
    """``fn`` sees collection ``col_a`` as ``col_b`` and the other way round."""

    def swap(target: dict[str, Any]) -> dict[str, Any]:
        a = target[col_a] if col_a in target else {}
        b = target[col_b] if col_b in target else {}
        target[col_b], target[col_a] = a, b
        return target

    return map_variables(fn, (col_a, col_b), swap, swap, mutable=True)


def transform(
    fn: Callable[..., Any],
    target: Filter = "params",
    trans_in_fn: Callable[[Any], Any] = id_fn,
    trans_out_fn: Callable[[Any], Any] = id_fn,
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
