"""Python's own protocols on nnx objects (augmented assignment on a Variable,
iterating and sizing Rngs) behave as flax.nnx 0.12.8's. Each case runs on lens
and, where installed, on flax, so a difference shows as one side failing."""

import jax
import jax.numpy as jnp
import pytest

from lens import errors
from lens import nnx as lnnx
from tests.helpers import on_lens_and_flax_nnx

BOTH = on_lens_and_flax_nnx()

AUGMENTED = [
    ("+=", lambda v: v.__iadd__(1)),
    ("-=", lambda v: v.__isub__(1)),
    ("*=", lambda v: v.__imul__(2)),
    ("@=", lambda v: v.__imatmul__(jnp.eye(2))),
    ("/=", lambda v: v.__itruediv__(2)),
    ("//=", lambda v: v.__ifloordiv__(2)),
    ("%=", lambda v: v.__imod__(2)),
    ("**=", lambda v: v.__ipow__(2)),
]


@BOTH
@pytest.mark.parametrize("op,apply", AUGMENTED, ids=[a for a, _ in AUGMENTED])
def test_augmented_assignment_on_a_variable_is_refused(nnx, op, apply):
    v = nnx.Param(jnp.ones((2, 2)))
    with pytest.raises(
        NotImplementedError,
        match="In-place operations are no longer supported for Variable",
    ):
        apply(v)
    assert (v[...] == 1).all()  # the value is untouched


def test_the_refusal_says_what_would_be_lost_and_how_to_update():
    v = lnnx.BatchStat(jnp.zeros(()))
    with pytest.raises(errors.VariableInPlaceError) as info:
        v.__iadd__(1)
    message = str(info.value)
    assert "would replace the BatchStat with a plain array" in message
    assert "variable[...] += x" in message


@BOTH
def test_a_module_attribute_incremented_whole_stays_a_variable(nnx):
    class Counter(nnx.Module):
        def __init__(self):
            self.count = nnx.BatchStat(jnp.zeros(()))

    c = Counter()
    with pytest.raises(NotImplementedError):
        c.count += 1
    assert isinstance(c.count, nnx.BatchStat)  # not silently an array
    c.count[...] += 1  # the way that works
    assert float(c.count[...]) == 1.0
    assert len(jax.tree.leaves(nnx.state(c, nnx.BatchStat))) == 1


@BOTH
def test_iterating_rngs_gives_its_stream_names(nnx):
    rngs = nnx.Rngs(params=0, default=1)
    assert list(rngs) == ["params", "default"]
    assert len(rngs) == 2
    assert sorted(name for name, _ in rngs.items()) == ["default", "params"]
    assert "params" in rngs and "dropout" not in rngs


@BOTH
def test_an_empty_rngs_has_no_streams(nnx):
    rngs = nnx.Rngs()
    assert list(rngs) == [] and len(rngs) == 0 and not rngs
