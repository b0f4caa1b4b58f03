"""The flax the tests compare against is the one they were written against: the
test and bench extras pin one version, and that is the version installed."""

import importlib.metadata
import pathlib
import tomllib

import pytest

PYPROJECT = pathlib.Path(__file__).parents[1] / "pyproject.toml"


def _flax_pins() -> dict[str, str]:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    return {
        extra: req
        for extra, reqs in extras.items()
        for req in reqs
        if req.split("=")[0].split(">")[0].strip() == "flax"
    }


def test_test_and_bench_pin_the_same_flax():
    pins = _flax_pins()
    assert set(pins) == {"test", "bench"}
    assert len(set(pins.values())) == 1
    assert next(iter(pins.values())).startswith("flax==")


def test_the_installed_flax_is_the_pinned_one():
    pytest.importorskip("flax")
    pinned = _flax_pins()["test"].split("==")[1]
    assert importlib.metadata.version("flax") == pinned
