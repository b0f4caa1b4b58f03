"""The flax.linen differential zoo (tests/nn/flax_zoo.py), group "layers"."""

import pytest

from tests.nn.flax_zoo import GROUPS, check_same_as_flax


@pytest.mark.parametrize("name", GROUPS["layers"])
def test_same_variables_and_outputs_as_flax(name):
    check_same_as_flax(name)


def test_every_zoo_model_is_checked_by_one_group():
    from tests.nn.flax_zoo import LENS

    names = [n for group in GROUPS.values() for n in group]
    assert sorted(names) == sorted(LENS)
