"""Collection filters and their algebra."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens import errors
from lens.core import (
    DenyList,
    group_collections,
    in_filter,
    intersect_filters,
    subtract_filters,
    union_filters,
)

NAMES = ["params", "batch_stats", "cache", "intermediates", "counter"]

names = st.sampled_from(NAMES)
base_filters = st.one_of(
    st.booleans(),
    names,
    st.lists(names, max_size=3).map(tuple),
    st.frozensets(names, max_size=3),
)
filters = st.recursive(base_filters, lambda inner: inner.map(DenyList), max_leaves=3)


@pytest.mark.parametrize(
    "f,col,expected",
    [
        (True, "params", True),
        (False, "params", False),
        ("params", "params", True),
        ("params", "cache", False),
        (["params", "cache"], "cache", True),
        (("params",), "cache", False),
        ({"cache"}, "cache", True),
        (DenyList("params"), "cache", True),
        (DenyList(["params"]), "params", False),
        (DenyList(True), "params", False),
        (DenyList(DenyList("params")), "params", True),
    ],
)
def test_in_filter(f, col, expected):
    assert in_filter(f, col) is expected


def test_invalid_filter_raises_clear_error():
    with pytest.raises(errors.InvalidFilterError, match='Invalid Filter: "3"'):
        in_filter(3, "params")
    with pytest.raises(TypeError):  # InvalidFilterError is a TypeError too
        in_filter(DenyList(3.5), "params")


def test_group_collections_first_match_wins():
    xs = {"params": 1, "batch_stats": 2, "cache": 3}
    assert group_collections(xs, (["params"], True)) == (
        {"params": 1},
        {"batch_stats": 2, "cache": 3},
    )
    assert group_collections(xs, (True, ["params"])) == (xs, {})
    # unmatched collections are left out
    assert group_collections(xs, ("cache",)) == ({"cache": 3},)


@given(filters, filters, names)
def test_union_law(a, b, col):
    assert in_filter(union_filters(a, b), col) == (
        in_filter(a, col) or in_filter(b, col)
    )


@given(filters, filters, names)
def test_intersect_law(a, b, col):
    assert in_filter(intersect_filters(a, b), col) == (
        in_filter(a, col) and in_filter(b, col)
    )


@given(filters, filters, names)
def test_subtract_law(a, b, col):
    assert in_filter(subtract_filters(a, b), col) == (
        in_filter(a, col) and not in_filter(b, col)
    )


@given(filters, names)
def test_denylist_is_complement(a, col):
    assert in_filter(DenyList(a), col) == (not in_filter(a, col))


@given(filters, filters, filters, names)
def test_union_and_intersection_distribute(a, b, c, col):
    lhs = intersect_filters(a, union_filters(b, c))
    rhs = union_filters(intersect_filters(a, b), intersect_filters(a, c))
    assert in_filter(lhs, col) == in_filter(rhs, col)
