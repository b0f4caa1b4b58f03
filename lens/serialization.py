"""Saving and restoring variables (``lens.serialization``, like ``flax.serialization``).

``to_state_dict``/``from_state_dict`` convert between a tree and a plain nested
dict with string keys; types take part through a registry
(:func:`register_serialization_state`): dicts, lists, tuples, namedtuples,
``FrozenDict``, ``lens.struct`` dataclasses (and so ``Partitioned`` boxes) and
``jax.tree_util.Partial`` are registered. ``to_bytes``/``from_bytes`` go through
msgpack in Flax's wire format, so checkpoints written by one library load in the
other.

``to_bytes(target, checksum=True)`` also writes a SHA-256 of the bytes (an entry
Flax's ``from_bytes`` ignores), which every restore checks.

Restoring needs a target with the saved structure and never changes the target.
Bad input (truncated bytes, another structure, another shape or dtype, a value
where an array belongs) raises :class:`~lens.errors.SerializationError` (a
``ValueError``) naming the path.

Example:
    >>> import numpy as np
    >>> data = to_bytes({"params": {"w": np.ones(2, np.float32)}})
    >>> from_bytes({"params": {"w": np.zeros(2, np.float32)}}, data)["params"]["w"]
    array([1., 1.], dtype=float32)
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeGuard, cast

import jax
import jax.numpy as jnp
import msgpack
import numpy as np

from lens import _strict
from lens.errors import BytesCorruptedError, SerializationError

_path: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "lens_serialization_path", default=()
)


@contextlib.contextmanager
def _record_path(name: str) -> Iterator[None]:
    token = _path.set(_path.get() + (name,))
    try:
        yield
    finally:
        _path.reset(token)


_saved_shapes_win: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lens_serialization_saved_shapes_win", default=False
)


@contextlib.contextmanager
def saved_shapes_win() -> Iterator[None]:
    """Within it, a saved array whose shape differs from a concrete target array's
    is restored with its own shape (as Flax's ``restore_checkpoint`` does: such a
    target is a placeholder) instead of raising; its kind of dtype is still
    checked, and an abstract or multi-process target's shape too."""
    token = _saved_shapes_win.set(True)
    try:
        yield
    finally:
        _saved_shapes_win.reset(token)


def _placeholder(target: Any) -> bool:
    """Whether a target array may stand for a saved one of another shape (inside
    :func:`saved_shapes_win`): a concrete array this process holds whole; not an
    abstract one (``jax.ShapeDtypeStruct``: it describes what to build) nor one
    spread over processes (its shards are laid out for its shape)."""
    if isinstance(target, jax.ShapeDtypeStruct):
        return False
    return getattr(target, "is_fully_addressable", True)


def current_path() -> str:
    """The state-dict path being restored (for error messages)."""
    return "/".join(_path.get())


def _where() -> str:
    p = current_path().lstrip("./")
    return f"/{p}" if p else "/"


class _NamedTuple:
    """Registry key for namedtuples."""


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


