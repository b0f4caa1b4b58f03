"""Step-numbered checkpoint files (``lens.training.checkpoints``).

Flax's legacy checkpoint API over local paths: :func:`save_checkpoint` writes
``{ckpt_dir}/{prefix}{step}`` in Flax's msgpack format (so files are readable
by either library), through a temporary file and a rename, and keeps the last
``keep`` files. :func:`restore_checkpoint` reads the latest (or a given) step
into a ``target`` of the same structure (or returns the state dict).

Given an ``orbax_checkpointer`` (``orbax.checkpoint``, not a lens dependency)
both hand the work to it; :func:`restore_checkpoint` also reads the Orbax
checkpoint directories Flax's ``save_checkpoint`` writes by default. For new
code prefer Orbax's ``CheckpointManager``.

Example:
    >>> import tempfile, jax.numpy as jnp
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = save_checkpoint(d, {"w": jnp.arange(3)}, step=7, prefix="ck_")
    ...     restored = restore_checkpoint(d, target=None, prefix="ck_")
    >>> path.endswith("ck_7"), restored["w"].tolist()
    (True, [0, 1, 2])
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable
from typing import Any, cast

import jax
import msgpack

from lens import _strict, errors, serialization
from lens._frozen_dict import FrozenDict, freeze
from lens.configurations import config

__all__ = [
    "AsyncManager",
    "available_steps",
    "convert_pre_linen",
    "latest_checkpoint",
    "natural_sort",
    "restore_checkpoint",
    "safe_normpath",
    "save_checkpoint",
    "save_checkpoint_multiprocess",
]

_log = logging.getLogger(__name__)

SIGNED_FLOAT_RE = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
UNSIGNED_FLOAT_RE = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
MODULE_NUM_RE = re.compile(r"(.*)_\d+$")
SCHEME_RE = re.compile("^(?P<scheme>[a-z][a-z0-9.+-]+://)?(?P<path>.*)", re.I)
_TMP = "tmp"

# Flax's file-name constants, for code that looks for checkpoint files by name.
MP_ARRAY_POSTFIX = "_gda"
"""Suffix Flax gave the names of arrays saved apart from the main file."""
MP_ARRAY_PH = "//GDAPlaceholder:"
"""Placeholder Flax wrote in the main file where such an array was."""
COMMIT_SUCCESS_FILE = "commit_success.txt"
"""File a finished multi-process save leaves in its directory."""
ORBAX_CKPT_FILENAME = "checkpoint"
"""The file name of an Orbax checkpoint's single file."""
ORBAX_MANIFEST_OCDBT = "manifest.ocdbt"
"""The manifest of an Orbax OCDBT checkpoint."""
ORBAX_METADATA_FILENAME = "_METADATA"
"""The metadata file of an Orbax checkpoint."""
PyTree = Any
MultiprocessArrayType = Any


class AsyncManager:
    """Runs checkpoint writes in a background thread, one at a time.

    Pass it to :func:`save_checkpoint`: the state is serialized before the call
    returns (so later changes do not leak in); the file is written in the
    background. :meth:`wait_previous_save` blocks until that is done.
    """

    def __init__(self, max_workers: int = 1):
        import concurrent.futures

        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)
        self.save_future: Any = None

    def wait_previous_save(self) -> None:
        """Blocks until the previous save finished (re-raising its error)."""
        if self.save_future is not None and not self.save_future.done():
            _log.warning(
                "The previous async save_checkpoint has not finished yet. Waiting for "
                "it to complete before the next save."
            )
        if self.save_future is not None:
            self.save_future.result()

    def save_async(self, task: Any) -> None:
        """Runs ``task()`` in the background after the previous one."""
        self.wait_previous_save()
        self.save_future = self.executor.submit(task)


