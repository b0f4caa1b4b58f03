"""The flax.linen differential zoo (tests/nn/flax_zoo.py), group "recurrent"."""

import pytest

from tests.nn.flax_zoo import GROUPS, check_same_as_flax


@pytest.mark.parametrize("name", GROUPS["recurrent"])
def test_same_variables_and_outputs_as_flax(name):
    check_same_as_flax(name)
