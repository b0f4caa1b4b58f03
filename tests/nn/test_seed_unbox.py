"""Seed 002, "Unbox syntax": ``unbox`` on every variable-returning entry.

The seed adds an ``unbox`` keyword to ``.param``, ``.variable`` and
``.get_variable``; with ``unbox=False`` the AxisMetadata box is preserved::

    kernel = self.param("kernel", self.kernel_init, shape)  # No AxisMetadata
    kernel_box = self.get_variable("params", "kernel", unbox=False)  # box kept
"""

import jax
import jax.numpy as jnp
import pytest

from lens import nn

KEY = jax.random.key(0)
X = jnp.ones((1, 2))


def _boxed(shape):
    return nn.with_partitioning(nn.initializers.ones, ("a", "b"))(KEY, shape)


def _run(body):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            body(self)
            return x

    return M().init(KEY, X)


def test_seed_example_param_plain_get_variable_box():
    seen = {}

    def body(m):
        init = nn.with_partitioning(nn.initializers.ones, ("in", "out"))
        seen["kernel"] = m.param("kernel", init, (2, 3))
        seen["box"] = m.get_variable("params", "kernel", unbox=False)

    _run(body)
    assert not isinstance(seen["kernel"], nn.Partitioned)
    assert isinstance(seen["box"], nn.Partitioned)
    assert seen["box"].names == ("in", "out")


@pytest.mark.parametrize("unbox", [True, False])
def test_param_unbox(unbox):
    seen = {}

    def body(m):
        seen["v"] = m.param(
            "k",
            nn.with_partitioning(nn.initializers.ones, ("a", "b")),
            (2, 2),
            unbox=unbox,
        )

    _run(body)
    assert isinstance(seen["v"], nn.Partitioned) is (not unbox)


@pytest.mark.parametrize("unbox", [True, False])
def test_variable_unbox(unbox):
    seen = {}

    def body(m):
        seen["v"] = m.variable("stats", "s", lambda: _boxed((2, 2)), unbox=unbox).value

    _run(body)
    assert isinstance(seen["v"], nn.Partitioned) is (not unbox)


@pytest.mark.parametrize("unbox", [True, False])
def test_get_variable_unbox(unbox):
    seen = {}

    def body(m):
        m.param("k", nn.with_partitioning(nn.initializers.ones, ("a", "b")), (2, 2))
        seen["v"] = m.get_variable("params", "k", unbox=unbox)
        seen["missing"] = m.get_variable("params", "nope", "dflt", unbox=unbox)

    _run(body)
    assert isinstance(seen["v"], nn.Partitioned) is (not unbox)
    assert seen["missing"] == "dflt"


def test_get_variable_unbox_in_setup_and_after_init():
    class M(nn.Module):
        def setup(self):
            self.k = self.param(
                "k", nn.with_partitioning(nn.initializers.ones, ("a", "b")), (2, 2)
            )

        def __call__(self, x):
            plain = self.get_variable("params", "k", unbox=True)
            box = self.get_variable("params", "k", unbox=False)
            assert isinstance(box, nn.Partitioned)
            assert not isinstance(plain, nn.Partitioned)
            return x @ plain

    v = M().init(KEY, X)
    M().apply(v, X)