def natural_sort(file_list: Iterable[str], signed: bool = True) -> list[str]:
    """Sorts names by their numeric parts: ``f_1, f_2, f_10`` (not ``f_1, f_10, f_2``).

    Example:
        >>> natural_sort(["ck_10", "ck_2", "ck_1"])
        ['ck_1', 'ck_2', 'ck_10']
    """
    float_re = SIGNED_FLOAT_RE if signed else UNSIGNED_FLOAT_RE

    def key(s: str) -> list[Any]:
        return [float(c) if float_re.match(c) else c for c in float_re.split(s)]

    return sorted(file_list, key=key)


def safe_normpath(path: str) -> str:
    """``os.path.normpath`` that keeps a ``scheme://`` prefix intact."""
    match = SCHEME_RE.match(path)
    assert match is not None
    d = match.groupdict()
    return (d["scheme"] or "") + os.path.normpath(d["path"])


def _checkpoint_path(ckpt_dir: str, step: int | float | str, prefix: str) -> str:
    return os.path.join(ckpt_dir, f"{prefix}{step}")


def _split_prefix(ckpt_dir: str, prefix: str) -> tuple[str, str]:
    """``(folder, name prefix)``: a prefix may name a subfolder (``"run1/ckpt_"``),
    as in Flax, which splits ``ckpt_dir/prefix`` the same way."""
    folder, name = os.path.split(os.path.join(ckpt_dir, prefix))
    return folder, name


def _all_checkpoints(ckpt_dir: str, prefix: str) -> list[str]:
    ckpt_dir, prefix = _split_prefix(ckpt_dir, prefix)
    if not os.path.isdir(ckpt_dir):
        return []
    names = [
        n
        for n in os.listdir(ckpt_dir)
        if n.startswith(prefix) and not n.endswith(_TMP) and n[len(prefix) :]
    ]
    names = [n for n in names if SIGNED_FLOAT_RE.fullmatch(n[len(prefix) :])]
    return [os.path.join(ckpt_dir, n) for n in natural_sort(names)]


def latest_checkpoint(
    ckpt_dir: str | os.PathLike, prefix: str = "checkpoint_"
) -> str | None:
    """The path of the highest-step checkpoint in ``ckpt_dir`` (None if none)."""
    paths = _all_checkpoints(safe_normpath(os.fspath(ckpt_dir)), prefix)
    return paths[-1] if paths else None


def available_steps(
    ckpt_dir: str | os.PathLike,
    prefix: str = "checkpoint_",
    step_type: type = int,
) -> list[Any]:
    """The steps of the checkpoints in ``ckpt_dir``, in increasing order."""
    paths = _all_checkpoints(safe_normpath(os.fspath(ckpt_dir)), prefix)
    return [step_type(_step_text(p, prefix)) for p in paths]


def _step_text(path: str, prefix: str) -> str:
    return os.path.basename(path)[len(_split_prefix("", prefix)[1]) :]


def _spans_processes(leaf: Any) -> bool:
    return isinstance(leaf, jax.Array) and not leaf.is_fully_addressable


def _check_step(function: str, step: Any) -> None:
    """Strict mode: a string step (Flax writes it into the file name, where
    ``"1e3"`` or ``"best"`` is then ordered wrongly among the numbers)."""
    if isinstance(step, str) and _strict.enabled():
        raise errors.CheckpointStepTypeError(function, step)


def _check_single_process(target: Any, path: str, step: Any) -> None:
    if any(_spans_processes(x) for x in jax.tree_util.tree_leaves(target)):
        err = errors.MPACheckpointingRequiredError(path, step)
        err.add_note(
            "An array of the target spans devices of several processes, and "
            "save_checkpoint writes from one process. Call "
            "lens.training.checkpoints.save_checkpoint_multiprocess(...) from every "
            "process instead (it gathers the shards; process 0 writes), or pass "
            "orbax_checkpointer=... to it (each process writes its own shards)."
        )
        raise err


