"""Helpers shared by the tests: array-tree comparison and trace counting."""

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
def count_compiles() -> Iterator[list[int]]:
    """Counts XLA compilations in the block (JAX's own compile log)."""
    box = [0]
    import logging

    logger = logging.getLogger("jax._src.dispatch")

    class H(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if (
                "Finished XLA compilation" in record.getMessage()
                or "Compiling" in record.getMessage()
            ):
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
