"""Helpers shared by the tests: array-tree comparison, trace counting, and the
visible text of a display's HTML."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np


def tree_allclose(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6) -> bool:
    """True if two trees have the same structure and all leaves are close."""
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    if ta != tb:
        return False
    return all(
        np.shape(x) == np.shape(y)
        and np.allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)
        for x, y in zip(la, lb)
    )


def assert_tree_allclose(
    a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6
) -> None:
    """Asserts :func:`tree_allclose` with a readable message."""
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, f"structures differ:\n{ta}\n{tb}"
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def shapes(tree: Any) -> Any:
    """The tree with each leaf replaced by its shape."""
    return jax.tree_util.tree_map(np.shape, tree)


class TraceCounter:
    """Counts how often a function body is traced (compiled) by ``jax.jit``."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


@contextlib.contextmanager
def _count_jax_log(*needles: str) -> Iterator[list[int]]:
    """Counts JAX's compile-log messages (``jax_log_compiles``) holding a needle."""
    box = [0]
    import logging

    logger = logging.getLogger("jax._src.dispatch")

    class H(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if any(n in record.getMessage() for n in needles):
                box[0] += 1

    h = H()
    old = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    logger.addHandler(h)
    try:
        yield box
    finally:
        logger.removeHandler(h)
        jax.config.update("jax_log_compiles", old)


def count_compiles() -> contextlib.AbstractContextManager[list[int]]:
    """Counts XLA compilations in the block (JAX's own compile log)."""
    return _count_jax_log("Finished XLA compilation", "Compiling")


def count_lowerings() -> contextlib.AbstractContextManager[list[int]]:
    """Counts lowerings to MLIR in the block (JAX's own log: one per
    ``jax.jit(f).lower(...)`` or first jitted call; ``eval_shape`` lowers none)."""
    return _count_jax_log("Finished jaxpr to MLIR module conversion")


def tabulate(nnx: Any, model: Any, *args: Any, **kwargs: Any) -> str:
    """``nnx.tabulate(model, ...)``, leaving every module class of ``model`` as it
    was. flax 0.12.8's tabulate (the oracle's), restoring the methods it wrapped,
    sets each inherited one (``sow``, ``perturb``, ...) on the class itself; a later
    flax ``nnx.capture(method_outputs=...)`` in the same process then wraps ``sow``
    and recurses forever. lens's tabulate leaves no method behind (checked here)."""
    classes = {type(m) for _, m in nnx.iter_modules(model)}
    before = {c: {k for k, v in vars(c).items() if callable(v)} for c in classes}
    try:
        return nnx.tabulate(model, *args, **kwargs)
    finally:
        left = {
            c: {k for k, v in vars(c).items() if callable(v)} - before[c]
            for c in classes
        }
        for c, names in left.items():
            for name in names:
                delattr(c, name)
        if not nnx.__name__.startswith("flax"):
            assert not any(left.values()), f"tabulate left methods behind: {left}"


def visible_text(html: str) -> str:
    """What a reader sees of ``html``: the text without tags, entities decoded (a
    caption's hover-text spans, ``<b>`` and the like drop out)."""
    import html as _html
    import re

    return _html.unescape(re.sub(r"<[^>]+>", "", html))


def on_lens_and_flax_nnx() -> Any:
    """``@pytest.mark.parametrize("nnx", ...)`` over ``lens.nnx`` and, where the
    oracle is installed, ``flax.nnx`` (ids ``lens``/``flax``): a case asserts what
    holds for both, so a difference shows as one side failing."""
    import pytest

    from lens import nnx as lens_nnx

    try:
        import flax.nnx as flax_nnx
    except ImportError:  # flax is the optional test oracle
        flax_nnx = None
    return pytest.mark.parametrize(
        "nnx",
        [
            lens_nnx,
            pytest.param(
                flax_nnx,
                marks=pytest.mark.skipif(flax_nnx is None, reason="flax not installed"),
            ),
        ],
        ids=["lens", "flax"],
    )