def _check_overwrite(ckpt_dir: str, path: str, step: Any, prefix: str) -> None:
    existing = _all_checkpoints(ckpt_dir, prefix)
    if existing:
        newest = float(_step_text(existing[-1], prefix))
        if float(step) <= newest:
            raise errors.InvalidCheckpointError(path, step)


def save_checkpoint(
    ckpt_dir: str | os.PathLike,
    target: Any,
    step: int | float,
    prefix: str = "checkpoint_",
    keep: int = 1,
    overwrite: bool = False,
    keep_every_n_steps: int | None = None,
    async_manager: Any = None,
    orbax_checkpointer: Any = None,
    *,
    checksum: bool = False,
) -> str:
    """Saves ``target`` as ``{ckpt_dir}/{prefix}{step}``; returns the path.

    Args:
      ckpt_dir: the directory (created if missing).
      target: a serializable pytree (a train state, a variable dict...).
      step: the step number (int or float).
      prefix: the file name prefix; it may start with subfolders (``"run1/ck_"``).
      keep: how many of the newest checkpoints to keep (the one just written is
        always kept; 0 keeps them all, as in Flax).
      overwrite: allow saving at a step at or below the newest saved one (the
        newer checkpoints are deleted).
      keep_every_n_steps: also keep every checkpoint whose step is a multiple.
      async_manager: an :class:`AsyncManager` to write the file in the background.
      orbax_checkpointer: if given, ``orbax_checkpointer.save(path, target)``.
      checksum: store a SHA-256 of the contents in the file, which
        :func:`restore_checkpoint` checks (a corrupted file then raises
        ``CheckpointCorruptedError`` instead of restoring wrong values). Such a
        file is lens's: Flax reads only files saved without it.

    Raises:
      InvalidCheckpointError: if a checkpoint at ``step`` or later exists and
        ``overwrite`` is False.
      ValueError: if ``keep`` is negative.
      CheckpointStepTypeError: in strict mode (``lens.strict``), if ``step`` is
        a string.
    """
    _check_step("save_checkpoint", step)
    if keep < 0:
        raise ValueError(
            f"save_checkpoint: keep={keep} is negative.\nkeep is how many of the "
            "newest checkpoints stay (at least the one just written; 0 keeps all)."
        )
    ckpt_dir = safe_normpath(os.fspath(ckpt_dir))
    if async_manager is not None:
        async_manager.wait_previous_save()
    path = _checkpoint_path(ckpt_dir, step, prefix)
    _check_single_process(target, path, step)
    if not overwrite:
        _check_overwrite(ckpt_dir, path, step, prefix)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if orbax_checkpointer is not None:
        orbax_checkpointer.save(path, target, force=overwrite)
        _remove_old(ckpt_dir, prefix, path, keep, overwrite, keep_every_n_steps)
        return path
    data = serialization.to_bytes(target)  # now: later changes must not leak in
    if checksum:
        data = _with_checksum(data)

    def write() -> None:
        tmp = f"{path}.{_TMP}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        _log.info("Saved checkpoint at %s", path)
        _remove_old(ckpt_dir, prefix, path, keep, overwrite, keep_every_n_steps)

    if async_manager is not None:
        async_manager.save_async(write)
    else:
        write()
    return path


def _remove_old(
    ckpt_dir: str,
    prefix: str,
    path: str,
    keep: int,
    overwrite: bool,
    keep_every_n_steps: int | None,
) -> None:
    import shutil

    paths = _all_checkpoints(ckpt_dir, prefix)
    step_of = {p: float(_step_text(p, prefix)) for p in paths}
    if overwrite:  # newer checkpoints than this one go
        for p in paths:
            if step_of[p] > step_of[path]:
                _delete(p, shutil)
        paths = [p for p in paths if step_of[p] <= step_of[path]]
    if keep == 0 or len(paths) <= keep:  # 0 keeps all (Flax's [:-0] is empty)
        return
    last_kept = None
    for p in paths[: len(paths) - keep]:
        if p == path:  # never the checkpoint just written
            continue
        if keep_every_n_steps:
            s = step_of[p]
            if last_kept is None or s - last_kept >= keep_every_n_steps:
                last_kept = s
                continue
        _delete(p, shutil)


