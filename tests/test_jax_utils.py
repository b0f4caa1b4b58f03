"""lens.jax_utils does what flax.jax_utils does (8 virtual CPU devices)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import jax_utils
from tests.helpers import assert_tree_allclose

fju = pytest.importorskip("flax.jax_utils")


def _tree():
    return {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3), "s": jnp.asarray(2)}


def test_replicate_and_unreplicate_match_flax():
    n = jax.local_device_count()
    assert n == 8  # tests/conftest.py asks XLA for 8 CPU devices
    ours, theirs = jax_utils.replicate(_tree()), fju.replicate(_tree())
    assert jax.tree.map(jnp.shape, ours) == jax.tree.map(jnp.shape, theirs)
    assert_tree_allclose(ours, theirs)
    assert len(ours["w"].addressable_shards) == n  # one copy per device
    assert_tree_allclose(jax_utils.unreplicate(ours), _tree())
    assert_tree_allclose(jax_utils.unreplicate(ours), fju.unreplicate(theirs))


def test_replicate_on_some_devices():
    devices = jax.local_devices()[:2]
    ours = jax_utils.replicate({"x": jnp.arange(3)}, devices=devices)
    theirs = fju.replicate({"x": jnp.arange(3)}, devices=devices)
    assert ours["x"].shape == theirs["x"].shape == (2, 3)
    assert {s.device for s in ours["x"].addressable_shards} == set(devices)


def test_unreplicate_after_pmap():
    step = jax.pmap(lambda x: x * 2)
    out = step(jax_utils.replicate(jnp.arange(3.0)))
    assert_tree_allclose(jax_utils.unreplicate(out), jnp.arange(3.0) * 2)
    assert_tree_allclose(jax_utils.unreplicate(out), fju.unreplicate(out))


def test_pmean_is_deprecated_but_works():
    xs = jnp.arange(8.0)
    with pytest.warns(DeprecationWarning, match="jax.lax.pmean"):
        out = jax.pmap(lambda x: jax_utils.pmean(x, "i"), axis_name="i")(xs)
    assert_tree_allclose(out, jnp.full(8, xs.mean()))


def test_partial_eval_by_shape_matches_flax():
    def fn(x, y, scale):
        return {"sum": x + y, "scaled": x.astype(jnp.float32) * scale}

    spec = [((2, 3), jnp.int32), (2, 3)]
    ours = jax_utils.partial_eval_by_shape(fn, spec, 2.0)
    theirs = fju.partial_eval_by_shape(fn, spec, 2.0)
    assert jax.tree.map(lambda s: (s.shape, s.dtype), ours) == jax.tree.map(
        lambda s: (s.shape, s.dtype), theirs
    )
    assert ours["sum"].dtype == jnp.float32 and ours["scaled"].shape == (2, 3)


def test_prefetch_to_device_keeps_order_and_shards():
    batches = [{"x": np.full((8, 2), i, np.float32)} for i in range(5)]
    ours = list(jax_utils.prefetch_to_device(iter(batches), 2))
    theirs = list(fju.prefetch_to_device(iter(batches), 2))
    assert len(ours) == len(theirs) == 5
    assert_tree_allclose(ours, theirs)
    assert len(ours[0]["x"].addressable_shards) == 8


@pytest.mark.parametrize(
    "axis, unroll, keepdims",
    [((0,), (1,), False), (1, 2, False), ((0, 2), (1, 2), False), ((1,), 1, True)],
)
def test_scan_in_dim_matches_flax(axis, unroll, keepdims):
    xs = jnp.arange(2 * 3 * 4, dtype=jnp.float32).reshape(2, 3, 4)

    def body(c, x):
        return c + x.sum(), x * 2 + c

    ours = jax_utils.scan_in_dim(body, 0.0, xs, axis, unroll, keepdims)
    theirs = fju.scan_in_dim(body, 0.0, xs, axis, unroll, keepdims)
    assert_tree_allclose(ours, theirs)
    assert ours[1].shape == xs.shape


@pytest.mark.parametrize("batch", [3, 8, 13])
def test_pad_shard_unpad_matches_flax(batch):
    def step(w, x, *, y):
        return x @ w + y

    w = jnp.ones((4, 2))
    x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
    y = np.ones((batch, 2), np.float32)
    pstep = jax.pmap(step, in_axes=(None, 0), static_broadcasted_argnums=())
    ours = jax_utils.pad_shard_unpad(pstep)(w, x, y=y)
    theirs = fju.pad_shard_unpad(pstep)(w, x, y=y)
    assert ours.shape == (batch, 2)
    assert_tree_allclose(ours, theirs)
    assert_tree_allclose(ours, x @ w + y)


def test_pad_shard_unpad_options():
    pstep = jax.pmap(lambda x: x.sum(axis=0))
    seen = []

    def record(x):
        seen.append(x.shape)
        return pstep(x)

    x = np.ones((5, 2), np.float32)
    out = jax_utils.pad_shard_unpad(record, static_argnums=(), static_return=True)(
        x, min_device_batch=3
    )
    assert seen == [(8, 3, 2)]  # padded to 3 per device
    assert out.shape == (8, 2)  # returned as the devices gave it
    with pytest.raises(ValueError, match="Inconsistent batch-sizes") as info:
        jax_utils.pad_shard_unpad(record, static_argnums=())(x, np.ones((4, 2)))
    assert isinstance(info.value, AssertionError)  # Flax's class (an assert)
