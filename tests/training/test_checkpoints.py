"""lens.training.checkpoints: what a save keeps, where it writes, what it detects.

Each case is one that Flax's legacy API handles worse or not at all, or one lens
promises in docs/reliability.md.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors, serialization
from lens.training import checkpoints
from tests.helpers import assert_tree_allclose

TREE = {"w": jnp.arange(3.0), "b": {"c": jnp.ones(2, jnp.int32)}}


def _files(d):
    return sorted(os.listdir(d))


def test_keep_zero_keeps_the_checkpoint_just_written(tmp_path):
    """keep=0 used to delete every checkpoint, the new one too."""
    for step in (1, 2, 3):
        path = checkpoints.save_checkpoint(tmp_path, TREE, step, keep=0)
        assert os.path.exists(path)
    # 0 keeps all, as in Flax (whose checkpoint_files[:-0] deletes nothing)
    assert _files(tmp_path) == ["checkpoint_1", "checkpoint_2", "checkpoint_3"]
    assert_tree_allclose(checkpoints.restore_checkpoint(tmp_path, TREE), TREE)


@pytest.mark.parametrize("keep", [1, 2])
def test_keep_n_keeps_the_newest_n(tmp_path, keep):
    for step in (1, 2, 3):
        checkpoints.save_checkpoint(tmp_path, TREE, step, keep=keep)
    assert _files(tmp_path) == [f"checkpoint_{s}" for s in (1, 2, 3)][-keep:]


def test_keep_every_n_steps_never_removes_the_new_checkpoint(tmp_path):
    for step in (1, 2, 3, 4):
        path = checkpoints.save_checkpoint(
            tmp_path, TREE, step, keep=1, keep_every_n_steps=2
        )
        assert os.path.exists(path)


def test_negative_keep_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="keep=-1 is negative"):
        checkpoints.save_checkpoint(tmp_path, TREE, 1, keep=-1)
    assert _files(tmp_path) == []


def test_prefix_with_a_subdirectory(tmp_path):
    """Flax splits ckpt_dir/prefix into folder and name; lens raised FileNotFoundError."""
    for step in (1, 2):
        path = checkpoints.save_checkpoint(tmp_path, TREE, step, prefix="run1/ck_")
    assert path == os.path.join(str(tmp_path), "run1", "ck_2")
    assert _files(tmp_path / "run1") == ["ck_2"]  # keep=1 works in the subfolder
    assert checkpoints.latest_checkpoint(tmp_path, prefix="run1/ck_") == path
    assert checkpoints.available_steps(tmp_path, prefix="run1/ck_") == [2]
    restored = checkpoints.restore_checkpoint(tmp_path, TREE, prefix="run1/ck_")
    assert_tree_allclose(restored, TREE)
    by_step = checkpoints.restore_checkpoint(tmp_path, None, step=2, prefix="run1/ck_")
    assert_tree_allclose(by_step, TREE)


def test_prng_key_arrays_save_and_restore(tmp_path):
    tree = {
        "rng": jax.random.key(3),
        "keys": jax.random.split(jax.random.key(1), 4),
        "rbg": jax.random.key(2, impl="rbg"),
        "w": jnp.ones(2),
    }
    checkpoints.save_checkpoint(tmp_path, tree, 1)
    restored = checkpoints.restore_checkpoint(tmp_path, tree)
    for name in ("rng", "keys", "rbg"):
        got, want = restored[name], tree[name]
        assert jnp.issubdtype(got.dtype, jax.dtypes.prng_key)
        assert jax.random.key_impl(got) == jax.random.key_impl(want)
        np.testing.assert_array_equal(
            jax.random.key_data(got), jax.random.key_data(want)
        )
    # the restored key draws the same numbers
    np.testing.assert_array_equal(
        jax.random.normal(restored["rng"], (3,)), jax.random.normal(tree["rng"], (3,))
    )
    raw = checkpoints.restore_checkpoint(tmp_path, None)
    assert jnp.issubdtype(raw["rng"].dtype, jax.dtypes.prng_key)


def _flip_a_byte(path, from_end=5):
    data = bytearray(open(path, "rb").read())
    data[-from_end] ^= 0xFF
    open(path, "wb").write(bytes(data))


def test_checksum_detects_a_corrupted_checkpoint(tmp_path):
    path = checkpoints.save_checkpoint(tmp_path, TREE, 1, checksum=True)
    assert_tree_allclose(checkpoints.restore_checkpoint(tmp_path, TREE), TREE)
    _flip_a_byte(path)  # inside an array's data: msgpack still decodes it
    with pytest.raises(errors.CheckpointCorruptedError, match="is corrupted"):
        checkpoints.restore_checkpoint(tmp_path, TREE)


def test_without_checksum_the_same_flip_restores_wrong_values(tmp_path):
    """Why the checksum exists: a flipped bit in array data decodes silently."""
    path = checkpoints.save_checkpoint(tmp_path, TREE, 1)
    _flip_a_byte(path)
    restored = checkpoints.restore_checkpoint(tmp_path, TREE)
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(TREE))
    )


def test_checksum_required_on_restore(tmp_path):
    checkpoints.save_checkpoint(tmp_path, TREE, 1)
    with pytest.raises(errors.CheckpointCorruptedError, match="no checksum"):
        checkpoints.restore_checkpoint(tmp_path, TREE, checksum=True)


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    for checksum in (False, True):
        path = checkpoints.save_checkpoint(
            tmp_path, TREE, 1, checksum=checksum, overwrite=True
        )
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])
        with pytest.raises(
            (errors.CheckpointCorruptedError, errors.SerializationError)
        ):
            checkpoints.restore_checkpoint(tmp_path, TREE)


def test_plain_checkpoints_stay_readable_by_plain_msgpack(tmp_path):
    """Without checksum the file is Flax's format: serialization reads it as is."""
    path = checkpoints.save_checkpoint(tmp_path, TREE, 1)
    restored = serialization.from_bytes(TREE, open(path, "rb").read())
    assert_tree_allclose(restored, TREE)