def _delete(path: str, shutil: Any) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def save_checkpoint_multiprocess(
    ckpt_dir: str | os.PathLike,
    target: Any,
    step: int | float,
    prefix: str = "checkpoint_",
    keep: int = 1,
    overwrite: bool = False,
    keep_every_n_steps: int | None = None,
    async_manager: Any = None,
    gda_manager: Any = None,
    orbax_checkpointer: Any = None,
) -> str:
    """:func:`save_checkpoint` for a run over several processes: call it from every
    process (with the same arguments); returns the path on each.

    Arrays that span processes are gathered to every host first (a collective,
    hence every process); then process 0 alone writes the one msgpack file, in the
    format :func:`save_checkpoint` writes, and tells the others whether it
    succeeded (a failed write raises on every process, not only on process 0).
    The file holds whole arrays, so it restores onto any mesh or number of
    processes (see :func:`restore_checkpoint`); it needs the whole state in
    process 0's host memory, and a directory every process sees to restore from.
    With ``orbax_checkpointer`` each process writes its own shards instead.

    With ``async_manager``, process 0 writes in the background: a failed write
    then surfaces at its next ``wait_previous_save()`` only, on process 0.

    Raises:
      InvalidCheckpointError: on every process, if a checkpoint at ``step`` or
        later exists and ``overwrite`` is False.
      RuntimeError: on the processes other than 0, if process 0 failed to write.
    """
    del gda_manager
    _check_step("save_checkpoint_multiprocess", step)
    ckpt_dir = safe_normpath(os.fspath(ckpt_dir))
    path = _checkpoint_path(ckpt_dir, step, prefix)
    if orbax_checkpointer is not None:
        orbax_checkpointer.save(path, target, force=overwrite)
        if jax.process_index() == 0:  # old checkpoints go, as after any save
            _remove_old(ckpt_dir, prefix, path, keep, overwrite, keep_every_n_steps)
        return path
    if async_manager is not None:
        async_manager.wait_previous_save()
    if not overwrite:  # on every process, agreed before process 0 may write
        _check_overwrite_everywhere(ckpt_dir, path, step, prefix)
    target = _gather_to_host(target)
    if jax.process_index() != 0:
        _written_by_process_0(path, None)
        return path
    try:
        save_checkpoint(
            ckpt_dir,
            target,
            step,
            prefix=prefix,
            keep=keep,
            overwrite=overwrite,
            keep_every_n_steps=keep_every_n_steps,
            async_manager=async_manager,
        )
    except BaseException:
        _written_by_process_0(path, False)
        raise
    _written_by_process_0(path, True)
    return path


def _check_overwrite_everywhere(
    ckpt_dir: str, path: str, step: Any, prefix: str
) -> None:
    """:func:`_check_overwrite` on every process, then agreed (one collective): each
    raises if any found a checkpoint at ``step`` or later. The collective is also
    the barrier that keeps process 0 from writing ``path`` before a slower
    process has looked (it would then see process 0's new file as a newer one)."""
    if jax.process_count() == 1:
        return _check_overwrite(ckpt_dir, path, step, prefix)
    try:
        _check_overwrite(ckpt_dir, path, step, prefix)
        ok = True
    except errors.InvalidCheckpointError:
        ok = False
    import numpy as np
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.int32(ok))
    if not np.all(flags):
        raise errors.InvalidCheckpointError(path, step)


