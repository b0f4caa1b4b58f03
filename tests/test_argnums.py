"""lens._argnums: the one way transforms read and split held argument positions."""

import pytest

from lens._argnums import (
    argnames,
    argnums,
    combine,
    held_mask,
    out_of_range,
    partition,
)


def test_argnums_reads_every_form_and_rejects_non_ints():
    assert argnums(None) == () and argnums(2) == (2,) and argnums([1, -1]) == (1, -1)
    with pytest.raises(
        TypeError, match=r"nnx.jit: static_argnums must be ints, got \('a',\)"
    ):
        argnums(("a",), "nnx.jit: static_argnums")
    with pytest.raises(TypeError):
        argnums((True,))
    assert argnames("train") == ("train",) and argnames(None) == ()


def test_out_of_range_counts_negative_positions_from_the_end():
    assert out_of_range((0, -3, 3, -4), 3) == [3, -4]


def test_partition_and_combine_are_inverse():
    values = ["a", "b", "c", "d"]
    mask = held_mask(4, (1, -1))
    assert mask == [False, True, False, True]
    traced, held = partition(values, mask)
    assert (traced, held) == (["a", "c"], ["b", "d"])
    assert combine(traced, held, mask) == values
    assert held_mask(0, (0,)) == []
