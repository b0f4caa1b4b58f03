"""``jax.jit`` once a helper is hot: its first calls run eagerly.

Outside ``jax.jit``, a layer's arithmetic (a dense contraction, a key fold, a
constant fill) is several eager primitives, each its own dispatch; one compiled
call is ~10x cheaper per call, so lens jits these helpers for a notebook's eager
loops. But compiling costs ~10-40 ms a helper, paid by the first model a user
builds, where eager JAX would have reused the per-primitive programs that any JAX
code has already compiled. :func:`hot_jit` gives both: a helper runs eagerly for
its first ``after`` calls outside a trace, then through ``jax.jit``. The two give the same bits
(integer key folds, fills) or the same floats as flax's eager layers (a single
dot and add), so which path a call takes changes nothing but its time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
from jax.core import Tracer

# A first model calls each helper a few times per layer; a loop, thousands of
# times. 16 eager calls cost less than one compile of the helper.
EAGER_CALLS = 16


def hot_jit(
    fn: Callable[..., Any],
    *,
    after: int = EAGER_CALLS,
    eager: Callable[..., Any] | None = None,
    **jit_kwargs: Any,
):
    """``fn`` eagerly for its first ``after`` calls, then ``jax.jit(fn, **jit_kwargs)``.

    ``eager``, when given, is what the eager calls run instead of ``fn``: the same
    results, by ops that compile nothing new (a host-side increment, say).

    Example:
        >>> import jax.numpy as jnp
        >>> add = hot_jit(lambda x, y: x + y, after=1)
        >>> int(add(jnp.int32(1), 2)), int(add(jnp.int32(1), 2))  # eager, then jitted
        (3, 3)
        >>> add.calls_left
        0
    """
    jitted = jax.jit(fn, **jit_kwargs)
    run_eagerly = fn if eager is None else eager

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        # Inside a trace the jitted helper is a nested call JAX caches per shape,
        # so a deep stack traces each layer's arithmetic once: keep it there.
        # A plain counter: a race between threads only moves the switch by a call.
        if call.calls_left > 0 and not any(isinstance(a, Tracer) for a in args):  # type: ignore[attr-defined]
            call.calls_left -= 1  # type: ignore[attr-defined]
            return run_eagerly(*args, **kwargs)
        return jitted(*args, **kwargs)

    call.calls_left = after  # type: ignore[attr-defined]
    call.jitted = jitted  # type: ignore[attr-defined]
    return call