def _gather_to_host(target: Any) -> Any:
    """``target`` with each array that spans processes replaced by the whole
    array as a NumPy array on this host (one collective for all of them)."""
    leaves, treedef = jax.tree_util.tree_flatten(target)
    where = [i for i, x in enumerate(leaves) if _spans_processes(x)]
    if not where:
        return target
    from jax.experimental import multihost_utils

    whole = multihost_utils.process_allgather([leaves[i] for i in where], tiled=True)
    for i, value in zip(where, whole, strict=True):
        leaves[i] = value
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _written_by_process_0(path: str, ok: bool | None) -> None:
    """Process 0 tells every other process whether it wrote ``path``; a process
    other than 0 (``ok=None``) raises if it did not."""
    if jax.process_count() == 1:
        return
    import numpy as np
    from jax.experimental import multihost_utils

    flag = multihost_utils.broadcast_one_to_all(np.int32(1 if ok else 0))
    if ok is None and int(flag) != 1:
        raise RuntimeError(
            f"save_checkpoint_multiprocess: process 0 failed to write {path}; its "
            "own traceback says why (this is process "
            f"{jax.process_index()}). Nothing was saved at this step."
        )


def restore_checkpoint(
    ckpt_dir: str | os.PathLike,
    target: Any | None,
    step: int | float | None = None,
    prefix: str = "checkpoint_",
    parallel: bool = True,
    gda_manager: Any = None,
    allow_partial_mpa_restoration: bool = False,
    orbax_checkpointer: Any = None,
    orbax_transforms: dict | None = None,
    *,
    checksum: bool | None = None,
) -> Any:
    """Restores the latest (or ``step``'s) checkpoint of ``ckpt_dir`` into ``target``.

    ``ckpt_dir`` may also be a checkpoint file, or one Orbax checkpoint
    directory; a step that Flax saved with Orbax (its default) is restored
    through orbax.checkpoint, as Flax does. With ``target=None`` the state
    dict is returned. Without any checkpoint, ``target`` is returned unchanged.
    Leaves come back as Flax's default (Orbax) restore gives them: JAX arrays with
    no ``target`` and where ``target`` has a JAX array (on its sharding), NumPy
    arrays where it has NumPy arrays; with ``config.flax_use_orbax_checkpointing``
    off, NumPy arrays, as Flax's legacy restore gives. Where ``target`` has an
    array that spans processes or a ``jax.ShapeDtypeStruct`` with a sharding, the
    value is laid out by that sharding (on any mesh, whatever the mesh it was
    saved from), each process building its own shards. Every process may restore
    the same file: after :func:`save_checkpoint_multiprocess`, that is how a
    multi-process run resumes.
    A checksum saved with the file (``save_checkpoint(..., checksum=True)``) is
    always checked; ``checksum=True`` also requires that the file has one.

    Raises:
      ValueError: if ``step`` is given and its checkpoint does not exist.
      CheckpointNotFoundError: in strict mode (``lens.strict``), if ``ckpt_dir``
        does not exist (by default ``target`` is returned, as in Flax).
      CheckpointStepTypeError: in strict mode, if ``step`` is a string.
      CheckpointCorruptedError: if the file does not match its checksum (or has
        none and ``checksum`` is True).
      SerializationError: if the file is not a checkpoint, or its structure (or
        an array's kind of dtype) differs from ``target``'s. A saved array whose
        shape differs from a concrete target array's comes back with its saved
        shape, as in Flax (the target is a placeholder); in strict mode
        (``lens.strict``) that raises too, as it always does for an abstract
        (``jax.ShapeDtypeStruct``) or multi-process target array.
    """
    del parallel, gda_manager, allow_partial_mpa_restoration
    ckpt_dir = safe_normpath(os.fspath(ckpt_dir))
    if step is not None:
        _check_step("restore_checkpoint", step)
        path = _checkpoint_path(ckpt_dir, step, prefix)
        if not os.path.exists(path):
            raise ValueError(
                f"Matching checkpoint not found: {path}\n"
                f"Saved steps: {available_steps(ckpt_dir, prefix, float)}."
            )
    elif not os.path.exists(ckpt_dir):
        if _strict.enabled():
            raise errors.CheckpointNotFoundError(ckpt_dir)
        _log.info("Found no checkpoint directory at %s", ckpt_dir)
        return target
    elif _is_orbax_checkpoint(ckpt_dir):  # the directory is one checkpoint
        path = ckpt_dir
    elif os.path.isdir(ckpt_dir) and orbax_checkpointer is None:
        found = latest_checkpoint(ckpt_dir, prefix)
        if not found:
            _log.info(
                "Found no checkpoint files in %s with prefix %s", ckpt_dir, prefix
            )
            return target
        path = found
    else:
        path = ckpt_dir
    if orbax_checkpointer is None and _is_orbax_checkpoint(path):
        orbax_checkpointer = _default_orbax_checkpointer(path)
    if orbax_checkpointer is not None:
        kwargs = _orbax_restore_kwargs(orbax_checkpointer, target, orbax_transforms)
        restored = serialization.to_state_dict(
            orbax_checkpointer.restore(path, item=target, **kwargs)
        )
    else:
        with open(path, "rb") as f:
            data = _checked(f.read(), path, required=bool(checksum))
        restored = serialization.msgpack_restore(data)
        if config.flax_use_orbax_checkpointing:
            restored = _as_orbax_gives(target, restored)
    if target is None:
        return restored
    if _strict.enabled():  # a saved shape that differs from the target's raises
        return _placed(target, serialization.from_state_dict(target, restored))
    with serialization.saved_shapes_win():  # as Flax: the target is a placeholder
        return _placed(target, serialization.from_state_dict(target, restored))


