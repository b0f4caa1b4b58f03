"""What Flax's NNX guides print: a split Rngs (key arrays) shows with its size, and
``State.from_flat_path`` (the filters guide) builds a State as flax's does."""

import jax.numpy as jnp
import pytest

from lens import nnx


def test_split_rngs_repr_counts_key_arrays():
    text = repr(nnx.Rngs(1).split(5))
    assert "RngKey( # 5 (40 B)" in text  # five keys of 8 bytes, as flax counts them
    assert "RngCount( # 5 (20 B)" in text


def test_state_from_flat_path_is_from_flat_state_with_flaxs_warning():
    flat = {("a", "b"): nnx.Param(jnp.ones(2)), ("c",): nnx.BatchStat(jnp.zeros(()))}
    with pytest.warns(DeprecationWarning, match="nnx.from_flat_state"):
        s = nnx.State.from_flat_path(flat)
    assert s == nnx.State.from_flat_state(flat)
    assert s["a"]["b"][...].tolist() == [1.0, 1.0]
