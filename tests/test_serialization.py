"""Serialization round trips and clear errors on bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors, nn, serialization
from tests.helpers import assert_tree_allclose


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(
            4,
            kernel_init=nn.with_partitioning(
                nn.initializers.lecun_normal(), (None, "model")
            ),
        )(x)
        return nn.BatchNorm(use_running_average=True)(x)


def test_round_trip_params_batch_stats_and_boxes():
    v = Model().init(jax.random.key(0), jnp.ones((2, 3)))
    data = serialization.to_bytes(v)
    target = jax.tree.map(jnp.zeros_like, v)
    restored = serialization.from_bytes(target, data)
    assert_tree_allclose(restored, v)
    box = restored["params"]["Dense_0"]["kernel"]
    assert isinstance(box, nn.Partitioned) and box.names == (None, "model")
    state = serialization.to_state_dict(v)
    assert set(state["params"]["Dense_0"]["kernel"]) == {"value"}
    assert_tree_allclose(serialization.from_state_dict(target, state), v)


def test_bad_input_raises_and_changes_nothing():
    v = Model().init(jax.random.key(0), jnp.ones((2, 3)))
    data = serialization.to_bytes(v)
    target = jax.tree.map(jnp.zeros_like, v)
    before = jax.tree.map(np.asarray, target)
    with pytest.raises(errors.SerializationError, match="truncated"):
        serialization.from_bytes(target, data[: len(data) // 2])
    with pytest.raises(errors.SerializationError, match="contains keys {'other'}"):
        serialization.from_bytes({"params": {"other": jnp.zeros(1)}}, data)
    with pytest.raises(errors.SerializationError, match="is a dict"):
        serialization.from_bytes({"params": jnp.zeros(1)}, data)
    assert_tree_allclose(target, before)
    # Unlike Flax (which restores whatever was saved), another shape, another kind
    # of dtype, or a value where an array was, raise and name the path.
    other = Model().init(jax.random.key(0), jnp.ones((2, 5)))
    with pytest.raises(
        errors.SerializationError,
        match=r"/params/Dense_0/kernel/value has shape \[3, 4\], but the target",
    ):
        serialization.from_bytes(other, data)
    ints = jax.tree.map(lambda x: jnp.zeros(x.shape, jnp.int32), v)
    with pytest.raises(errors.SerializationError, match="has dtype float32, but the"):
        serialization.from_bytes(ints, data)
    text = serialization.to_bytes({"w": "weights"})
    with pytest.raises(errors.SerializationError, match="/w is str, but the target"):
        serialization.from_bytes({"w": jnp.zeros(2)}, text)
    # The saved width is kept, as in Flax: bfloat16 into a float32 template.
    half = serialization.to_bytes({"w": jnp.ones(2, jnp.bfloat16)})
    assert (
        serialization.from_bytes({"w": jnp.zeros(2)}, half)["w"].dtype == jnp.bfloat16
    )


def test_prng_key_arrays_round_trip():
    """Typed keys (jax.random.key) have no numpy form; Flax's to_bytes raises."""
    tree = {"rng": jax.random.key(7), "keys": jax.random.split(jax.random.key(1), 3)}
    restored = serialization.from_bytes(tree, serialization.to_bytes(tree))
    for name, key in tree.items():
        assert jnp.issubdtype(restored[name].dtype, jax.dtypes.prng_key)
        np.testing.assert_array_equal(
            jax.random.key_data(restored[name]), jax.random.key_data(key)
        )
    raw = serialization.msgpack_restore(serialization.to_bytes(tree))
    assert jnp.issubdtype(raw["rng"].dtype, jax.dtypes.prng_key)
    with pytest.raises(errors.SerializationError, match="has dtype"):
        serialization.from_bytes(
            {"rng": jnp.zeros((), jnp.uint32)},
            serialization.to_bytes({"rng": tree["rng"]}),
        )


def test_extra_key_in_the_state_is_dropped_as_in_flax_and_strict_mode_names_it():
    """Flax drops keys that only the state has (restoring a part of a
    checkpoint, the parameters of a saved TrainState, relies on it); strict
    mode raises and names them, since a typo'd or renamed key restores nothing."""
    import lens

    data = serialization.to_bytes({"a": {"w": jnp.ones(1), "typo": jnp.ones(1)}})
    got = serialization.from_bytes({"a": {"w": jnp.zeros(1)}}, data)
    assert list(got["a"]) == ["w"] and float(got["a"]["w"][0]) == 1.0
    with lens.strict(), pytest.raises(errors.SerializationError) as info:
        serialization.from_bytes({"a": {"w": jnp.zeros(1)}}, data)
    assert str(info.value) == (
        "The target dict keys and state dict keys do not match, state dict "
        "contains keys {'typo'} which are not present in target dict at path ./a"
    )
    assert "strict mode" in info.value.__notes__[0]


def test_missing_key_message_is_flax_word_for_word_then_lens_notes():
    """Flax's tests compare the message literally; lens's lines are notes."""
    import pickle

    data = serialization.to_bytes({"a": {"b": {"c": [1, 2, 3], "d": [4, 5]}}})
    with pytest.raises(ValueError) as info:
        serialization.from_bytes({"a": {"b": {"c": [1, 2, 3], "e": [4, 5]}}}, data)
    err = info.value
    assert isinstance(err, errors.SerializationError)
    assert str(err) == (
        "The target dict keys and state dict keys do not match, target dict contains "
        "keys {'e'} which are not present in state dict at path ./a/b"
    )
    assert any("Restore into a target" in n for n in err.__notes__)
    assert any("docs/errors.md#serializationerror" in n for n in err.__notes__)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.__notes__ == err.__notes__


def test_struct_field_errors_use_flax_words():
    from lens import struct

    @struct.dataclass
    class Point:
        x: int
        y: int

    p = Point(1, 2)
    with pytest.raises(ValueError, match=r"^Missing field y in state dict while"):
        serialization.from_state_dict(p, {"x": 3})
    with pytest.raises(ValueError, match=r'^Unknown field\(s\) "z" in state dict'):
        serialization.from_state_dict(p, {"x": 3, "y": 4, "z": 5})


def test_object_dtype_uses_flax_words():
    with pytest.raises(ValueError, match="^Object and structured dtypes not supported"):
        serialization.to_bytes({"o": np.array([object()])})