def _as_orbax_gives(target: Any, restored: Any) -> Any:
    """The arrays of a restored state dict as an Orbax restore gives them, which is
    what Flax restores by default (``config.flax_use_orbax_checkpointing``): JAX
    arrays with no target, and where the target has a JAX array (on its
    sharding); NumPy arrays where the target has NumPy arrays."""
    import numpy as np

    if target is None:
        return jax.tree_util.tree_map(
            lambda x: jax.device_put(x) if isinstance(x, np.ndarray) else x, restored
        )
    wanted = {
        jax.tree_util.keystr(path): leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(
            serialization.to_state_dict(target)
        )
        if isinstance(leaf, jax.Array) and not _spans_processes(leaf)
    }
    if not wanted:
        return restored

    def put(path: Any, x: Any) -> Any:
        like = wanted.get(jax.tree_util.keystr(path))
        if like is None or not isinstance(x, np.ndarray):
            return x
        # on the target's sharding; a saved array of another shape, on the default
        return jax.device_put(x, like.sharding if x.shape == like.shape else None)

    return jax.tree_util.tree_map_with_path(put, restored)


def _is_orbax_checkpoint(path: str) -> bool:
    """Whether ``path`` is a checkpoint directory Orbax wrote (what Flax's
    ``save_checkpoint`` writes by default, ``config.flax_use_orbax_checkpointing``)."""
    return os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, name))
        for name in (ORBAX_CKPT_FILENAME, ORBAX_METADATA_FILENAME, ORBAX_MANIFEST_OCDBT)
    )


def _default_orbax_checkpointer(path: str) -> Any:
    """The checkpointer Flax restores an Orbax checkpoint directory with."""
    try:
        import orbax.checkpoint as ocp
    except ImportError:
        raise ImportError(
            f"restore_checkpoint: {path} is an Orbax checkpoint directory (Flax's "
            "save_checkpoint writes these by default), and orbax.checkpoint is not "
            "installed.\nInstall it to restore the checkpoint: pip install "
            "orbax-checkpoint."
        ) from None
    return ocp.Checkpointer(ocp.PyTreeCheckpointHandler())


