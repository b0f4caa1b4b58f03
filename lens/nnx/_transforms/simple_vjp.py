"""``nnx.custom_vjp`` in flax.nnx's simple modes (``graph_updates=False`` or
``graph=False``): ``jax.custom_vjp`` over the arguments as the pytrees they are,
plus the Variables the function updates in place.

An update made inside (``m.z[...] += 1``) comes back into the caller's Variable,
and its cotangent reaches ``bwd`` as ``updates_g`` (when ``bwd`` takes a parameter
of that name): a pytree shaped as the arguments whose updated Variables hold their
cotangents and whose other leaves are None.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax

from lens.nnx._transforms.modes import check_no_aliases
from lens.nnx._transforms.specs import Carrier
from lens.nnx._variables.static import StaticValue
from lens.nnx._variables.variable import Variable, new_variable


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def _variables(tree: Any) -> list[tuple[Any, Variable]]:
    leaves = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_var)[0]
    return [(kp, v) for kp, v in leaves if isinstance(v, Variable)]


def _updates(args: tuple, call: Callable[[], Any]) -> tuple[Any, Carrier]:
    """``call()``'s result and the Variables of ``args`` it gave new values, as a
    carrier (values; keypaths and types static)."""
    before = [(kp, v, v._raw_value) for kp, v in _variables(args)]
    out = call()
    changed = [(kp, v) for kp, v, old in before if v._raw_value is not old]
    keys = tuple((kp, type(v), tuple(v.metadata.items())) for kp, v in changed)
    return out, Carrier([v._raw_value for _, v in changed], StaticValue(keys))


def _takes_updates_g(bwd: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(bwd).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "updates_g" or p.kind is p.VAR_KEYWORD for p in params)


def simple_custom_vjp(
    fun: Callable[..., Any],
    fwd: Callable[..., Any],
    bwd: Callable[..., Any],
    nondiff_argnums: tuple[int, ...],
    args: tuple[Any, ...],
) -> Any:
    """Calls ``fun(*args)`` under ``jax.custom_vjp`` with ``fwd``/``bwd``."""
    check_no_aliases("custom_vjp", args=args)
    outer = dict(_variables(args))

    def primal(*a: Any) -> Any:
        return _updates(a, lambda: fun(*a))

    def primal_fwd(*a: Any) -> Any:
        (out, res), ups = _updates(a, lambda: fwd(*a))
        masked = jax.tree.map(lambda _: None, a, is_leaf=_is_var)
        return (out, ups), (res, masked, Carrier([], ups.aux))

    def primal_bwd(*a: Any) -> Any:
        *nondiff, (res, masked, keys), (out_g, ups_g) = a
        if not _takes_updates_g(bwd):
            return bwd(*nondiff, res, out_g)
        by_path = {
            kp: new_variable(t, g, dict(meta))
            for (kp, t, meta), g in zip(keys.aux.value, ups_g.values, strict=True)
        }
        updates_g = jax.tree_util.tree_map_with_path(
            lambda kp, _: by_path.get(kp),
            masked,
            is_leaf=lambda x: x is None,
        )
        return bwd(*nondiff, res, out_g, updates_g=updates_g)

    f = jax.custom_vjp(primal, nondiff_argnums=nondiff_argnums)
    f.defvjp(primal_fwd, primal_bwd)
    out, ups = f(*args)
    for (kp, _, _), value in zip(ups.aux.value, ups.values, strict=True):
        object.__setattr__(outer[kp], "_raw_value", value)
    return out
