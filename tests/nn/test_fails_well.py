"""Where Flax accepts a program that cannot be right, lens says so.

Two ``@compact`` methods, impossible layer hyperparameters and variables that no
module reads: Flax accepts all three (and fails later, or never). lens raises
where no valid program depends on the behaviour and warns where one might.
"""

import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors, nn

KEY = jax.random.key(0)
X = jnp.ones((1, 3))

# ------------------------------------------------------------ two @compact methods


def test_two_compact_methods_are_accepted_as_flax_accepts_them():
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            b = self.param("b", nn.initializers.zeros_init(), (1, 2))
            return self.encode(x) + b

        @nn.compact
        def encode(self, x):
            return nn.Dense(2)(x)

    v = M().init(KEY, X)
    assert set(v["params"]) == {"b", "Dense_0"}
    y = M().apply(v, X, method="encode")  # the same Dense_0, from either entry
    np.testing.assert_allclose(M().apply(v, X), y, rtol=1e-6)


def test_two_compact_methods_sharing_an_auto_name_fail_clearly():
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(x)

        @nn.compact
        def encode(self, x):
            return nn.Dense(2)(x)

        def both(self, x):
            return self(x) + self.encode(x)

    with pytest.raises(errors.MultipleMethodsCompactError) as info:
        M().init(KEY, X, method="both")
    message = str(info.value)
    assert message.startswith("Only one method per class can be @compact")
    assert "M.encode makes the submodule 'Dense_0' that M.__call__ made" in message
    assert "name=" in message


