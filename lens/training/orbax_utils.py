"""Arguments for Orbax checkpointing (``lens.training.orbax_utils``, like
``flax.training.orbax_utils``).

Orbax (``pip install orbax-checkpoint``) is optional for lens: this module imports,
and :func:`is_multi_device_array` works, without it; the functions that build Orbax
objects raise ``ImportError`` saying what to install.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

PyTree = Any


def _orbax() -> ModuleType:
    """``orbax.checkpoint``, or an ImportError that says how to get it."""
    try:
        return importlib.import_module("orbax.checkpoint")
    except ImportError as e:
        raise ImportError(
            "lens.training.orbax_utils builds Orbax arguments and needs Orbax: "
            "pip install orbax-checkpoint"
        ) from e


def is_multi_device_array(value: Any) -> bool:
    """Whether Orbax should write ``value`` with TensorStore: a ``jax.Array``
    that is not fully replicated.

    Example:
        >>> import jax.numpy as jnp
        >>> is_multi_device_array(jnp.zeros(3)), is_multi_device_array(3.0)
        (False, False)
    """
    return isinstance(value, jax.Array) and not value.is_fully_replicated


def save_args_from_target(target: Any) -> Any:
    """A tree like ``target`` with an ``orbax.checkpoint.SaveArgs()`` per leaf."""
    ocp = _orbax()
    return jax.tree_util.tree_map(lambda _: ocp.SaveArgs(), target)


def maybe_construct_transformations(target: Any, transforms: Any | None) -> Any:
    """``transforms`` if given; else, for each ``None`` leaf of ``target`` (by its
    ``/``-joined path), an ``orbax.checkpoint.Transform(use_fallback=True)``."""
    if transforms is not None:
        return transforms
    ocp = _orbax()
    flat = ocp.utils.to_flat_dict(target, sep="/", keep_empty_nodes=True)
    return {
        path: ocp.Transform(use_fallback=True)
        for path, value in flat.items()
        if value is None
    }


def restore_args_from_target(target: Any, mesh: Mesh | None = None) -> Any:
    """Orbax ``restore_args`` for a tree shaped like the checkpoint.

    Arrays restore with the sharding of ``target``'s arrays at the same place;
    a target without sharded leaves restores numpy arrays.

    Args:
        target: a tree with the checkpoint's structure.
        mesh: deprecated (as in Flax): build ``target``'s arrays on the mesh
            instead. When given, each sharding's spec is placed on this mesh.

    Returns:
        A tree of ``RestoreArgs`` (or ``ArrayRestoreArgs`` for sharded arrays).
    """
    ocp = _orbax()
    shardings = jax.tree_util.tree_map(lambda x: getattr(x, "sharding", None), target)
    if not any(jax.tree_util.tree_leaves(shardings)):
        return jax.tree_util.tree_map(
            lambda _: ocp.RestoreArgs(restore_type=np.ndarray), target
        )
    if mesh is not None:
        warnings.warn(
            "restore_args_from_target(): `mesh` arg is deprecated. Simply calling "
            "the function with target pytree should suffice.",
            DeprecationWarning,
            stacklevel=2,
        )
        shardings = jax.tree_util.tree_map(
            lambda s: jax.sharding.NamedSharding(mesh, s.spec), shardings
        )
    return ocp.checkpoint_utils.construct_restore_args(
        target, shardings, set_global_shape=False
    )
