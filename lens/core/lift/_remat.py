"""``checkpoint`` (``remat``): recompute the function's activations on the backward pass."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import jax

from lens._argnums import argnums, out_of_range
from lens.core._filters import Filter
from lens.core.lift._pack import pack
from lens.core.lift._util import filter_hint


def checkpoint(
    fn: Callable[..., Any],
    variables: Filter = True,
    rngs: Filter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
) -> Callable[..., Any]:
    """A lifted ``jax.checkpoint``: ``fn(scope, *args, **kwargs)`` is rematerialised.

    Args:
      fn: the function; its first argument is a scope.
      variables: the collections visible inside.
      rngs: the rng streams visible inside.
      concrete: deprecated in JAX; must be False (use ``static_argnums``).
      prevent_cse, policy: as in ``jax.checkpoint``.
      static_argnums: positions of the arguments after the scope (0 is the first)
        that are Python values rather than arrays (e.g. a ``train`` flag).

    Raises:
      NotImplementedError: for ``concrete=True``.
      ValueError: if a static position is beyond the arguments given.
    """
    static = argnums(static_argnums, "remat: static_argnums")
    if concrete:
        raise NotImplementedError(
            "The concrete argument is deprecated. Use static_argnums instead. for "
            "more information, see "
            "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html"
        )

    def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
        bad = out_of_range(static, len(args))
        if bad:
            raise ValueError(
                f"remat: static_argnums {bad} refer to arguments the function was not "
                f"given (it got {len(args)} after the scope/module).\nCount from the "
                "first argument after the module (nn.remat counts self as 0)."
            )

        @functools.partial(
            jax.checkpoint,
            static_argnums=tuple(i % len(args) + 2 for i in static),
            prevent_cse=prevent_cse,
            policy=policy,
        )
        @functools.wraps(fn)
        def rematted(variable_groups, rng_groups, *args, **kwargs):
            scope = scope_fn(variable_groups, rng_groups)
            y = fn(scope, *args, **kwargs)
            return y, repack_fn(scope)

        return rematted(variable_groups, rng_groups, *args, **kwargs)

    return pack(
        inner,
        (variables,),
        (variables,),
        (rngs,),
        name="remat",
        enable_kwargs=True,
        hint=filter_hint("variables"),
        trace_options=dict(
            variables=variables,
            rngs=rngs,
            prevent_cse=prevent_cse,
            static_argnums=static,
            policy=policy,
        ),
        group_labels=["all"],
        rng_labels=["shared"],
    )


remat = checkpoint


def remat_scan(
    body_fn: Callable[..., Any],
    lengths: Iterable[int],
    policy: Callable[..., bool] | None = None,
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    variable_axes: Any = {True: 0},  # noqa: B006 - read only
    split_rngs: Any = {True: True},  # noqa: B006 - read only
    metadata_params: Any = {},  # noqa: B006 - read only
) -> Callable[..., Any]:
    """``prod(lengths)`` repetitions of ``body_fn(scope, carry) -> carry``.

    A nested scan, each level rematerialised: memory grows like the sum of the
    lengths, not their product, and compile time stays constant. ``variable_axes``
    stacks one slice per repetition (``{True: 0}``: every collection).
    ``metadata_params`` (lens) names each added axis for boxes.
    """
    from lens.core.lift._scan import scan

    lengths = tuple(lengths)
    scan_fn = functools.partial(
        scan,
        variable_broadcast=variable_broadcast,
        variable_carry=variable_carry,
        variable_axes=variable_axes,
        split_rngs=split_rngs,
        metadata_params=metadata_params,
    )
    if len(lengths) == 1:

        def wrapper(scope: Any, carry: Any) -> Any:
            return body_fn(scope, carry), ()

        return lambda scope, c: scan_fn(wrapper, length=lengths[0])(scope, c)[0]

    @functools.partial(checkpoint, policy=policy, prevent_cse=False)
    def inner_loop(scope: Any, carry: Any) -> Any:
        carry = remat_scan(
            body_fn,
            lengths[1:],
            policy,
            variable_broadcast,
            variable_carry,
            variable_axes,
            split_rngs,
            metadata_params,
        )(scope, carry)
        return carry, ()

    return lambda scope, c: scan_fn(inner_loop, length=lengths[0])(scope, c)[0]