def test_an_inherited_compact_method_counts():
    class Base(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(x)

    class Sub(Base):
        @nn.compact
        def other(self, x):
            return nn.Dense(2)(x)

        def both(self, x):
            return self(x) + self.other(x)

    with pytest.raises(errors.MultipleMethodsCompactError):
        Sub().init(KEY, X, method="both")


def test_overriding_the_compact_method_is_fine():
    class Base(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(x)

    class Sub(Base):
        @nn.compact
        def __call__(self, x):
            return super().__call__(x) * 2

    v = Sub().init(KEY, X)
    assert Sub().apply(v, X).shape == (1, 2)


# ----------------------------------------------------------- impossible values

BAD = [
    (lambda: nn.Dropout(rate=1.5), "Dropout", "rate"),
    (lambda: nn.Dropout(rate=-0.1), "Dropout", "rate"),
    (lambda: nn.Dense(features=-1), "Dense", "features"),
    (lambda: nn.Dense(features=0), "Dense", "features"),
    (lambda: nn.Dense(features=2.5), "Dense", "features"),
    (lambda: nn.DenseGeneral(features=(2, -1)), "DenseGeneral", "features"),
    (lambda: nn.Einsum((3, 0), "ab,bc->ac"), "Einsum", "shape"),
    (lambda: nn.Embed(num_embeddings=-1, features=4), "Embed", "num_embeddings"),
    (lambda: nn.Embed(num_embeddings=4, features=0), "Embed", "features"),
    (lambda: nn.Conv(features=-1, kernel_size=(3, 3)), "Conv", "features"),
    (lambda: nn.Conv(features=4, kernel_size=(0, 3)), "Conv", "kernel_size"),
    (lambda: nn.Conv(features=4, kernel_size=3, strides=0), "Conv", "strides"),
    (
        lambda: nn.ConvTranspose(features=4, kernel_size=(-1,)),
        "ConvTranspose",
        "kernel_size",
    ),
    (
        lambda: nn.MultiHeadDotProductAttention(num_heads=0),
        "MultiHeadDotProductAttention",
        "num_heads",
    ),
    (
        lambda: nn.MultiHeadDotProductAttention(num_heads=2, dropout_rate=2.0),
        "MultiHeadDotProductAttention",
        "dropout_rate",
    ),
    (lambda: nn.LSTMCell(features=-1), "LSTMCell", "features"),
    (lambda: nn.GRUCell(features=0), "GRUCell", "features"),
]


@pytest.mark.parametrize("make,layer,field", BAD, ids=[f"{b[1]}.{b[2]}" for b in BAD])
def test_impossible_hyperparameters_fail_at_construction(make, layer, field):
    with pytest.raises(errors.InvalidHyperparameterError) as info:
        make()
    err = info.value
    assert isinstance(err, ValueError)
    assert str(err).startswith(f"{layer}: {field}=")
    assert "e.g." in str(err)  # a value that works
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_a_subclass_inherits_the_rules():
    class MyDense(nn.Dense):
        pass

    with pytest.raises(errors.InvalidHyperparameterError, match="MyDense: features"):
        MyDense(features=0)


GOOD = [
    lambda: nn.Dropout(rate=0.0),
    lambda: nn.Dropout(rate=1.0),
    lambda: nn.Dropout(rate=jnp.float32(0.5)),
    lambda: nn.Dense(features=1),
    lambda: nn.DenseGeneral(features=(2, 3)),
    lambda: nn.Conv(features=4, kernel_size=3, strides=None),
    lambda: nn.Embed(num_embeddings=1, features=1),
    lambda: nn.MultiHeadDotProductAttention(num_heads=1, qkv_features=None),
]


@pytest.mark.parametrize("make", GOOD)
def test_edge_values_that_describe_a_layer_still_work(make):
    make()


def test_embed_with_one_row_gives_it_to_every_id_as_flax():
    flax_nn = pytest.importorskip("flax.linen")
    ids = jnp.array([0, 3, 10])
    v = nn.Embed(1, 3).init(KEY, ids)
    out = nn.Embed(1, 3).apply(v, ids)
    assert out.shape == (3, 3) and bool(jnp.all(out == v["params"]["embedding"][0]))
    np.testing.assert_array_equal(out, flax_nn.Embed(1, 3).apply(v, ids))


def test_dropout_rate_one_and_zero_still_run():
    for rate in (0.0, 1.0):
        y = nn.Dropout(rate, deterministic=False).apply({}, X, rngs={"dropout": KEY})
        assert y.shape == X.shape


# ------------------------------------------------------- variables nobody reads


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(4)(x)
        self.sow("intermediates", "h", h)
        self.sow("stats", "n", 1, reduce_fn=lambda a, b: a + b, init_fn=lambda: 0)
        return nn.Dense(2)(h)


def _no_warning(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.UnusedVariablesWarning)
        return fn()


def test_typod_param_names_warn_and_name_the_paths():
    v = MLP().init(KEY, X)
    params = jax.tree.map(lambda a: a, v["params"])
    params["Dense_0"] = {**params["Dense_0"], "kernal": params["Dense_0"]["kernel"]}
    params["Dense_1"] = {**params["Dense_1"], "bais": params["Dense_1"]["bias"]}
    with pytest.warns(errors.UnusedVariablesWarning) as record:
        MLP().apply({"params": params}, X)
    assert len(record) == 1
    w = record[0]
    assert w.filename == __file__  # points at the user's apply call
    assert w.message.paths == ("params/Dense_0/kernal", "params/Dense_1/bais")


def test_unread_submodules_do_not_warn():
    """A submodule called only sometimes is a valid program (so is a renamed
    module's subtree: that limit is the price of no false alarms)."""

    class Heads(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            y = nn.Dense(2)(x)
            if train:
                y = y + nn.Dense(2, name="aux")(x)
            return y

    v = Heads().init(KEY, X, True)
    _no_warning(lambda: Heads().apply(v, X, False))


def test_compact_name_scope_method_does_not_warn():
    class Foo(nn.Module):
        @nn.compact_name_scope
        def up(self, x):
            return nn.Dense(3)(x)

        @nn.compact
        def __call__(self, x):
            return self.up(x) + nn.Dense(3)(x)

    v = Foo().init(KEY, X)
    _no_warning(lambda: Foo().apply(v, X, method="up"))


def test_init_variables_passed_back_whole_do_not_warn():
    """intermediates/stats that sow writes only when mutable are not 'unused'."""
    v = MLP().init(KEY, X)
    _, inter = MLP().apply(v, X, mutable=["intermediates"])
    v = {**v, **inter}
    assert set(v) == {"params", "intermediates", "stats"}
    _no_warning(lambda: MLP().apply(v, X))
    _no_warning(lambda: MLP().apply(v, X, mutable=["stats"]))
    _no_warning(lambda: jax.jit(MLP().apply)(v, X))


def test_method_that_uses_part_of_the_model_does_not_warn():
    class AE(nn.Module):
        def setup(self):
            self.enc = nn.Dense(2)
            self.dec = nn.Dense(3)

        def encode(self, x):
            return self.enc(x)

        def __call__(self, x):
            return self.dec(self.enc(x))

    v = AE().init(KEY, X)
    _no_warning(lambda: AE().apply(v, X, method=AE.encode))


def test_lifted_transforms_do_not_warn():
    class Lifted(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.remat(nn.Dense)(3)(x)
            x = nn.jit(nn.Dense)(3)(x)
            v = nn.vmap(
                nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True}
            )(3)
            return v(jnp.stack([x, x]))[0]

    v = Lifted().init(KEY, X)
    _no_warning(lambda: Lifted().apply(v, X))


def test_the_warning_pickles():
    w = errors.UnusedVariablesWarning(["params/a"], 3)
    again = pickle.loads(pickle.dumps(w))
    assert str(again) == str(w) and again.paths == ("params/a",)


NORM_BAD = [
    (lambda: nn.BatchNorm(momentum=1.5), "BatchNorm", "momentum"),
    (lambda: nn.BatchNorm(epsilon=-1e-5), "BatchNorm", "epsilon"),
    (lambda: nn.LayerNorm(epsilon=-1.0), "LayerNorm", "epsilon"),
    (lambda: nn.RMSNorm(epsilon=float("nan")), "RMSNorm", "epsilon"),
]


@pytest.mark.parametrize(
    "make,layer,field", NORM_BAD, ids=[f"{b[1]}.{b[2]}" for b in NORM_BAD]
)
def test_impossible_normalization_hyperparameters(make, layer, field):
    with pytest.raises(errors.InvalidHyperparameterError, match=f"^{layer}: {field}="):
        make()


def test_normalization_edge_values_still_work():
    nn.BatchNorm(momentum=0.0, epsilon=0.0)
    nn.GroupNorm(num_groups=None, group_size=1)
    nn.LayerNorm(epsilon=0.0)


# ------------------------------------------------------- an axis past the end


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.LayerNorm(reduction_axes=5),
        lambda: nn.RMSNorm(reduction_axes=5),
        lambda: nn.BatchNorm(use_running_average=False, axis=5),
        lambda: nn.GroupNorm(num_groups=1, reduction_axes=5),
    ],
    ids=["LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm"],
)
def test_a_norm_axis_past_the_end_is_an_axis_error_not_another_axis(make):
    # Flax fails inside its layer (an IndexError; GroupNorm a ValueError); lens
    # used to wrap the axis around (5 % 2 == 1) and normalise the wrong one
    with pytest.raises(np.exceptions.AxisError, match="axis 5 is out of bounds"):
        make().init(KEY, jnp.ones((2, 3)))


# ------------------------------------------- transform arguments that cannot be


def test_map_variables_whose_function_returns_no_dict_is_a_type_error():
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.map_variables(nn.Dense, "params", trans_in_fn=lambda v: 3)
            return dense(2)(x)

    with pytest.raises(TypeError, match="map_in_fn returned a value of type int"):
        M().init(KEY, X)