_STATE_DICT_REGISTRY: dict[type, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def _registry_key(target: Any) -> type:
    return _NamedTuple if _is_namedtuple(target) else type(target)


def is_serializable(target: Any) -> bool:
    """Whether ``target`` (an object or a type) has a registered state dict."""
    ty = target if isinstance(target, type) else _registry_key(target)
    return ty in _STATE_DICT_REGISTRY


def register_serialization_state(
    ty: type,
    ty_to_state_dict: Callable[[Any], Any],
    ty_from_state_dict: Callable[[Any, Any], Any],
    override: bool = False,
) -> None:
    """Registers how instances of ``ty`` become state dicts and are restored.

    Args:
      ty: the type.
      ty_to_state_dict: ``x -> state dict``.
      ty_from_state_dict: ``(target, state dict) -> restored copy of target``.
      override: replace an earlier registration.

    Raises:
      ValueError: if ``ty`` is registered already and ``override`` is False.
    """
    if ty in _STATE_DICT_REGISTRY and not override:
        raise ValueError(
            f'a serialization handler for "{ty.__name__}" is already registered'
        )
    _STATE_DICT_REGISTRY[ty] = (ty_to_state_dict, ty_from_state_dict)


def to_state_dict(target: Any) -> Any:
    """The state of ``target`` as a nested dict with string keys (leaves as is)."""
    entry = _STATE_DICT_REGISTRY.get(_registry_key(target))
    if entry is None:
        return target
    return entry[0](target)


def from_state_dict(target: Any, state: Any, name: str = ".") -> Any:
    """Restores ``state`` into a copy of ``target`` (which gives the structure).

    Raises:
      SerializationError: if ``state`` does not have the structure of ``target``.
    """
    entry = _STATE_DICT_REGISTRY.get(_registry_key(target))
    with _record_path(name):
        if entry is None:
            return _restore_leaf(target, state)
        try:
            return entry[1](target, state)
        except SerializationError:
            raise
        except (KeyError, ValueError, TypeError) as e:
            raise SerializationError(
                f"Could not restore the {type(target).__name__} at {_where()}: {e}"
            ) from e


def _is_array_like(x: Any) -> TypeGuard[Any]:
    return isinstance(x, np.ndarray | np.generic | jax.Array | jax.ShapeDtypeStruct)


def _restore_leaf(target: Any, state: Any) -> Any:
    if isinstance(state, Mapping) and not isinstance(target, Mapping):
        raise SerializationError(
            f"The state at {_where()} is a dict ({sorted(state)[:4]}), but the target "
            f"is a leaf ({type(target).__name__})."
        )
    if _is_array_like(target):
        if not (_is_array_like(state) or isinstance(state, int | float | complex)):
            raise SerializationError(
                f"The state at {_where()} is {type(state).__name__}, but the target "
                f"is an array {_dtype_name(target.dtype)}{list(np.shape(target))}."
            )
        _check_array(target, state)
    # As in Flax, the state's value is returned as is (with its own dtype width).
    return state


def _kind(dtype: Any) -> str:
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return "key"
    kind = np.dtype(dtype).kind
    return {"u": "i", "V": "f"}.get(kind, kind)  # bfloat16 & co. are 'V' in numpy


def _dtype_name(dtype: Any) -> str:
    return str(dtype) if _kind(dtype) == "key" else np.dtype(dtype).name


def _check_array(target: Any, state: Any) -> None:
    """The saved array must have the target's shape and kind of dtype.

    Flax restores whatever was saved; lens raises where that is surely a mistake
    (another shape; a float where an int or bool was), and keeps the saved width
    (bfloat16 into float32 gives bfloat16, as in Flax).
    """
    t_shape, s_shape = tuple(np.shape(target)), tuple(np.shape(state))
    t_dtype = target.dtype
    s_dtype = getattr(state, "dtype", None)
    if s_dtype is None:  # a Python number: its kind only
        s_dtype = np.result_type(state)
    where = _where()
    if t_shape != s_shape and not (_saved_shapes_win.get() and _placeholder(target)):
        raise SerializationError(
            f"The state at {where} has shape {list(s_shape)}, but the target there "
            f"has shape {list(t_shape)}.\nRestore into a target with the saved "
            "shapes (e.g. the variables of the model that was saved), or read the "
            "raw state with msgpack_restore(data)."
        )
    if _kind(t_dtype) != _kind(s_dtype):
        raise SerializationError(
            f"The state at {where} has dtype {_dtype_name(s_dtype)}, but the "
            f"target there is {_dtype_name(t_dtype)}.\nRestore into a target with "
            "the saved dtypes, or read the raw state with msgpack_restore(data)."
        )


def _check_container(target: Any, state: Any) -> None:
    if not isinstance(state, Mapping):
        raise SerializationError(
            f"The state at {_where()} is {type(state).__name__}, but the target "
            f"there is a {type(target).__name__} with children.\nRestore into a "
            "target with the structure that was saved."
        )


# ------------------------------------------------------------------ registrations


def _dict_state_dict(xs: Mapping[Any, Any]) -> dict[str, Any]:
    keys = [str(k) for k in xs]
    if len(set(keys)) != len(keys):
        raise SerializationError(
            "Dict keys do not have a unique string representation: "
            f"{sorted(map(repr, xs))} (as strings {sorted(keys)}).\nRename the keys "
            "so that str(key) differs between them."
        )
    return {str(k): to_state_dict(v) for k, v in xs.items()}


def _restore_dict(xs: Mapping[Any, Any], states: Mapping[str, Any]) -> Any:
    _check_container(xs, states)
    missing = {str(k) for k in xs} - set(states)
    if missing:
        raise SerializationError(
            "The target dict keys and state dict keys do not match, target dict "
            f"contains keys {missing} which are not present in state dict at path "
            f"{current_path()}\nRestore into a target with the structure that was "
            "saved (e.g. the variables from model.init)."
        )
    out = {k: from_state_dict(v, states[str(k)], name=str(k)) for k, v in xs.items()}
    extra = set(states) - {str(k) for k in xs}
    if extra and _strict.enabled():  # by default dropped, as Flax drops them
        # Checked after the children, so an error Flax raises deeper comes first.
        raise SerializationError(
            "The target dict keys and state dict keys do not match, state dict "
            f"contains keys {extra} which are not present in target dict at path "
            f"{current_path()}\nRestore into a target that has these keys, or leave "
            "them out of the state first ({k: state[k] for k in target}). lens "
            "strict mode reports this (Flax drops the saved values silently)."
        )
    return out if type(xs) is dict else cast(Any, type(xs))(out)


def _list_state_dict(xs: Any) -> dict[str, Any]:
    return {str(i): to_state_dict(x) for i, x in enumerate(xs)}


def _restore_list(xs: Any, state: Mapping[str, Any]) -> list[Any]:
    _check_container(xs, state)
    if len(state) != len(xs):
        raise SerializationError(
            "The size of the list and the state dict do not match, got "
            f"{len(xs)} and {len(state)} at path {current_path()}\nRestore into a "
            "target with the structure that was saved."
        )
    missing = [str(i) for i in range(len(xs)) if str(i) not in state]
    if missing:
        raise SerializationError(
            f"The state at {_where()} lacks entries {missing[:5]} of the target list."
        )
    return [from_state_dict(x, state[str(i)], name=str(i)) for i, x in enumerate(xs)]


def _namedtuple_state_dict(nt: Any) -> dict[str, Any]:
    return {k: to_state_dict(getattr(nt, k)) for k in nt._fields}


def _restore_namedtuple(xs: Any, state: Mapping[str, Any]) -> Any:
    _check_container(xs, state)
    if set(state) == {"name", "fields", "values"}:  # an older Flax layout
        state = {
            state["fields"][str(i)]: state["values"][str(i)]
            for i in range(len(state["fields"]))
        }
    if set(state) != set(xs._fields):
        raise SerializationError(
            "The field names of the state dict and the named tuple do not match, got "
            f"{set(state)} and {set(xs._fields)} at path {current_path()}\nRestore "
            f"into a {type(xs).__name__} with the fields that were saved."
        )
    return type(xs)(
        **{k: from_state_dict(getattr(xs, k), v, name=k) for k, v in state.items()}
    )


register_serialization_state(dict, _dict_state_dict, _restore_dict)
register_serialization_state(list, _list_state_dict, _restore_list)
register_serialization_state(
    tuple, _list_state_dict, lambda xs, sd: tuple(_restore_list(list(xs), sd))
)
register_serialization_state(_NamedTuple, _namedtuple_state_dict, _restore_namedtuple)
register_serialization_state(
    jax.tree_util.Partial,
    lambda x: {"args": to_state_dict(x.args), "keywords": to_state_dict(x.keywords)},
    lambda x, sd: jax.tree_util.Partial(
        x.func,
        *from_state_dict(x.args, sd["args"], name="args"),
        **from_state_dict(x.keywords, sd["keywords"], name="keywords"),
    ),
)


# ---------------------------------------------------------------- wire format

# Flax's msgpack layout: an array is an ext type (code 1) holding the msgpack of
# (shape, dtype name, C-order bytes); a numpy scalar code 3; a Python complex
# code 2 holding (real, imag). Arrays over MAX_CHUNK_SIZE bytes are split.


class _MsgpackExtType(enum.IntEnum):
    ndarray = 1
    native_complex = 2
    npscalar = 3


MAX_CHUNK_SIZE = 2**30
"""Arrays larger than this many bytes are stored in chunks (msgpack's object limit)."""


def _ndarray_to_bytes(arr: Any) -> bytes:
    arr = np.asarray(arr)
    if arr.dtype.hasobject or arr.dtype.isalignedstruct:
        raise SerializationError(
            "Object and structured dtypes not supported for serialization of "
            f"ndarrays.\nThe array at {_where()} has dtype {arr.dtype}; convert it "
            "to a numeric dtype, or leave it out of the saved tree."
        )
    return cast(
        bytes,
        msgpack.packb((arr.shape, arr.dtype.name, arr.tobytes("C")), use_bin_type=True),
    )


def _dtype_from_name(name: bytes | str) -> Any:
    name = name.decode() if isinstance(name, bytes) else name
    if name == "bfloat16":
        return jax.numpy.bfloat16
    return np.dtype(name)


def _ndarray_from_bytes(data: bytes) -> np.ndarray:
    shape, dtype_name, buffer = msgpack.unpackb(data, raw=True)
    return np.frombuffer(buffer, dtype=_dtype_from_name(dtype_name)).reshape(
        shape, order="C"
    )


def _ext_pack(x: Any) -> Any:
    if isinstance(x, np.ndarray | jax.Array):
        return msgpack.ExtType(_MsgpackExtType.ndarray, _ndarray_to_bytes(x))
    if isinstance(x, np.generic):
        return msgpack.ExtType(
            _MsgpackExtType.npscalar, _ndarray_to_bytes(np.asarray(x))
        )
    if isinstance(x, complex):
        return msgpack.ExtType(
            _MsgpackExtType.native_complex, msgpack.packb((x.real, x.imag))
        )
    # msgpack's TypeError in its words, as Flax (whose hook passes x on) raises
    raise TypeError(
        f"can not serialize {type(x).__name__!r} object\nto_bytes: {x!r:.60} is "
        "not state; state dicts hold dicts, lists, numbers, strings and arrays "
        "(register other types with register_serialization_state)."
    )


def _ext_unpack(code: int, data: bytes) -> Any:
    if code == _MsgpackExtType.ndarray:
        return _ndarray_from_bytes(data)
    if code == _MsgpackExtType.native_complex:
        re_, im = msgpack.unpackb(data)
        return complex(re_, im)
    if code == _MsgpackExtType.npscalar:
        return _ndarray_from_bytes(data)[()]
    return msgpack.ExtType(code, data)


# Flax's names for the packer and the unpacker: projects read Flax's msgpack
# files with ``msgpack.unpackb(data, ext_hook=_msgpack_ext_unpack)``.
_msgpack_ext_pack = _ext_pack
_msgpack_ext_unpack = _ext_unpack


_KEY_MARK = "__lens_prng_key__"


def _is_key_array(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)


def _prepare(tree: Any) -> Any:
    """A copy with numpy leaves, large arrays chunked, PRNG keys as their data."""
    if isinstance(tree, dict):
        return {k: _prepare(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_prepare(v) for v in tree)
    if _is_key_array(tree):
        # A typed key array (jax.random.key) has no numpy form: store its raw
        # data and the name of its implementation, and wrap them again on restore.
        return {
            _KEY_MARK: str(jax.random.key_impl(tree)),
            "data": _prepare(np.asarray(jax.random.key_data(tree))),
        }
    if isinstance(tree, jax.Array):
        tree = np.asarray(tree)
    if (
        isinstance(tree, np.ndarray)
        and tree.size * tree.dtype.itemsize > MAX_CHUNK_SIZE
    ):
        step = max(1, MAX_CHUNK_SIZE // tree.dtype.itemsize)
        flat = tree.reshape(-1)
        chunks = [flat[i : i + step] for i in range(0, flat.size, step)]
        return {
            "__msgpack_chunked_array__": True,
            "shape": {str(i): d for i, d in enumerate(tree.shape)},
            "chunks": {str(i): c for i, c in enumerate(chunks)},
        }
    return tree


def _chunk_array_leaves_in_place(tree: Any) -> Any:
    """``tree`` with arrays over ``MAX_CHUNK_SIZE`` bytes split (Flax's helper name)."""
    return _prepare(tree)


def _unchunk(tree: Any) -> Any:
    if isinstance(tree, dict):
        if _KEY_MARK in tree and set(tree) == {_KEY_MARK, "data"}:
            data = jnp.asarray(_unchunk(tree["data"]))
            return jax.random.wrap_key_data(data, impl=tree[_KEY_MARK])
        if "__msgpack_chunked_array__" in tree:
            shape = tuple(tree["shape"][str(i)] for i in range(len(tree["shape"])))
            chunks = [tree["chunks"][str(i)] for i in range(len(tree["chunks"]))]
            return np.concatenate(chunks).reshape(shape)
        return {k: _unchunk(v) for k, v in tree.items()}
    return tree


def _unchunk_array_leaves_in_place(tree: Any) -> Any:
    """``tree`` with its chunked arrays joined again, written into its dicts.

    Flax's private name: code that reads a msgpack file by hand
    (``msgpack.unpackb(..., ext_hook=_msgpack_ext_unpack)``) calls it next.
    Returns the tree (a chunked array given alone comes back as the array).
    """
    if not isinstance(tree, dict):
        return tree
    if "__msgpack_chunked_array__" in tree or _KEY_MARK in tree:
        return _unchunk(tree)
    for k, v in tree.items():
        tree[k] = _unchunk_array_leaves_in_place(v)
    return tree


def _np_convert_in_place(tree: Any) -> Any:
    """``tree`` with its JAX arrays made numpy arrays, written into its dicts
    (Flax's private name)."""
    if isinstance(tree, jax.Array):
        return np.asarray(tree)
    if isinstance(tree, dict):
        for k, v in tree.items():
            tree[k] = _np_convert_in_place(v)
    return tree


def _tuple_to_dict(xs: Any) -> dict[str, Any]:
    """``{"0": xs[0], "1": xs[1], ...}``, how the msgpack format stores a sequence."""
    return {str(i): x for i, x in enumerate(xs)}


def _dict_to_tuple(d: Mapping[str, Any]) -> tuple[Any, ...]:
    """The tuple :func:`_tuple_to_dict` stored."""
    return tuple(d[str(i)] for i in range(len(d)))


def msgpack_serialize(pytree: Any, in_place: bool = False) -> bytes:
    """msgpack bytes of a tree of dicts, lists, numbers and arrays."""
    del in_place  # lens always works on a copy
    return cast(
        bytes,
        msgpack.packb(_prepare(pytree), default=_ext_pack, strict_types=True),
    )


def msgpack_restore(encoded_pytree: bytes) -> Any:
    """The tree encoded by :func:`msgpack_serialize`.

    Bytes written with a checksum (``to_bytes(..., checksum=True)``) are
    checked against it, and the checksum entry is not part of the tree.

    Raises:
      SerializationError: if the bytes are truncated or not msgpack.
      BytesCorruptedError: if they do not match the checksum written with them.
    """
    if not isinstance(encoded_pytree, bytes | bytearray | memoryview):
        raise SerializationError(
            f"Expected bytes, got {type(encoded_pytree).__name__}."
        )
    encoded_pytree = _checked(encoded_pytree)
    try:
        tree = msgpack.unpackb(
            encoded_pytree, ext_hook=_ext_unpack, raw=False, strict_map_key=False
        )
    except (
        msgpack.exceptions.ExtraData,
        msgpack.exceptions.UnpackException,
        ValueError,
        TypeError,
    ) as e:
        raise SerializationError(
            f"The bytes could not be decoded ({type(e).__name__}: {e}); they are "
            "truncated or were not written by to_bytes."
        ) from e
    return _unchunk(tree)


def to_bytes(target: Any, *, checksum: bool = False) -> bytes:
    """Serializes ``target`` (e.g. variables) to msgpack bytes, in Flax's format.

    Args:
      target: a serializable tree.
      checksum: also write a SHA-256 of the bytes, as one more entry of the
        top-level map (``__lens_sha256__``), which :func:`from_bytes` and
        :func:`msgpack_restore` check (a changed byte then raises
        ``BytesCorruptedError`` instead of restoring a wrong value). Flax's
        ``from_bytes`` still reads such bytes into a dict target (it ignores
        the entry); Flax's struct dataclasses (a ``TrainState``) reject it.

    Raises:
      SerializationError: ``checksum=True`` for a target whose state dict is
        not a dict (a bare array or number).

    Example:
        >>> import numpy as np
        >>> data = to_bytes({"w": np.ones(2, np.float32)}, checksum=True)
        >>> from_bytes({"w": np.zeros(2, np.float32)}, data)["w"]
        array([1., 1.], dtype=float32)
    """
    state = to_state_dict(target)
    data = msgpack_serialize(state)
    if checksum:
        if not isinstance(state, dict):
            raise SerializationError(
                f"to_bytes(checksum=True) needs a tree whose state dict is a dict; "
                f"this one's is a {type(state).__name__}.\nWrap it in a dict "
                '({"value": x}) to store a checksum with it.'
            )
        data = _with_checksum(data)
    return data


def from_bytes(target: Any, encoded_bytes: bytes) -> Any:
    """Restores bytes from :func:`to_bytes` into a copy of ``target``.

    Raises:
      SerializationError: for truncated or corrupt bytes, or another structure.
      BytesCorruptedError: for bytes that do not match the checksum written
        with them (``to_bytes(..., checksum=True)``).
    """
    return from_state_dict(target, msgpack_restore(encoded_bytes))


# ------------------------------------------------------------------ checksums

# Bytes written with a checksum are Flax's bytes of the same tree with one more
# entry at the end of the top-level map: the key _CHECKSUM_KEY and the SHA-256
# (64 hex digits) of Flax's bytes. The entry has a fixed length, so it is found at
# the end of the bytes, and the map's count in the header is one more.
_CHECKSUM_KEY = "__lens_sha256__"
_CHECKSUM_TAIL = cast(bytes, msgpack.packb(_CHECKSUM_KEY)) + b"\xd9\x40"  # str8, 64
_CHECKSUM_LEN = len(_CHECKSUM_TAIL) + 64


def _map_header(count: int) -> bytes:
    if count < 16:
        return bytes([0x80 | count])
    if count < 2**16:
        return b"\xde" + count.to_bytes(2, "big")
    return b"\xdf" + count.to_bytes(4, "big")


def _read_map_header(data: bytes) -> tuple[int, int] | None:
    """``(entries, header length)`` of the map ``data`` starts with, or None."""
    if not data:
        return None
    first = data[0]
    if 0x80 <= first <= 0x8F:
        return first & 0x0F, 1
    if first == 0xDE and len(data) >= 3:
        return int.from_bytes(data[1:3], "big"), 3
    if first == 0xDF and len(data) >= 5:
        return int.from_bytes(data[1:5], "big"), 5
    return None


def _with_checksum(data: bytes) -> bytes:
    header = _read_map_header(data)
    assert header is not None  # a dict's bytes start with a map header
    count, size = header
    digest = hashlib.sha256(data).hexdigest().encode()
    return _map_header(count + 1) + data[size:] + _CHECKSUM_TAIL + digest


def _checked(data: bytes | bytearray | memoryview) -> Any:
    """``data`` less its checksum entry, checked; bytes without one as they are
    (not copied)."""
    if len(data) <= _CHECKSUM_LEN:
        return data
    tail = bytes(data[-_CHECKSUM_LEN:])
    if not tail.startswith(_CHECKSUM_TAIL):
        # the entry's key or length damaged (a few bytes off the pattern): no
        # Flax bytes end that way, and restoring would drop the entry unchecked
        if sum(a != b for a, b in zip(tail, _CHECKSUM_TAIL)) <= 2:
            raise BytesCorruptedError("The checksum entry itself is damaged.")
        return data
    data = bytes(data)
    header = _read_map_header(data)
    if header is None or header[0] == 0:
        raise BytesCorruptedError("The map that holds the checksum is damaged.")
    count, size = header
    plain = _map_header(count - 1) + data[size:-_CHECKSUM_LEN]
    digest = tail[len(_CHECKSUM_TAIL) :]
    if hashlib.sha256(plain).hexdigest().encode() != digest:
        raise BytesCorruptedError()
    return plain
