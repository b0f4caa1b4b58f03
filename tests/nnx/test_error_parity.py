"""lens.nnx raises what flax.nnx raises for the same mistake (flax is the oracle).

Each case is a mistake a user makes with an nnx layer (the wrong feature count, a
Dropout without rngs, ...), run on both libraries: lens's error is of flax's class
(or a subclass of it, or a lens error of the same name), and its message starts
with flax's first sentence (whitespace aside); lens may add where and how to fix.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx as lnnx
from parity.differential import error_differs

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
    "BatchNorm use_running_average None": lambda nnx: nnx.BatchNorm(
        3, use_running_average=None, rngs=_rngs(nnx)
    )(jnp.ones((2, 3))),
    "GroupNorm neither groups nor size": lambda nnx: nnx.GroupNorm(
        6, num_groups=None, group_size=None, rngs=_rngs(nnx)
    ),
    "GroupNorm groups do not divide": lambda nnx: nnx.GroupNorm(
        6, num_groups=4, rngs=_rngs(nnx)
    ),
    "GroupNorm zero groups": lambda nnx: nnx.GroupNorm(
        6, num_groups=0, rngs=_rngs(nnx)
    ),
    "GroupNorm group_size does not divide": lambda nnx: nnx.GroupNorm(
        6, num_groups=None, group_size=4, rngs=_rngs(nnx)
    ),
    "Rngs item missing": lambda nnx: nnx.Rngs(params=0)["dropout"],
    "Rngs attribute missing": lambda nnx: nnx.Rngs(params=0).dropout,
    "update a non-node": lambda nnx: nnx.update(3, {}),
    "Linear scalar input": lambda nnx: nnx.Linear(3, 4, rngs=_rngs(nnx))(
        jnp.float32(1)
    ),
    # flax's message is JAX's about the negative shape it builds: the class only
    "Linear negative in_features": (
        lambda nnx: nnx.Linear(-1, 4, rngs=_rngs(nnx)),
        "",
    ),
    "jit static_argnums past the parameters": lambda nnx: nnx.jit(
        lambda x: x, static_argnums=3
    )(jnp.ones(2)),
    "jit donate_argnames it lacks": lambda nnx: nnx.jit(
        lambda x: x, donate_argnames="nope"
    )(jnp.ones(2)),
    "jit returns a str": (
        lambda nnx: nnx.jit(_returns_a_str)(jnp.ones(2)),
        "returned a value of type <class 'str'>",
    ),
    "vmap inconsistent sizes": (
        lambda nnx: nnx.vmap(lambda x, y: x + y)(jnp.ones((2, 3)), jnp.ones((3, 3))),
        "to be mapped:",
    ),
    "scan length disagrees": lambda nnx: nnx.scan(
        lambda c, x: (c, x), in_axes=(nnx.Carry, 0), length=5
    )(jnp.ones(()), jnp.ones((3,))),
    "scan lengths differ": lambda nnx: nnx.scan(
        lambda c, x, y: (c, x), in_axes=(nnx.Carry, 0, 0)
    )(jnp.ones(()), jnp.ones((3,)), jnp.ones((4,))),
    "cond branches differ": (
        lambda nnx: nnx.cond(True, _ones_2, _ones_3),
        "but they differ.",
    ),
    "Optimizer without wrt": lambda nnx: nnx.Optimizer(
        nnx.Linear(2, 3, rngs=_rngs(nnx)), __import__("optax").sgd(0.1)
    ),
    "List index past the end": lambda nnx: nnx.List([1])[3],
    "merge a state with extra values": lambda nnx: _merge_with_extra(nnx),
    "switch without branches": lambda nnx: nnx.switch(0, [], 1.0),
    "vmap with nothing to map": lambda nnx: nnx.vmap(lambda: 1, in_axes=())(),
    "cell carry without rngs": lambda nnx: nnx.LSTMCell(
        3, 4, rngs=_rngs(nnx)
    ).initialize_carry((2, 3)),
    "scan with two carries": lambda nnx: nnx.scan(
        lambda c, d, x: (c, x), in_axes=(nnx.Carry, nnx.Carry, 0)
    )(1.0, 1.0, jnp.ones(3)),
    "remat static_argnums past the arguments": lambda nnx: nnx.remat(
        lambda x: x, static_argnums=5
    )(jnp.ones(2)),
    # an axis past the end: flax's layers fail inside JAX (IndexError, or
    # dot_general's TypeError); lens's said nothing and wrapped around
    "BatchNorm axis past the end": (
        lambda nnx: nnx.BatchNorm(3, axis=5, rngs=_rngs(nnx))(jnp.ones((2, 3))),
        "",
    ),
    "LinearGeneral axis past the end": (
        lambda nnx: nnx.LinearGeneral(3, 4, axis=5, rngs=_rngs(nnx))(jnp.ones((2, 3))),
        "",
    ),
    # found by `python -m parity.differential --api nnx --mistakes`
    "MultiHeadAttention without decode": lambda nnx: nnx.MultiHeadAttention(
        2, 4, rngs=_rngs(nnx)
    )(jnp.ones((1, 3, 4))),
    # a size of 0: flax divides by it in the initializer (ZeroDivisionError)
    "Linear in_features 0": (lambda nnx: nnx.Linear(0, 4, rngs=_rngs(nnx)), ""),
    "Linear out_features 0": (lambda nnx: nnx.Linear(3, 0, rngs=_rngs(nnx)), ""),
    "Conv kernel_size 0": (
        lambda nnx: nnx.Conv(3, 4, kernel_size=0, rngs=_rngs(nnx)),
        "",
    ),
    "LSTMCell hidden_features 0": (
        lambda nnx: nnx.LSTMCell(3, 0, rngs=_rngs(nnx)),
        "",
    ),
    # a float or None in_features fails in the kernel's shape, as in flax
    "Conv in_features 2.5": (
        lambda nnx: nnx.Conv(2.5, 4, kernel_size=(3,), rngs=_rngs(nnx)),
        "",
    ),
    "Conv in_features None": lambda nnx: nnx.Conv(
        None, 4, kernel_size=(3,), rngs=_rngs(nnx)
    ),
    "LinearGeneral axis and in_features": lambda nnx: nnx.LinearGeneral(
        (2, 3), 4, axis=-1, rngs=_rngs(nnx)
    ),
    "Linear use_bias None": (
        lambda nnx: nnx.Linear(3, 4, use_bias=None, rngs=_rngs(nnx))(jnp.ones((2, 3))),
        "",
    ),
    "LayerNorm None": lambda nnx: nnx.LayerNorm(3, rngs=_rngs(nnx))(None),
    "RMSNorm None": lambda nnx: nnx.RMSNorm(3, rngs=_rngs(nnx))(None),
    "GroupNorm None": lambda nnx: nnx.GroupNorm(4, num_groups=2, rngs=_rngs(nnx))(None),
    "GroupNorm scalar": lambda nnx: nnx.GroupNorm(4, num_groups=2, rngs=_rngs(nnx))(
        jnp.ones(())
    ),
}


def _merge_with_extra(nnx):
    graphdef, state = nnx.split(nnx.Linear(3, 4, rngs=_rngs(nnx)))
    return nnx.merge(graphdef, nnx.State({**state, "extra": nnx.Param(jnp.ones(1))}))


def _returns_a_str(x):
    return "a"


def _ones_2():
    return jnp.ones(2)


def _ones_3():
    return jnp.ones(3)


def _raised(nnx, case):
    fn = CASES[case][0] if isinstance(CASES[case], tuple) else CASES[case]
    with pytest.raises(Exception) as info:
        fn(nnx)
    return info.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_error_class_and_first_sentence_as_flax(case):
    # flax's first sentence, less its docs link; then lens's own guidance (a
    # case may compare less of it: up to a marker, where flax's names its own
    # internals, such as the path of an output in its pure function)
    upto = CASES[case][1] if isinstance(CASES[case], tuple) else None
    theirs, ours = _raised(fnnx, case), _raised(lnnx, case)
    assert not error_differs(theirs, ours, upto=upto)


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


def test_jit_and_cond_errors_name_the_users_functions_not_lens():
    def step(x):
        return x, {"name": "str"}

    with pytest.raises(
        TypeError,
        match=r"^function step at .*test_error_parity\.py:\d+ traced for jit returned "
        r"a value of type <class 'str'> at output component \[1\]\['name'\], which",
    ):
        lnnx.jit(step)(jnp.ones(2))
    with pytest.raises(TypeError) as info:
        lnnx.cond(True, _ones_2, _ones_3)
    assert "true_fun is _ones_2 at" in str(info.value)
    assert "false_fun is _ones_3 at" in str(info.value)
    assert "lens/nnx" not in str(info.value)


@pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])
def test_an_empty_rngs_is_valid_and_says_which_stream_is_missing(nnx):
    for rngs in (nnx.Rngs(), nnx.Rngs(None)):
        assert list(rngs.items()) == []
        with pytest.raises(AttributeError, match="No RngStream named 'params'"):
            rngs.params()


def test_layer_norms_take_a_nested_list_as_flax_does():
    x = [[1.0, 2.0, 4.0], [0.0, -1.0, 3.0]]
    for name in ("LayerNorm", "RMSNorm"):
        ours = getattr(lnnx, name)(3, rngs=lnnx.Rngs(0))(x)
        theirs = getattr(fnnx, name)(3, rngs=fnnx.Rngs(0))(x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_a_zero_size_is_flaxs_zero_division_and_lenss_hyperparameter_error():
    import pickle

    from lens.errors import InvalidHyperparameterError, ZeroSizeHyperparameterError

    with pytest.raises(ZeroDivisionError) as info:
        lnnx.Linear(3, 0, rngs=lnnx.Rngs(0))
    err = info.value
    assert isinstance(err, InvalidHyperparameterError)
    assert type(err) is ZeroSizeHyperparameterError
    assert str(err).startswith("Linear: out_features=0 is not a positive integer.")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ZeroSizeHyperparameterError and str(again) == str(err)
    # a negative size is not a division by zero
    with pytest.raises(InvalidHyperparameterError) as info:
        lnnx.Linear(3, -2, rngs=lnnx.Rngs(0))
    assert not isinstance(info.value, ZeroDivisionError)


def test_a_stream_name_that_is_no_string_falls_back_to_default_as_in_flax():
    import jax

    for name in (0, None, ("a",)):
        ours, theirs = lnnx.Rngs(0)[name](), fnnx.Rngs(0)[name]()
        np.testing.assert_array_equal(
            jax.random.key_data(ours), jax.random.key_data(theirs)
        )
    drop = lnnx.Dropout(0.5, rng_collection=0, rngs=lnnx.Rngs(0))
    assert drop(jnp.ones((4, 4))).shape == (4, 4)
    with pytest.raises(KeyError, match="No RngStream named '0' found in Rngs"):
        lnnx.Rngs(params=0)[0]  # flax's words: the name in quotes, whatever it is


def test_mistake_fuzzer_finds_no_unexplained_difference_in_a_sample(capsys):
    import random

    from parity.differential import run_mistakes

    found = run_mistakes(random.Random(7), 40, "nnx", optional=True)
    assert found == 0, capsys.readouterr().out


def test_transform_and_module_mistakes_raise_as_in_flax(capsys):
    # vmap/scan axes, jit/grad/cond misuse, filters, merge/update, Rngs, ...;
    # the differences lens keeps on purpose are listed with their reasons
    from parity.differential import run_api_mistakes

    assert run_api_mistakes("nnx") == 0, capsys.readouterr().out


def test_a_loop_carry_of_another_structure_is_jaxs_typeerror_and_flaxs_valueerror():
    from lens import errors

    x = jnp.ones((5, 3))
    for lib in (lnnx, fnnx):  # flax: TypeError for while/fori, ValueError for scan
        with pytest.raises(TypeError):
            lib.while_loop(lambda c: False, lambda c: (c, c), x)
    with pytest.raises(errors.LoopCarryStructureError) as info:
        lnnx.fori_loop(0, 2, lambda i, c: (c, c), x)
    assert isinstance(info.value, TypeError | errors.GraphStructureError)
    scan = lnnx.scan(
        lambda c, x: ((c, c), x),
        in_axes=(lnnx.Carry, 0),
        out_axes=(lnnx.Carry, 0),
    )
    with pytest.raises(ValueError, match="^Carry references must be the same"):
        scan(jnp.ones(()), x)


def test_optimizer_gradients_of_another_shape_name_the_path_as_a_typeerror():
    import optax

    from lens import errors

    model = lnnx.Linear(3, 4, rngs=lnnx.Rngs(0))
    opt = lnnx.Optimizer(model, optax.sgd(0.1), wrt=lnnx.Param)
    grads = lnnx.state(lnnx.Linear(3, 5, rngs=lnnx.Rngs(0)), lnnx.Param)
    before = np.asarray(model.kernel.value)
    with pytest.raises(errors.GradientShapeError, match=r"\['bias'\] has shape"):
        opt.update(model, grads)
    assert issubclass(errors.GradientShapeError, TypeError | ValueError)
    np.testing.assert_array_equal(model.kernel.value, before)  # nothing written


def test_split_rngs_of_zero_splits_gives_empty_keys_as_flax():
    got = lnnx.split_rngs(splits=0)(lambda r: r.params.key.shape)(lnnx.Rngs(0))
    assert (
        got
        == fnnx.split_rngs(splits=0)(lambda r: r.params.key.shape)(fnnx.Rngs(0))
        == (0,)
    )
    with pytest.raises(ValueError, match="splits must be an int >= 0, got -1"):
        lnnx.split_rngs(splits=-1)(lambda r: r)(lnnx.Rngs(0))
