"""What Flax's NNX guides print: a split Rngs (key arrays) shows with its size, and
``State.from_flat_path`` (the filters guide) builds a State as flax's does."""

from typing import Any, cast

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
    with pytest.raises(
        TypeError, match="accepts either a single positional argument or keyword"
    ):
        nnx.data(1.0, default=2.0)


def test_static_attributes_refuse_data_as_flax_does():
    """flax.nnx 0.12: an attribute declared static (``nnx.static(x)``, an
    ``nnx.Static[T]`` annotation, an ``nnx.static()`` field) holds no arrays,
    Variables or objects; the error says how to make it data. Annotations
    ``nnx.Data[T]`` declare data."""
    import dataclasses

    import jax

    p: Any = nnx.Pytree()
    with pytest.raises(ValueError, match="Found data in value of type .* nnx.static"):
        p.a = nnx.static(jnp.ones(2))
    assert "a" not in vars(p)
    p.b = nnx.static(3)
    with pytest.raises(ValueError, match="Found data on value of type .*list"):
        p.b = ["hi", jnp.ones(2)]
    with pytest.raises(ValueError, match="Cannot assign data value of type"):
        p.b = jnp.ones(2)
    assert p.b == 3
    p.b = nnx.data(jnp.ones(2))  # re-declared: data now
    assert len(jax.tree.leaves(p)) == 1

    @dataclasses.dataclass
    class Foo(nnx.Pytree):
        a: nnx.Data[int]
        b: nnx.Static[int]
        c: jax.Array

    foo = cast(Any, Foo)(a=1, b=2, c=jnp.array(3))
    assert len(jax.tree.leaves(foo)) == 2 and foo._pytree__nodes == {
        "a": True,
        "b": False,
        "c": True,
    }

    @nnx.dataclass
    class Bar(nnx.Pytree):
        a: jax.Array = nnx.static()

    with pytest.raises(ValueError, match="Found unexpected data on value of type"):
        Bar(a=jnp.array(3))

    class Loose(nnx.Pytree, pytree=False):  # not a pytree: no data/static rules
        pass

    loose: Any = Loose()
    loose.a = nnx.static(jnp.ones(2))
    assert loose.a.shape == (2,)


def test_module_repr_comments_match_flax():
    """Each node's comment sums its variables per type, rng keys and counts as
    RngState, with a Total when there is more than one type."""
    fnnx = pytest.importorskip("flax.nnx")

    def text(nn):
        class Block(nn.Module):
            def __init__(self, rngs):
                self.linear = nn.Linear(2, 3, rngs=rngs)
                self.bn = nn.BatchNorm(3, rngs=rngs)
                self.dropout = nn.Dropout(0.2, rngs=rngs)

        lines = repr(Block(nn.Rngs(0))).splitlines()
        return [line for line in lines if "#" in line]

    ours = text(nnx)
    assert ours == text(fnnx)
    assert ours[0].endswith("RngState: 2 (12 B), Total: 23 (96 B)")
