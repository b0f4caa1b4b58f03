"""Large variable collections: counted in one cheap pass, rows only for what is shown."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lens import nn
from lens.display import VariablesView, _walk


def _big(n: int) -> dict:
    return {
        "params": {
            f"layer_{i}": {"kernel": np.ones((4,), np.float32)} for i in range(n)
        }
    }


def test_a_100k_leaf_collection_paints_fast_and_names_what_it_hides():
    big = _big(100_000)
    start = time.perf_counter()
    bundle = VariablesView(big)._repr_mimebundle_()
    elapsed = time.perf_counter() - start
    # benchmarks/displays.py measures the 0.5 s target; this guards against
    # a return to building a row per variable (several seconds here).
    assert elapsed < 3
    text, html = bundle["text/plain"], bundle["text/html"]
    assert text.startswith("Variables: 1 collection, 100,000 arrays, 400,000 values")
    assert "... 99,800 more variables in 99,800 modules" in text
    assert len(html.encode()) < 300_000
    # Expandable: a collapsed section names the next hidden modules, then counts.
    more = html[html.index("99,800 more variables") :]
    assert more.index("/layer_200<") < more.index("/layer_299<")
    assert "/layer_300<" not in html
    assert "and 99,700 more modules" in html


def test_counts_are_exact_for_boxes_mixed_dtypes_and_a_module_cut_by_the_budget():
    tree = {
        "params": {
            "a": {"w": np.zeros((2, 3), np.float16), "b": np.zeros(3, np.int64)},
            "boxed": {"k": nn.Partitioned(np.zeros((4, 4), np.float32), ("x", "y"))},
        },
        "bare": np.zeros(5, np.float32),
    }
    cols = _walk.collect(tree, budget=1)
    params, bare = cols
    assert (params.n, params.count, params.nbytes) == (3, 25, 6 * 2 + 3 * 8 + 64)
    assert [m.path for m in params.shown] == [("a",)]
    assert [x.name for x in params.shown[0].leaves] == ["w"]
    # 'a' was cut after one row: its bias and the whole 'boxed' module are hidden.
    assert (params.hidden_n, params.hidden_modules) == (2, 2)
    assert (params.hidden_count, params.hidden_nbytes) == (19, 24 + 64)
    assert [m.path for m in params.more] == [("boxed",)]
    assert (bare.n, bare.count, bare.nbytes, bare.hidden_n) == (1, 5, 20, 1)
    everything = _walk.collect(tree, budget=None)
    assert sum(len(m.leaves) for c in everything for m in c.shown) == 4
    assert all(c.hidden_n == 0 for c in everything)
    assert everything[0].shown[1].leaves[0].box == "Partitioned"


def test_a_dict_that_contains_itself_is_named():
    loop: dict = {"w": np.ones(2)}
    loop["again"] = {"inner": loop}
    with pytest.raises(ValueError, match="contain themselves at params/again/inner"):
        _walk.collect({"params": loop}, budget=10)


def test_the_same_dict_in_two_places_is_not_a_cycle():
    shared = {"w": np.ones(2)}
    cols = _walk.collect({"params": {"a": shared, "b": shared}}, budget=None)
    assert [m.path for m in cols[0].shown] == [("a",), ("b",)]


def test_arrays_before_and_after_a_sub_dict_stay_one_module():
    tree = {"params": {"a": np.ones(1), "sub": {"w": np.ones(2)}, "b": np.ones(3)}}
    (everything,) = _walk.collect(tree, budget=None)
    assert [(m.path, [x.name for x in m.leaves]) for m in everything.shown] == [
        ((), ["a", "b"]),
        (("sub",), ["w"]),
    ]
    (cut,) = _walk.collect(tree, budget=1)
    # the root module (partly shown) and 'sub' are hidden: each counted once
    assert (cut.hidden_n, cut.hidden_modules, cut.hidden_count) == (2, 2, 5)
    assert [m.path for m in cut.more] == [("sub",)]


def test_prng_key_arrays_count_their_bytes_in_rows_and_totals():
    import jax

    view = VariablesView({"rng": {"key": jax.random.key(0)}})
    (rng,) = view.collections
    assert (rng.n, rng.nbytes) == (1, jax.random.key(0).nbytes)
    assert view.leaves[0].nbytes == rng.nbytes > 0
    assert "key  key<fry>[]  1 (8 B)" in view.text()