def _orbax_restore_kwargs(checkpointer: Any, target: Any, transforms: Any) -> dict:
    """As Flax: with a target, Orbax restores each array with the sharding of the
    target's leaf (``restore_args``), and a PyTree handler gets ``transforms``."""
    if target is None:
        return {}
    from lens.training import orbax_utils

    kwargs = {"restore_args": orbax_utils.restore_args_from_target(target)}
    handler = getattr(checkpointer, "_handler", None)
    if type(handler).__name__ == "PyTreeCheckpointHandler":
        kwargs["transforms"] = orbax_utils.maybe_construct_transformations(
            target, transforms
        )
    return kwargs


def _wants_placement(leaf: Any) -> bool:
    """A target leaf whose restored value goes onto its devices: an array that
    spans processes, or an abstract array (``jax.ShapeDtypeStruct``) that names a
    sharding. Other leaves come back as NumPy arrays, as in Flax."""
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return leaf.sharding is not None
    return _spans_processes(leaf)


def _placed(target: Any, restored: Any) -> Any:
    """``restored`` with each value at a :func:`_wants_placement` leaf of
    ``target`` laid out by that leaf's sharding (this process builds its shards)."""
    if not any(_wants_placement(x) for x in jax.tree_util.tree_leaves(target)):
        return restored
    import numpy as np

    def place(want: Any, value: Any) -> Any:
        if not _wants_placement(want) or isinstance(value, jax.Array):
            return value  # (an Orbax checkpointer places the arrays it restores)
        value = np.asarray(value)  # its shape is the target's (from_state_dict checks)
        return jax.make_array_from_callback(
            value.shape, want.sharding, lambda index: value[index]
        )

    return jax.tree_util.tree_map(place, target, restored)


def convert_pre_linen(params: Any) -> Any:
    """Renames pre-Linen submodules (numbered across classes) to Linen's per-class numbering.

    ``{'Conv_0': ..., 'Dense_1': ...}`` becomes ``{'Conv_0': ..., 'Dense_0': ...}``;
    Linen-style trees come back unchanged.
    """
    if not isinstance(params, dict | FrozenDict):
        return params
    renamed: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for name in natural_sort(params.keys()):
        value = params[name]
        match = MODULE_NUM_RE.match(name)
        if match:
            module = match.group(1)
            num = counts.get(module, 0)
            name = f"{module}_{num}"
            counts[module] = num + 1
        renamed[name] = convert_pre_linen(value)
    return freeze(renamed) if isinstance(params, FrozenDict) else renamed


# ------------------------------------------------------------------- checksums

# A file saved with a checksum is the msgpack array [_CHECKSUM_TAG, sha256 hex,
# payload], where the payload is the plain checkpoint bytes. A plain checkpoint
# is a msgpack map or a single leaf, never an array that starts with this tag.
_CHECKSUM_TAG = "lens-checkpoint-sha256"
_CHECKSUM_HEAD = b"\x93" + bytes(msgpack.packb(_CHECKSUM_TAG) or b"")


def _with_checksum(data: bytes) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    return cast(bytes, msgpack.packb([_CHECKSUM_TAG, digest, data]))


def _checked(data: bytes, path: str, required: bool) -> bytes:
    """The checkpoint bytes inside ``data``, their checksum verified."""
    if not data.startswith(_CHECKSUM_HEAD):
        if required:
            raise errors.CheckpointCorruptedError(
                path, "It has no checksum (it was saved without checksum=True)."
            )
        return data
    try:
        tag, digest, payload = msgpack.unpackb(data)
    except Exception as e:  # cut short, or the header itself is damaged
        raise errors.CheckpointCorruptedError(
            path, f"The file cannot be read ({type(e).__name__})."
        ) from e
    if tag != _CHECKSUM_TAG or not isinstance(payload, bytes):
        raise errors.CheckpointCorruptedError(path, "Its header is damaged.")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise errors.CheckpointCorruptedError(path)
    return payload
