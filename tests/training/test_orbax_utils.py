"""lens.training.orbax_utils builds the same Orbax arguments as Flax's."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens.training import orbax_utils

ocp = pytest.importorskip("orbax.checkpoint")
flax_orbax_utils = pytest.importorskip("flax.training.orbax_utils")

TREE = {"a": jnp.ones((2, 3)), "b": {"c": np.zeros(4), "d": None}}


def test_save_args_one_per_leaf():
    args = orbax_utils.save_args_from_target(TREE)
    want = flax_orbax_utils.save_args_from_target(TREE)
    assert jax.tree.structure(args) == jax.tree.structure(want)
    assert all(isinstance(a, ocp.SaveArgs) for a in jax.tree.leaves(args))


def test_transformations_fall_back_for_none_leaves():
    got = orbax_utils.maybe_construct_transformations(TREE, None)
    assert (
        got.keys()
        == flax_orbax_utils.maybe_construct_transformations(TREE, None).keys()
        == {"b/d"}
    )
    assert got["b/d"].use_fallback
    given = {"x": 1}
    assert orbax_utils.maybe_construct_transformations(TREE, given) is given


def test_restore_args_follow_the_target():
    plain = {"a": np.ones(3), "b": 2.0}
    args = orbax_utils.restore_args_from_target(plain)
    assert all(a.restore_type is np.ndarray for a in jax.tree.leaves(args))
    arrays = {"a": jnp.ones((2, 3))}
    got = orbax_utils.restore_args_from_target(arrays)["a"]
    want = flax_orbax_utils.restore_args_from_target(arrays)["a"]
    assert type(got) is type(want) and got.sharding == want.sharding


def test_multi_device_array():
    assert not orbax_utils.is_multi_device_array(jnp.ones(2))
    assert not orbax_utils.is_multi_device_array(np.ones(2))