def test_restore_with_a_missing_key_is_an_error_an_extra_one_strict_only(tmp_path):
    import lens

    checkpoints.save_checkpoint(tmp_path, TREE, 1)
    with pytest.raises(errors.SerializationError, match="target dict contains keys"):
        checkpoints.restore_checkpoint(tmp_path, {**TREE, "new": jnp.zeros(1)})
    # a part of what was saved, as in Flax (its Orbax restore gives that part)
    got = checkpoints.restore_checkpoint(tmp_path, {"w": jnp.zeros(3)})
    assert list(got) == ["w"] and got["w"].tolist() == [0.0, 1.0, 2.0]
    with (
        lens.strict(),
        pytest.raises(errors.SerializationError, match="state dict contains keys"),
    ):
        checkpoints.restore_checkpoint(tmp_path, {"w": TREE["w"]})


def test_restores_the_orbax_checkpoints_flax_writes_by_default(tmp_path):
    """Flax's save_checkpoint writes an Orbax directory (its default backend);
    lens's restore reads it as Flax's does: the latest step, a given step, the
    directory itself, with and without a target."""
    fck = pytest.importorskip("flax.training.checkpoints")
    saved = {"w": jnp.arange(3.0), "n": {"c": jnp.ones(2, jnp.int32)}}
    for step in (1, 2):
        fck.save_checkpoint(
            tmp_path, jax.tree.map(lambda x, s=step: x * s, saved), step, keep=2
        )
    assert os.path.isdir(tmp_path / "checkpoint_2")
    target = jax.tree.map(jnp.zeros_like, saved)
    for args in (
        (tmp_path, None),
        (tmp_path, target),
        (tmp_path / "checkpoint_1", None),
    ):
        theirs = fck.restore_checkpoint(*args)
        ours = checkpoints.restore_checkpoint(*args)
        assert jax.tree.structure(ours) == jax.tree.structure(theirs)
        assert_tree_allclose(ours, theirs)
        assert [type(x) for x in jax.tree.leaves(ours)] == [
            type(x) for x in jax.tree.leaves(theirs)
        ]
    got = checkpoints.restore_checkpoint(tmp_path, target, step=1)
    assert_tree_allclose(got, saved)
    assert_tree_allclose(
        checkpoints.restore_checkpoint(tmp_path, None)["w"], saved["w"] * 2
    )


