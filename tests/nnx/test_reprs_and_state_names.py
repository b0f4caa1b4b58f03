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


def test_data_and_static_declare_attributes_as_flax_does():
    """The pytree guide: ``nnx.data(x)`` makes an attribute a pytree child whatever
    its value; as dataclass fields ``nnx.data()`` / ``nnx.static(default=...)``."""
    import jax

    class P(nnx.Pytree):
        def __init__(self):
            self.x = nnx.data(1.0)
            self.a = jnp.ones(2)
            self.name = "hi"
            self.arr = nnx.static(jnp.zeros(2))  # an array declared static

    keys = [jax.tree_util.keystr(k) for k, _ in jax.tree.leaves_with_path(P())]
    assert keys == [".a", ".x"]
    assert jax.tree.map(lambda v: v * 2, P()).x == 2.0

    @nnx.dataclass
    class Foo(nnx.Pytree):
        i: int = nnx.data()
        x: jax.Array
        s: str = nnx.static(default="hi", kw_only=True)

    foo = Foo(1, jnp.ones(3))
    assert [jax.tree_util.keystr(k) for k, _ in jax.tree.leaves_with_path(foo)] == [
        ".i",
        ".x",
    ]
    assert foo.s == "hi" and jax.tree.map(lambda v: v + 1, foo).i == 2
    assert list(nnx.List([nnx.data(1.0), 2])) == [1.0, 2]
    with pytest.raises(TypeError, match="takes no field arguments"):
        nnx.data(1.0, default=2.0)
