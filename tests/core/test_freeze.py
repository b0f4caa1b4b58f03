"""FrozenDict and friends, for code ported from Flax."""

import jax
import jax.numpy as jnp
import pytest

from lens import nn
from lens.core import FrozenDict, copy, freeze, pop, unfreeze


def test_frozen_dict_is_an_immutable_pytree_that_apply_accepts():
    v = nn.Dense(2).init(jax.random.key(0), jnp.ones((1, 3)))
    fv = freeze(v)
    assert isinstance(fv["params"], FrozenDict)
    with pytest.raises(ValueError, match="immutable"):
        fv["params"] = {}
    y = nn.Dense(2).apply(fv, jnp.ones((1, 3)))  # apply takes any mapping
    assert y.shape == (1, 2)
    doubled = jax.tree.map(lambda a: a * 2, fv)
    assert isinstance(doubled, FrozenDict)
    assert jax.tree_util.tree_structure(unfreeze(fv)) == jax.tree_util.tree_structure(v)
    assert unfreeze(fv) == v and type(unfreeze(fv)["params"]) is dict


def test_copy_and_pop_keep_the_type():
    fd = FrozenDict({"a": 1, "b": {"c": 2}})
    rest, b = pop(fd, "b")
    assert isinstance(rest, FrozenDict) and b == FrozenDict({"c": 2})
    assert copy(fd, {"a": 3})["a"] == 3 and fd["a"] == 1
    rest, a = pop({"a": 1, "b": 2}, "a")
    assert rest == {"b": 2} and a == 1 and type(rest) is dict
    assert hash(fd) == hash(FrozenDict({"b": {"c": 2}, "a": 1}))


def test_frozen_dict_reduce_rebuilds_an_equal_copy():
    """``__reduce__`` gives ``(cls, args)`` (Flax's test calls it directly)."""
    import copy as copy_module
    import pickle

    before = FrozenDict(a=FrozenDict(b=1, c=2))
    cls, data = before.__reduce__()
    after = cls(*data)
    assert after is not before and after == before
    assert after == {"a": {"b": 1, "c": 2}}
    assert isinstance(after["a"], FrozenDict)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(before, protocol=proto)) == before
    assert copy_module.copy(before) == before
    assert copy_module.deepcopy(before) == before
