"""lens.nn raises what flax.linen raises for the same mistake (flax is the oracle).

Each case is a mistake made with a Linen layer, found by
``python -m parity.differential --api linen --mistakes``: lens's error is of
flax's class (or a subclass), and its message starts with flax's first sentence
(up to a marker where flax's goes on to name its internals; "" compares the
class only); lens may add where and how to fix.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import lens.nn as lnn
from parity.differential import error_differs

fnn = pytest.importorskip("flax.linen")

KEY = jax.random.key(0)


def _init(layer, x):
    return layer.init({"params": KEY, "dropout": KEY}, x)


CASES = {
    # a size of 0: flax divides by it in an initializer (ZeroDivisionError)
    "Dense features 0": (lambda nn: _init(nn.Dense(0), jnp.ones((2, 3))), ""),
    "Conv kernel_size 0": (
        lambda nn: _init(nn.Conv(4, kernel_size=0), jnp.ones((1, 6, 3))),
        "",
    ),
    "MultiHeadDotProductAttention num_heads 0": (
        lambda nn: _init(nn.MultiHeadDotProductAttention(0), jnp.ones((2, 3, 4))),
        "",
    ),
    # GroupNorm checks its groups against the channels at the call
    "GroupNorm num_groups 0": lambda nn: _init(
        nn.GroupNorm(num_groups=0), jnp.ones((2, 5, 4))
    ),
    "GroupNorm num_groups -1": lambda nn: _init(
        nn.GroupNorm(num_groups=-1), jnp.ones((2, 5, 4))
    ),
    "GroupNorm num_groups 2.5": (
        lambda nn: _init(nn.GroupNorm(num_groups=2.5), jnp.ones((2, 5, 4))),
        "",
    ),
    "GroupNorm group_size with num_groups": lambda nn: _init(
        nn.GroupNorm(group_size=0), jnp.ones((2, 5, 4))
    ),
    "GroupNorm group_size 0": (
        lambda nn: _init(nn.GroupNorm(num_groups=None, group_size=0), jnp.ones((2, 4))),
        "",
    ),
    "GroupNorm group_size 3": lambda nn: _init(
        nn.GroupNorm(num_groups=None, group_size=3), jnp.ones((2, 4))
    ),
    # batch_dims are checked as given, before negative dims are normalised
    "DenseGeneral batch_dims -1": lambda nn: _init(
        nn.DenseGeneral(5, batch_dims=-1), jnp.ones((2, 3))
    ),
    "DenseGeneral batch_dims -2": lambda nn: _init(
        nn.DenseGeneral(5, batch_dims=-2), jnp.ones((2, 3))
    ),
    "MultiHeadDotProductAttention qkv_features -1": lambda nn: _init(
        nn.MultiHeadDotProductAttention(2, qkv_features=-1), jnp.ones((2, 3, 4))
    ),
    # what is not an array fails where Flax's statistics read it
    "LayerNorm list": lambda nn: _init(nn.LayerNorm(), [[1.0, 2.0, 3.0]]),
    "LayerNorm None": lambda nn: _init(nn.LayerNorm(), None),
    "RMSNorm list": lambda nn: _init(nn.RMSNorm(), [[1.0, 2.0, 3.0]]),
    "Dropout list": lambda nn: nn.Dropout(0.5, deterministic=False).apply(
        {}, [[1.0, 2.0]], rngs={"dropout": KEY}
    ),
}


def _raised(nn, case):
    fn = CASES[case][0] if isinstance(CASES[case], tuple) else CASES[case]
    with pytest.raises(Exception) as info:
        fn(nn)
    return info.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_error_class_and_first_sentence_as_flax(case):
    upto = CASES[case][1] if isinstance(CASES[case], tuple) else None
    assert not error_differs(_raised(fnn, case), _raised(lnn, case), upto=upto)


def test_group_norm_with_groups_that_do_not_divide_says_where_and_how_to_fix():
    class Net(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            return lnn.GroupNorm(num_groups=0, name="norm")(x)

    with pytest.raises(ValueError, match=r"^Number of groups \(0\)") as info:
        _init(Net(), jnp.ones((2, 5, 12)))
    assert "GroupNorm at /norm" in str(info.value)
    assert "num_groups=12" in str(info.value)  # a number of groups that divides


def test_mistake_fuzzer_finds_no_unexplained_difference_in_a_sample(capsys):
    import random

    from parity.differential import run_mistakes

    found = run_mistakes(random.Random(7), 40, "linen", optional=True)
    assert found == 0, capsys.readouterr().out


def test_transform_and_module_mistakes_raise_as_in_flax(capsys):
    # vmap/scan axes, jit/grad/cond misuse, filters, merge/update, Rngs, ...;
    # the differences lens keeps on purpose are listed with their reasons
    from parity.differential import run_api_mistakes

    assert run_api_mistakes("linen") == 0, capsys.readouterr().out


def test_top_level_module_mistakes_raise_as_in_flax(capsys):
    # serialization, struct, traverse_util, training, core, partitioning, bridge
    from parity.differential import run_api_mistakes

    assert run_api_mistakes("top") == 0, capsys.readouterr().out


def test_attention_features_of_0_mean_the_inputs_as_in_flax():
    x = jnp.ones((2, 3, 4))
    shapes = []
    for nn in (fnn, lnn):
        layer = nn.MultiHeadDotProductAttention(2, qkv_features=0, out_features=0)
        shapes.append(jax.tree.map(jnp.shape, _init(layer, x)))
    assert shapes[0] == shapes[1]
    assert shapes[1]["params"]["out"]["kernel"] == (2, 2, 4)
