"""The entry points of lens.core: ``init``, ``apply``, ``bind`` and ``lazy_init``, and
the checks of what a user passes them (variables, rngs, mutable)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from lens import errors
from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict, unfreeze
from lens.core._filters import Filter, in_filter, is_filter_empty
from lens.core._rng import is_valid_rng
from lens.core._scope import Scope, VariableDict
from lens.core._unused import Usage, warn_unused


def _is_valid_collection(col: Any) -> bool:
    # all(isinstance(k, str) for k in col), in one C loop
    return isinstance(col, dict | FrozenDict) and all(map(isinstance, col, _STRS))


_STRS = itertools.repeat(str)


def _is_valid_variables(variables: Any) -> bool:
    return isinstance(variables, Mapping) and all(
        isinstance(name, str) and _is_valid_collection(col)
        for name, col in variables.items()
    )


def _is_valid_rng(rng: Any) -> bool:
    return is_valid_rng(rng)


def _is_valid_rngs(rngs: Any) -> bool:
    return isinstance(rngs, dict | FrozenDict) and all(
        isinstance(k, str) and is_valid_rng(v) for k, v in rngs.items()
    )


def _check_rngs(rngs: Any, what: str) -> dict[str, Any]:
    """``{stream: key}`` from a key or a dict of keys, or a clear error."""
    if rngs is None:
        return {}
    if _is_valid_rng(rngs):
        return {"params": rngs}
    if _is_valid_rngs(rngs):
        return dict(rngs)
    bad = ""
    if isinstance(rngs, Mapping):
        bad = ", ".join(
            f'"{k}" ({type(v).__name__}{getattr(v, "shape", "")})'
            for k, v in rngs.items()
            if not (isinstance(k, str) and is_valid_rng(v))
        )
        bad = f" Not keys: {bad}."
    raise errors.InvalidRngError(
        f"{what} should be a ``jax.PRNGKey`` or a dictionary mapping strings to "
        f"``jax.PRNGKey``.\nGot {type(rngs).__name__}.{bad} Make keys with "
        'jax.random.key(seed), e.g. rngs={"params": jax.random.key(0), '
        '"dropout": jax.random.key(1)}.'
    )


def _prepare_variables(variables: Any, mutable: Filter) -> dict[str, Any]:
    if not _is_valid_variables(variables):
        raise errors.ApplyScopeInvalidVariablesTypeError(variables)
    return _unfreeze_variables(variables, mutable)


def _unfreeze_variables(variables: Any, mutable: Filter) -> dict[str, Any]:
    """``variables`` with each collection ``mutable`` matches unfrozen (a copy a
    scope may write); the others are kept as they are."""
    return {
        col: unfreeze(d) if in_filter(mutable, col) else d
        for col, d in variables.items()
    }


def bind(
    variables: VariableDict,
    rngs: Any = None,
    mutable: Filter = False,
    flags: Mapping[str, Any] | None = None,
) -> Scope:
    """Returns a root :class:`Scope` over ``variables`` with an unlimited lifetime.

    Useful for exploring in a notebook; it cannot cross a JAX transform.
    """
    new_vars = _prepare_variables(variables, mutable)
    if rngs is not None and not _is_valid_rngs(rngs):
        raise errors.InvalidRngError(
            "rngs should be a dictionary mapping strings to `jax.PRNGKey`.\n"
            'Pass e.g. rngs={"params": jax.random.key(0)}.'
        )
    return Scope(new_vars, rngs=rngs, mutable=mutable, flags=flags)


def apply(
    fn: Callable[..., Any],
    mutable: Filter = False,
    flags: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """Functionalizes ``fn(scope, *args, **kwargs)`` into ``(variables, *args)``.

    Args:
      fn: a function whose first argument is a :class:`Scope`.
      mutable: the collections that may be written (a filter).
      flags: flags visible as ``scope.flags``.

    Returns:
      ``wrapper(variables, *args, rngs=None, **kwargs)`` returning ``y``, or
      ``(y, mutated_collections)`` when ``mutable`` is not False. The input
      variables are never mutated.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> def f(scope, x):
        ...     return x * scope.param("w", lambda rng: jnp.ones(()))
        >>> y, v = init(f)(jax.random.key(0), 2.0)
        >>> float(apply(f)(v, 3.0))
        3.0
    """
    is_filter_empty(mutable)  # validates the filter early

    @functools.wraps(fn)
    def wrapper(
        variables: VariableDict, *args: Any, rngs: Any = None, **kwargs: Any
    ) -> Any:
        rngs = _check_rngs(rngs, "The ``rngs`` argument passed to an apply function")
        params = variables.get("params") if isinstance(variables, Mapping) else None
        if isinstance(params, Mapping) and "params" in params:
            raise errors.ApplyScopeInvalidVariablesStructureError(variables)
        root = Scope(
            _prepare_variables(variables, mutable),
            rngs=rngs,
            mutable=mutable,
            flags=flags,
        )
        usage = root._shared.usage = Usage() if variables else None
        try:
            y = fn(root, *args, **kwargs)
        finally:
            root.invalidate()
        if usage is not None:
            warn_unused(usage, variables)
        if mutable is not False:
            return y, root.mutable_variables()
        return y

    return wrapper


def init(
    fn: Callable[..., Any],
    mutable: Filter = True,
    flags: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """Functionalizes ``fn(scope, *args)`` for initialization.

    ``init`` is ``apply`` with empty variables, every collection mutable and the
    ``initializing`` flag: a bare key ``k`` means ``{'params': k}``.

    Returns:
      ``wrapper(rngs, *args, **kwargs)`` returning ``(y, variables)``.
    """

    @functools.wraps(fn)
    def wrapper(rngs: Any, *args: Any, **kwargs: Any) -> Any:
        rngs = _check_rngs(rngs, "First argument passed to an init function")
        init_flags = {**(flags or {}), "initializing": True}
        return apply(fn, mutable=mutable, flags=init_flags)(
            {}, *args, rngs=rngs, **kwargs
        )

    return wrapper


def lazy_init(
    fn: Callable[..., Any],
    mutable: Filter = True,
    flags: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """``init`` that takes ``jax.ShapeDtypeStruct`` inputs and returns the variables.

    Nothing that depends on the inputs is computed, so inputs of any size cost
    nothing; variables whose initial value needs an input's value raise.

    Raises:
      LazyInitError: if a variable depends on an input given only by its shape.
    """
    from lens.core._partial_eval import lazy_init as partial_lazy_init

    return partial_lazy_init(
        lambda *args, **kwargs: init(fn, mutable, flags)(*args, **kwargs)[1]
    )


show_at_flax_paths(__name__)
