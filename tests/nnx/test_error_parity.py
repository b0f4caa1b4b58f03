"""lens.nnx raises what flax.nnx raises for the same mistake (flax is the oracle).

Each case is a mistake a user makes with an nnx layer (the wrong feature count, a
Dropout without rngs, ...), run on both libraries: lens's error is of flax's class
(or a subclass of it, or a lens error of the same name), and its message starts
with flax's first sentence (whitespace aside); lens may add where and how to fix.
"""

from __future__ import annotations

import builtins

import jax.numpy as jnp
import pytest

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")


def _rngs(nnx):
    return nnx.Rngs(0)


CASES = {
    "RMSNorm features": lambda nnx: nnx.RMSNorm(4, rngs=_rngs(nnx))(jnp.ones((2, 3))),
    "LayerNorm features": lambda nnx: nnx.LayerNorm(4, rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "GroupNorm features": lambda nnx: nnx.GroupNorm(4, num_groups=2, rngs=_rngs(nnx))(
        jnp.ones((2, 6))
    ),
    "BatchNorm features": lambda nnx: nnx.BatchNorm(4, rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "InstanceNorm features": lambda nnx: nnx.InstanceNorm(4, rngs=_rngs(nnx))(
        jnp.ones((2, 5, 3))
    ),
    "Conv in_features": lambda nnx: nnx.Conv(4, 2, kernel_size=(3,), rngs=_rngs(nnx))(
        jnp.ones((1, 5, 3))
    ),
    "ConvTranspose in_features": lambda nnx: nnx.ConvTranspose(
        4, 2, kernel_size=(3,), rngs=_rngs(nnx)
    )(jnp.ones((1, 5, 3))),
    "Linear in_features": lambda nnx: nnx.Linear(4, 2, rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "LinearGeneral in_features": lambda nnx: nnx.LinearGeneral(4, 2, rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "Einsum operand": lambda nnx: nnx.Einsum("ab,bc->ac", (4, 2), rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "Embed attend": lambda nnx: nnx.Embed(4, 2, rngs=_rngs(nnx)).attend(
        jnp.ones((2, 3))
    ),
    "LoRA in_features": lambda nnx: nnx.LoRA(4, 2, 3, rngs=_rngs(nnx))(
        jnp.ones((2, 3))
    ),
    "MultiHeadAttention in_features": lambda nnx: nnx.MultiHeadAttention(
        2, 4, qkv_features=4, decode=False, rngs=_rngs(nnx)
    )(jnp.ones((1, 2, 3))),
    "Dropout without rngs": lambda nnx: nnx.Dropout(0.5)(jnp.ones(3)),
    "Variable with a Ref": lambda nnx: (
        nnx.Param(nnx.Param(jnp.ones(2), ref=True)[...])
        and nnx.Param(__import__("jax").new_ref(jnp.ones(2)))
    ),
    "set_metadata with both": lambda nnx: nnx.Param(jnp.ones(2)).set_metadata(
        {"a": 1}, b=2
    ),
    "Param attribute": lambda nnx: setattr(nnx.Param(jnp.ones(2)), "foo", 1),
}


def _raised(nnx, case):
    with pytest.raises(Exception) as info:
        CASES[case](nnx)
    return info.value


def _first_sentence(message: str) -> str:
    first = " ".join(message.split())
    for end in (". ", ".\n"):
        if end in first:
            first = first[: first.index(end) + 1]
    return first


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_error_class_and_first_sentence_as_flax(case):
    theirs, ours = _raised(fnnx, case), _raised(lnnx, case)
    their_type = type(theirs)
    if their_type.__module__ == "builtins" and hasattr(builtins, their_type.__name__):
        assert isinstance(ours, their_type), (type(ours), their_type)
    else:  # a flax.errors class: lens's of the same name
        assert type(ours).__name__ == their_type.__name__, (type(ours), their_type)
    # flax's first sentence, less its docs link; then lens's own guidance
    expected = _first_sentence(str(theirs).split(" (https://")[0])
    assert " ".join(str(ours).split()).startswith(expected.rstrip(".")), (
        str(ours),
        expected,
    )


def test_eager_sharding_without_a_mesh_starts_with_flaxs_two_sentences():
    import jax.numpy as jnp
    from flax import nnx as fnnx
    from jax.sharding import PartitionSpec as P

    from lens import nnx

    messages = []
    for lib in (fnnx, nnx):
        with lib.use_eager_sharding(True):
            with pytest.raises(ValueError) as info:
                lib.Param(jnp.ones((2, 4)), sharding=P("tp", "fsdp"))
        messages.append(str(info.value))
    flax_message, lens_message = messages
    assert lens_message.startswith(flax_message)
    assert "jax.set_mesh" in lens_message