def test_an_orbax_checkpoint_without_orbax_says_what_to_install(tmp_path, monkeypatch):
    import sys

    (tmp_path / "checkpoint_3").mkdir()
    (tmp_path / "checkpoint_3" / "_METADATA").write_text("{}")
    monkeypatch.setitem(sys.modules, "orbax.checkpoint", None)  # import fails
    with pytest.raises(ImportError, match="pip install orbax-checkpoint"):
        checkpoints.restore_checkpoint(tmp_path, None)


def test_restore_gives_jax_arrays_as_flaxs_default_orbax_restore_does(tmp_path):
    # flax.training.checkpoints' docstring: restore_checkpoint(dir, None) gives
    # {'a': Array([1, 2, 3], dtype=int32), ...}: Flax's default (Orbax) restore
    saved = {"a": np.array([1, 2, 3], np.int32), "b": np.ones(3, np.int32)}
    checkpoints.save_checkpoint(tmp_path, saved, step=0)
    got = checkpoints.restore_checkpoint(tmp_path, target=None)
    assert all(isinstance(x, jax.Array) for x in got.values())
    assert repr(got["a"]) == "Array([1, 2, 3], dtype=int32)"
    # with a target: a JAX array where it has one, NumPy where it has NumPy
    target = {"a": jnp.zeros(3, jnp.int32), "b": np.zeros(3, np.int32)}
    got = checkpoints.restore_checkpoint(tmp_path, target=target)
    assert isinstance(got["a"], jax.Array) and type(got["b"]) is np.ndarray
    assert got["a"].sharding == target["a"].sharding


def test_restore_gives_numpy_arrays_with_flaxs_orbax_option_off(tmp_path):
    from lens import config

    checkpoints.save_checkpoint(tmp_path, {"a": np.arange(3)}, step=0)
    config.update("flax_use_orbax_checkpointing", False)
    try:
        got = checkpoints.restore_checkpoint(tmp_path, target=None)
    finally:
        config.update("flax_use_orbax_checkpointing", True)
    assert type(got["a"]) is np.ndarray  # Flax's legacy restore


def test_a_smaller_target_is_a_placeholder_as_in_flax_and_strict_mode_refuses_it(
    tmp_path,
):
    import lens

    # flax's checkpoints_test.test_smaller_target: the saved shape comes back
    checkpoints.save_checkpoint(tmp_path, {"a": jnp.ones((4, 5))}, step=0)
    got = checkpoints.restore_checkpoint(tmp_path, {"a": jnp.zeros((2, 3))})
    assert got["a"].shape == (4, 5)
    with lens.strict():
        with pytest.raises(errors.SerializationError, match=r"has shape \[4, 5\]"):
            checkpoints.restore_checkpoint(tmp_path, {"a": jnp.zeros((2, 3))})
    # a saved float where the target has an int is still refused
    with pytest.raises(errors.SerializationError, match="dtype float32"):
        checkpoints.restore_checkpoint(tmp_path, {"a": jnp.zeros((4, 5), jnp.int32)})
    # serialization's own restore keeps checking shapes
    with pytest.raises(errors.SerializationError, match="shape"):
        serialization.from_state_dict({"a": np.zeros(2)}, {"a": np.zeros(3)})
