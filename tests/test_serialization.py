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
