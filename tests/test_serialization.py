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
    # As in Flax, the target is a template of the structure: arrays come back with
    # the saved shapes (restoring into a smaller template works).
    other = Model().init(jax.random.key(0), jnp.ones((2, 5)))
    restored = serialization.from_bytes(other, data)
    assert jax.tree.map(jnp.shape, restored) == jax.tree.map(jnp.shape, v)
