"""The JAX trace a Variable was made in, and the check that refuses to change a
Variable from another one (flax.nnx's "Cannot mutate ... from a different trace
level"); nnx transform frames are checked too (``tracers.check_mutable``).
"""

from __future__ import annotations

from typing import Any

from lens import errors
from lens.nnx.tracers import check_mutable


def check_update(v: Any, what: str, structural: bool = True) -> None:
    """Refuses to change ``v`` inside a transform other than the one it was made
    in: an nnx transform (see ``check_mutable``) or, as flax.nnx, a JAX trace
    (``jax.jit``, ``jax.grad``, ...). Writes into a ref go around this."""
    check_mutable(v, what, structural=structural, variable=True)
    if not object.__getattribute__(v, "_trace_state").is_valid():
        raise errors.TraceContextError(
            f"Cannot mutate {type(v).__name__} from a different trace level (tried "
            f"to {what}): it was made outside the JAX transform running now (or in "
            "one that has ended).\nPass it to the transformed function as an "
            "argument, or make it ref=True or hijax=True to update it in place."
        )
