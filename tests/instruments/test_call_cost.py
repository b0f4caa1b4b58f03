"""tabulate's cost helpers: keys that values computing alike share, units."""

import functools

import jax
import numpy as np
import pytest

from lens._instruments.call_cost import fmt_flops, fmt_size, signature, static_key


def test_functions_made_apart_share_a_key_when_they_compute_alike():
    normal = jax.nn.initializers.normal
    assert static_key(normal(0.02)) == static_key(normal(0.02))
    assert static_key(normal(0.02)) != static_key(normal(0.03))
    assert static_key(functools.partial(max, 1)) == static_key(
        functools.partial(max, 1)
    )
    assert static_key({"f": [normal(1.0)]}) == static_key({"f": [normal(1.0)]})
    assert static_key(jax.nn.relu) != static_key(jax.nn.gelu)


def test_a_function_that_refers_to_itself_has_a_key():
    def make():
        def f(n):
            return f(n - 1) if n else 0

        return f

    assert static_key(make()) == static_key(make())


def test_an_array_has_no_key():
    with pytest.raises(TypeError):
        static_key(np.ones(3))
    assert signature({"x": np.ones((2, 3), np.float32), "n": 3}) is not None
    assert signature({"x": np.ones(2), "n": [1]}) is not None
    assert signature({"n": np.ones(2)}) == signature({"n": np.zeros(2)})


@pytest.mark.parametrize(
    "n, text",
    [
        (14, "14 FLOP"), (999, "999 FLOP"), (1000, "1.00 kFLOP"),
        (66_560, "66.6 kFLOP"), (6_656_000, "6.66 MFLOP"), (999_600, "1.00 MFLOP"),
        (123_456_789_012, "123 GFLOP"), (None, ""), (-1, ""),
    ],
)  # fmt: skip
def test_flops_read_with_three_digits_and_si_prefixes(n, text):
    assert fmt_flops(n) == text


def test_bytes_read_in_binary_units():
    assert [fmt_size(n) for n in (8, 1024, 37_376, 3 << 20, None)] == [
        "8 B", "1.0 KiB", "36.5 KiB", "3.0 MiB", "",
    ]  # fmt: skip
