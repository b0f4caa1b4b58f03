"""Helpers for data-parallel loops over local devices (``lens.jax_utils``).

The names of ``flax.jax_utils``: :func:`replicate`/:func:`unreplicate` put a
pytree on every local device and take one copy back, :func:`prefetch_to_device`
keeps batches on device ahead of the loop, :func:`pad_shard_unpad` lets a
per-device function take batches of any size, :func:`scan_in_dim` scans over any
axes.
"""

from __future__ import annotations

import collections
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def _pmap_device_order() -> list[Any]:
    """The local devices, in the order ``pmap`` maps over them and this module's
    helpers put shards on (data loaders call it by Flax's private name)."""
    return jax.local_devices()


def _device_sharding(devices: Sequence[Any], axis_name: str) -> Any:
    mesh = jax.sharding.Mesh(np.array(devices), (axis_name,))
    return jax.NamedSharding(mesh, jax.sharding.PartitionSpec(axis_name))


def _stack_on(devices: Sequence[Any], axis_name: str, xs: Any) -> Any:
    sharding = _device_sharding(devices, axis_name)
    stack = jnp.stack if isinstance(xs, jax.Array) else np.stack
    return jax.device_put(stack(list(xs)), sharding)


def replicate(
    tree: Any,
    devices: Sequence[Any] | None = None,
    axis_name: str = "_device_put_sharded",
) -> Any:
    """A copy of every leaf on each local device, stacked on a new leading axis."""
    devices = list(devices or _pmap_device_order())
    return jax.tree_util.tree_map(
        lambda x: _stack_on(devices, axis_name, [x] * len(devices)), tree
    )


def unreplicate(tree: Any) -> Any:
    """One copy of each replicated leaf (the first device's)."""

    def one(x: Any) -> Any:
        if getattr(x, "ndim", 1) == 0:
            return x
        sharding = getattr(x, "sharding", None)
        if (
            sharding is None
            or isinstance(sharding, jax.sharding.SingleDeviceSharding)
            or len(jax.local_devices()) == 1
        ):
            return x[0]
        if sharding.is_fully_replicated:
            return x.addressable_shards[0].data
        return x.addressable_shards[0].data.squeeze(0)

    return jax.tree_util.tree_map(one, tree)


def pmean(xs: Any, axis_name: str) -> Any:
    """Deprecated: use ``jax.lax.pmean``."""
    warnings.warn("use jax.lax.pmean instead", DeprecationWarning, stacklevel=2)
    return lax.pmean(xs, axis_name)


def partial_eval_by_shape(
    fn: Callable[..., Any], input_spec: Iterable[Any], *args: Any, **kwargs: Any
) -> Any:
    """``fn(*inputs, *args, **kwargs)`` evaluated on shapes only.

    ``input_spec`` holds a shape or a ``(shape, dtype)`` pair per input (float32 by
    default). Returns ``jax.ShapeDtypeStruct`` leaves.
    """
    structs = []
    for spec in input_spec:
        spec = tuple(spec)
        if len(spec) == 2 and isinstance(spec[0], Iterable):
            structs.append(jax.ShapeDtypeStruct(tuple(spec[0]), spec[1]))
        else:
            structs.append(jax.ShapeDtypeStruct(spec, jnp.float32))
    return jax.eval_shape(lambda *inputs: fn(*inputs, *args, **kwargs), *structs)


def prefetch_to_device(
    iterator: Iterable[Any],
    size: int,
    devices: Sequence[Any] | None = None,
    axis_name: str = "_device_put_sharded",
) -> Iterator[Any]:
    """Yields the items of ``iterator`` already sharded over ``devices``.

    Each leaf's first axis must have one entry per device; ``size`` items are
    kept on device ahead of the consumer.
    """
    devices = list(devices or _pmap_device_order())
    queue: collections.deque[Any] = collections.deque()
    it = iter(iterator)

    def enqueue(n: int) -> None:
        for data in itertools.islice(it, n):
            queue.append(
                jax.tree_util.tree_map(lambda x: _stack_on(devices, axis_name, x), data)
            )

    enqueue(size)
    while queue:
        yield queue.popleft()
        enqueue(1)


