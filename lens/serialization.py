"""Saving and restoring variables (``lens.serialization``, like ``flax.serialization``).

``to_state_dict``/``from_state_dict`` convert between a tree (dicts, lists, tuples,
arrays, :class:`~lens.core.meta.AxisMetadata` boxes, struct dataclasses) and a plain
nested dict; ``to_bytes``/``from_bytes`` go through msgpack. Restoring needs a target
with the same structure and never changes the target: bad input raises
:class:`~lens.errors.SerializationError`.

Example:
    >>> import numpy as np
    >>> data = to_bytes({"params": {"w": np.ones(2, np.float32)}})
    >>> from_bytes({"params": {"w": np.zeros(2, np.float32)}}, data)["params"]["w"]
    array([1., 1.], dtype=float32)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import msgpack
import numpy as np

from lens.errors import SerializationError

_ARRAY = 1
_COMPLEX = 2


def to_state_dict(target: Any) -> Any:
    """A plain nested dict (leaves: arrays and Python scalars) of ``target``."""
    if isinstance(target, Mapping):
        return {str(k): to_state_dict(v) for k, v in target.items()}
    if isinstance(target, list | tuple):
        return {str(i): to_state_dict(v) for i, v in enumerate(target)}
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        return {
            f.name: to_state_dict(getattr(target, f.name))
            for f in dataclasses.fields(target)
            if f.metadata.get("pytree_node", True)
        }
    return target


def from_state_dict(target: Any, state: Any, name: str = "/") -> Any:
    """Restores ``state`` into a copy of ``target`` (which gives the structure).

    Raises:
      SerializationError: if ``state`` does not have the structure of ``target``.
    """
    if isinstance(target, Mapping):
        _expect_mapping(state, name)
        keys = {str(k) for k in target}
        if set(state) != keys:
            missing, extra = sorted(keys - set(state)), sorted(set(state) - keys)
            raise SerializationError(
                f"The state at {name} does not match the target: missing {missing[:5]}, "
                f"unexpected {extra[:5]}.\nRestore into a target with the structure that "
                "was saved (e.g. the variables from model.init)."
            )
        return (
            type(target)(
                (k, from_state_dict(v, state[str(k)], f"{name}{k}/"))
                for k, v in target.items()
            )
            if not isinstance(target, dict)
            else {
                k: from_state_dict(v, state[str(k)], f"{name}{k}/")
                for k, v in target.items()
            }
        )
    if isinstance(target, list | tuple):
        _expect_mapping(state, name)
        if len(state) != len(target):
            raise SerializationError(
                f"The state at {name} has {len(state)} entries, the target {len(target)}."
            )
        items = [
            from_state_dict(v, state[str(i)], f"{name}{i}/")
            for i, v in enumerate(target)
        ]
        return (
            type(target)(items)
            if not hasattr(target, "_fields")
            else type(target)(*items)
        )
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        _expect_mapping(state, name)
        updates = {
            f.name: from_state_dict(
                getattr(target, f.name), state.get(f.name), f"{name}{f.name}/"
            )
            for f in dataclasses.fields(target)
            if f.metadata.get("pytree_node", True)
        }
        return dataclasses.replace(target, **updates)
    if isinstance(state, Mapping):
        raise SerializationError(
            f"The state at {name} is a dict, but the target is a leaf."
        )
    if hasattr(target, "shape") and np.shape(state) != tuple(target.shape):
        raise SerializationError(
            f"The state at {name} has shape {np.shape(state)}, the target {tuple(target.shape)}."
        )
    return state


def _expect_mapping(state: Any, name: str) -> None:
    if not isinstance(state, Mapping):
        raise SerializationError(
            f"The state at {name} is {type(state).__name__}, but the target has children there."
        )


def _encode(obj: Any) -> Any:
    if isinstance(obj, jax.Array | np.ndarray | np.generic):
        arr = np.asarray(obj)
        if arr.dtype.kind == "c":
            return msgpack.ExtType(
                _COMPLEX,
                msgpack.packb(
                    [
                        arr.real.tobytes(),
                        arr.imag.tobytes(),
                        arr.real.dtype.str,
                        list(arr.shape),
                    ]
                ),
            )
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            if "bfloat16" not in str(arr.dtype):
                raise SerializationError(
                    f"Cannot serialize an array of dtype {arr.dtype}."
                )
        return msgpack.ExtType(
            _ARRAY, msgpack.packb([arr.tobytes(), str(arr.dtype), list(arr.shape)])
        )
    return obj


def _decode(code: int, data: bytes) -> Any:
    if code == _ARRAY:
        buf, dtype, shape = msgpack.unpackb(data)
        if dtype == "bfloat16":
            import ml_dtypes

            dt: Any = ml_dtypes.bfloat16
        else:
            dt = np.dtype(dtype)
        return np.frombuffer(buf, dtype=dt).reshape(shape).copy()
    if code == _COMPLEX:
        re_, im, dtype, shape = msgpack.unpackb(data)
        return (
            np.frombuffer(re_, np.dtype(dtype))
            + 1j * np.frombuffer(im, np.dtype(dtype))
        ).reshape(shape)
    return msgpack.ExtType(code, data)


def msgpack_serialize(state: Any) -> bytes:
    """msgpack bytes of a state dict."""
    return msgpack.packb(state, default=_encode, strict_types=False)


def msgpack_restore(data: bytes) -> Any:
    """The state dict encoded by :func:`msgpack_serialize`.

    Raises:
      SerializationError: if ``data`` is truncated or not lens msgpack.
    """
    try:
        return msgpack.unpackb(data, ext_hook=_decode, raw=False, strict_map_key=False)
    except (
        msgpack.exceptions.ExtraData,
        msgpack.exceptions.UnpackException,
        ValueError,
        TypeError,
    ) as e:
        raise SerializationError(
            f"The bytes could not be decoded ({type(e).__name__}: {e}); they are truncated "
            "or were not written by lens.serialization.to_bytes."
        ) from e


def to_bytes(target: Any) -> bytes:
    """Serializes ``target`` (e.g. variables) to msgpack bytes."""
    return msgpack_serialize(to_state_dict(target))


def from_bytes(target: Any, encoded_bytes: bytes) -> Any:
    """Restores bytes from :func:`to_bytes` into a copy of ``target``.

    Raises:
      SerializationError: for truncated or corrupt bytes, or another structure.
    """
    return from_state_dict(target, msgpack_restore(encoded_bytes))
