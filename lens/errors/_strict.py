"""What strict mode (``lens.strict``) raises and warns where Flax is silent.

Each error is raised only in strict mode, except :class:`BytesCorruptedError`,
which any restore of bytes written with ``to_bytes(..., checksum=True)`` raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lens.errors._base import LensError, _join

_STRICT = "lens strict mode reports this (Flax accepts it silently)."


def _listed(paths: Sequence[str], count: int) -> str:
    more = f" (and {count - len(paths)} more)" if count > len(paths) else ""
    return f"{', '.join(paths)}{more}"


class StrictModeWarning(UserWarning):
    """A likely mistake that strict mode reports but that the code may mean.

    Strict mode (``lens.strict``) raises where the result is certainly wrong and
    warns with this category where it may be intended. To make every strict
    report an error: ``warnings.simplefilter("error", lens.errors.StrictModeWarning)``;
    to accept one case: ``warnings.filterwarnings("ignore", message=...,
    category=lens.errors.StrictModeWarning)``.
    """


StrictModeWarning.__module__ = "lens.errors"  # where users find it


class UnusedVariablesError(LensError, ValueError):
    """``apply`` was given values that no module read, beside variables a module
    did read (strict mode; by default lens warns ``UnusedVariablesWarning``).

    A typo'd or renamed name trains nothing: the module reads the name it
    declares and the extra value is ignored. Wrong::

        params["Dense_0"]["kernal"] = pretrained   # the layer reads "kernel"
        model.apply({"params": params}, x)

    Right: use the names ``model.init`` returns, or drop the values the model
    does not use.
    """

    def __init__(self, paths: Sequence[str] = (), count: int | None = None):
        count = len(paths) if count is None else count
        super().__init__(
            _join(
                f"apply was given {count} variable(s) that no module read: "
                f"{_listed(paths, count)}.",
                "Each sits beside variables the module read, under a name it did "
                "not declare: rename it to the name model.init returns, or drop it.",
                _STRICT,
            )
        )


class UnusedGradientsError(LensError, ValueError):
    """``Optimizer.update`` was given gradients for paths the model does not have
    (strict mode; Flax drops the gradients its ``wrt`` filter does not select).

    Wrong::

        grads = nnx.grad(loss)(other_model)       # another model's paths
        optimizer.update(model, grads)

    Right: take the gradients of the model the optimizer updates
    (``nnx.grad(loss)(model)``), or rename the gradient tree's keys to the
    model's (``nnx.state(model, nnx.Param)`` shows them).
    """

    def __init__(self, paths: Sequence[str] = (), count: int | None = None):
        count = len(paths) if count is None else count
        super().__init__(
            _join(
                f"Optimizer.update was given gradients for {count} path(s) the "
                f"model does not have: {_listed(paths, count)}.",
                "Take the gradients of the model being updated (nnx.grad(loss)"
                "(model)); nnx.state(model, nnx.Param) shows its paths.",
                _STRICT,
            )
        )


class JitArgnumsError(LensError, ValueError):
    """``nn.jit`` was given ``static_argnums`` or ``donate_argnums`` past the
    arguments of the call (strict mode; Flax ignores them).

    Wrong::

        nn.jit(Model, static_argnums=(3,))().init(key, x)   # one argument

    Right: count as the call does, the module (or scope) as 0 and its other
    arguments from 1: ``nn.jit(Model, static_argnums=(2,))`` for
    ``__call__(self, x, train)``. JAX's ``jax.jit`` raises this ``ValueError``
    for a function whose signature it can read.
    """

    def __init__(self, what: str, nums: Sequence[int], count: int):
        super().__init__(
            _join(
                f"Jitted function has {what}={tuple(nums)}, but only accepts "
                f"{count} positional arguments.",
                "nn.jit counts the module (or scope) as 0 and its other arguments "
                "from 1; Flax ignores the ones past the call's.",
                _STRICT,
            )
        )


class BytesCorruptedError(LensError, ValueError):
    """Bytes written with a checksum (``to_bytes(..., checksum=True)``) no
    longer match it: a disk, a copy or a network changed them.

    Without a checksum a flipped bit inside array data restores a wrong value
    silently (in Flax and lens alike); with one, ``from_bytes`` and
    ``msgpack_restore`` raise this error instead. Right: restore the bytes from
    a good copy. The checksum is an entry of the top-level map that Flax's
    ``from_bytes`` ignores, so the bytes stay readable by Flax.
    """

    def __init__(self, detail: str = ""):
        super().__init__(
            _join(
                "The serialized bytes do not match the checksum written with "
                f"them.{' ' + detail if detail else ''}",
                "They were changed after to_bytes(..., checksum=True) wrote them; "
                "restore them from a good copy.",
            )
        )


class CheckpointNotFoundError(LensError, FileNotFoundError):
    """``restore_checkpoint`` was given a directory that does not exist (strict
    mode; Flax returns the target unchanged, as if training started fresh).

    Wrong: a typo'd path silently restarts training from scratch::

        state = restore_checkpoint("/ckpts/run_1", state)   # saved to run1

    Right: fix the path; to start fresh on purpose, create the directory first
    (``os.makedirs(ckpt_dir, exist_ok=True)``): an empty directory restores the
    target unchanged, in strict mode too.
    """

    def __init__(self, path: Any):
        super().__init__(
            _join(
                f'restore_checkpoint: no checkpoint directory at "{path}".',
                "Fix the path, or create the directory (os.makedirs(ckpt_dir, "
                "exist_ok=True)) to start from the target on purpose.",
                "lens strict mode reports this (Flax returns the target unchanged).",
            )
        )


class CheckpointStepTypeError(LensError, TypeError):
    """A checkpoint step was given as a string (strict mode).

    The step becomes part of the file name and checkpoints are ordered by the
    numbers in their names, so a string step such as ``"1e3"``, ``"best"`` or
    ``"10.5"`` is ordered wrongly: ``latest_checkpoint`` and ``keep`` then pick
    the wrong files. Wrong::

        save_checkpoint(ckpt_dir, state, step=str(step))

    Right: ``save_checkpoint(ckpt_dir, state, step=int(step))``.
    """

    def __init__(self, function: str, step: Any):
        super().__init__(
            _join(
                f"{function}: step={step!r} is a string; a step is an int or a float.",
                "Pass a number (step=int(step)): checkpoints are ordered by the "
                "numbers in their names, which a string such as '1e3' breaks.",
                _STRICT,
            )
        )