def _scan_nd(
    body_fn: Callable[..., Any], init: Any, xs: Any, n: int, unroll: tuple[int, ...]
) -> Any:
    if n == 1:
        return lax.scan(body_fn, init, xs, unroll=unroll[0])
    return lax.scan(
        lambda c, x: _scan_nd(body_fn, c, x, n - 1, unroll[1:]),
        init,
        xs,
        unroll=unroll[0],
    )


def _drop_front(x: Any, n: int) -> Any:
    """``x`` without its first ``n`` (size-1) axes."""
    return x.reshape(x.shape[n:])


def scan_in_dim(
    body_fn: Callable[..., Any],
    init: Any,
    xs: Any,
    axis: int | Sequence[int] = (0,),
    unroll: int | Sequence[int] = (1,),
    keepdims: bool = False,
) -> Any:
    """``lax.scan`` along the given axes of ``xs`` (nested, outermost first).

    ``unroll`` is padded on the left with ones, so a single number unrolls the
    innermost loop. With ``keepdims`` the body sees the scanned axes as size 1.
    """
    axes = tuple(axis) if isinstance(axis, Iterable) else (axis,)
    unrolls = tuple(unroll) if isinstance(unroll, Iterable) else (unroll,)
    unrolls = (1,) * (len(axes) - len(unrolls)) + unrolls

    def perm(x: Any) -> tuple[int, ...]:
        return axes + tuple(np.delete(np.arange(x.ndim), axes))

    def to_front(x: Any) -> Any:
        return x.transpose(perm(x))

    def from_front(x: Any) -> Any:
        return x.transpose(tuple(np.argsort(perm(x))))

    def body(c: Any, x: Any) -> Any:
        if keepdims:
            x = jax.tree_util.tree_map(
                lambda v: from_front(v.reshape((1,) * len(axes) + v.shape)), x
            )
        c, y = body_fn(c, x)
        if keepdims:
            y = jax.tree_util.tree_map(lambda v: _drop_front(to_front(v), len(axes)), y)
        return c, y

    c, ys = _scan_nd(
        body, init, jax.tree_util.tree_map(to_front, xs), len(axes), unrolls
    )
    return c, jax.tree_util.tree_map(from_front, ys)


class _BatchSizeError(ValueError, AssertionError):
    """Arguments of different batch sizes: a ValueError, and the AssertionError
    Flax's ``pad_shard_unpad`` raises."""


def pad_shard_unpad(
    wrapped: Callable[..., Any],
    static_argnums: Sequence[int] = (0,),
    static_argnames: Sequence[str] = (),
    static_return: bool = False,
) -> Callable[..., Any]:
    """Pads batches to a multiple of the local device count, shards, calls, unpads.

    Typically around a ``jax.pmap``-ed eval step, so the last, smaller batch
    needs no special case. The wrapper takes ``min_device_batch=`` to pad more.
    """

    def wrapper(*args: Any, min_device_batch: int | None = None, **kw: Any) -> Any:
        d = jax.local_device_count()
        sizes = {
            t.shape[0]
            for i, a in enumerate(args)
            if i not in static_argnums
            for t in jax.tree_util.tree_leaves(a)
        } | {
            t.shape[0]
            for k, v in kw.items()
            if k not in static_argnames
            for t in jax.tree_util.tree_leaves(v)
        }
        if len(sizes) != 1:
            raise _BatchSizeError(
                f"Inconsistent batch-sizes: {sizes}\npad_shard_unpad: give every "
                "batched argument the same leading size (static ones in "
                "static_argnums / static_argnames)."
            )
        (b,) = sizes

        def pad(x: Any) -> Any:
            db = -(-b // d)
            if min_device_batch and db < min_device_batch:
                db = min_device_batch
            x = np.asarray(x)
            extra = d * db - b
            if extra:
                x = np.concatenate([x, np.zeros((extra, *x.shape[1:]), x.dtype)])
            return x.reshape(d, db, *x.shape[1:])

        args = tuple(
            a if i in static_argnums else jax.tree_util.tree_map(pad, a)
            for i, a in enumerate(args)
        )
        kw = {
            k: v if k in static_argnames else jax.tree_util.tree_map(pad, v)
            for k, v in kw.items()
        }
        out = wrapped(*args, **kw)
        if static_return:
            return out
        return jax.tree_util.tree_map(
            lambda x: np.asarray(x).reshape(-1, *x.shape[2:])[:b], out
        )

    return wrapper
