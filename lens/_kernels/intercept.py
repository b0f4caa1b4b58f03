"""Whether a library has patched the functions lens's layers compute with.

Quantization and LoRA libraries (qwix, for one) patch ``jax.lax.dot_general`` or a
``promote_dtype`` for the length of a model call, either by swapping the module
attribute or by replacing the function's ``__code__`` (which every alias sees), and
expect each layer to call it eagerly, as flax's layers do. lens's layers run their
arithmetic as one jitted function when nothing is customised; under such a patch
that would trace the patched function once (a parameter it creates leaks out of the
trace) and then reuse the cached trace without calling it again. The ``*_jit``
kernels ask :func:`intercepted` first and run eagerly when it is true.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import jax.numpy as jnp
from jax import lax

from lens._kernels import dtypes

# The functions the jitted kernels call, as they were when lens imported them: a
# library may swap the module attribute or replace the function's code.
ORIGINALS: tuple[tuple[Any, str, Any], ...] = (
    (lax, "dot_general", lax.dot_general),
    (lax, "conv_general_dilated", lax.conv_general_dilated),
    (jnp, "einsum", jnp.einsum),
    (dtypes, "promote_dtype", dtypes.promote_dtype),
)
# Functions only checked for replaced code, where their module is loaded
# (lens._kernels does not import lens.nnx).
CODE_ONLY = (("lens.nnx.nn.dtypes", "promote_dtype"),)


def code_replaced(fn: Any) -> bool:
    """Whether ``fn``'s ``__code__`` was swapped for code from another file."""
    if not isinstance(fn, types.FunctionType):
        return False
    return fn.__code__.co_filename != fn.__globals__.get("__file__")


# Each original with its code object as lens found it: a function whose code is
# still that object needs no file comparison (every layer call asks, eagerly).
_CHECKS = tuple(
    (module, name, original, original.__code__, code_replaced(original))
    for module, name, original in ORIGINALS
)
_code_seen: dict[tuple[str, str], tuple[Any, bool]] = {}  # CODE_ONLY: code, replaced


def intercepted() -> bool:
    """True while any of those functions is swapped or runs foreign code."""
    for module, name, original, code, replaced in _CHECKS:
        if getattr(module, name) is not original:
            return True
        now = original.__code__
        if replaced if now is code else code_replaced(original):
            return True
    for module_name, name in CODE_ONLY:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        fn = getattr(module, name, None)
        now = getattr(fn, "__code__", None)
        seen = _code_seen.get((module_name, name))
        if seen is None or seen[0] is not now:  # first asked, or its code swapped
            seen = _code_seen[(module_name, name)] = (now, code_replaced(fn))
        if seen[1]:
            return True
    return False
