"""Displays name the devices (and processes) that hold each part of an array."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lens import display
from lens.display import _placement


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"))


def _put(mesh, spec, shape=(4, 8)):
    return jax.device_put(jnp.zeros(shape), NamedSharding(mesh, spec))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (P("data"), "[0:2,:] d0-3 · [2:4,:] d4-7"),
        (P(None, "model"), "[:,0:2] d0,4 · [:,2:4] d1,5 · [:,4:6] d2,6 · [:,6:8] d3,7"),
        (P(), "whole d0-7"),
    ],
)
def test_each_part_and_its_devices(mesh, spec, expected):
    assert _placement.describe(_put(mesh, spec)) == expected


def test_many_parts_are_counted_not_listed(mesh):
    text = _placement.describe(_put(mesh, P("data", "model")))
    assert text is not None
    assert text.startswith("[0:2,0:2] d0 · [0:2,2:4] d1")
    assert text.count(" · ") == _placement.MAX_PARTS - 1  # exactly 8 parts
    mesh8 = jax.make_mesh((8,), ("x",))
    many = _placement.describe(_put(mesh8, P("x"), shape=(16,)))
    assert many is not None and many.count("d") == 8 and "more parts" not in many


def test_nothing_to_place(mesh):
    assert _placement.describe(jnp.zeros(3)) is None  # one device
    assert _placement.describe(np.zeros(3)) is None
    abstract = jax.sharding.AbstractMesh((2, 4), ("data", "model"))
    sds = jax.ShapeDtypeStruct(
        (4, 8), jnp.float32, sharding=NamedSharding(abstract, P())
    )
    assert _placement.describe(sds) is None  # no devices yet
    placed = jax.ShapeDtypeStruct(
        (4, 8), jnp.float32, sharding=NamedSharding(mesh, P("data"))
    )
    assert _placement.describe(placed) == "[0:2,:] d0-3 · [2:4,:] d4-7"


def test_ranges_and_processes():
    assert _placement._ranges([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"

    class Device:
        def __init__(self, id, process_index):
            self.id, self.process_index = id, process_index

    devices = [Device(0, 0), Device(1, 0), Device(2048, 1)]
    assert _placement._devices(devices, True) == "p0:d0-1 p1:d2048"
    assert _placement._devices(devices[:2], False) == "d0-1"


def test_host_value_on_one_process(mesh):
    x = _put(mesh, P("data", "model"))
    np.testing.assert_array_equal(_placement.host_value(x), np.zeros((4, 8)))


def test_variables_view_shows_the_placement(mesh):
    w = jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P("data")))
    text = display.VariablesView({"params": {"w": w}}).text()
    assert "sharded P('data',) on 2x4 mesh: [0:2,:] d0-3 · [2:4,:] d4-7" in text
    assert "mean 1" in text  # statistics still shown: this process holds it all
