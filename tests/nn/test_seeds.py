"""Every example of the lifecycle and lifting seeds, with lens names.

Hidden assertions of the lifecycle seed's ``testcode`` blocks are kept; the lifting
seed's printed shapes are checked.
"""

from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import random

from lens import errors, nn, struct
from tests.helpers import shapes

# ------------------------------------------------------------ lifecycle seed


class MLP(nn.Module):
    # 1. Attribute annotations
    hidden_size: int
    out_size: int

    # 2. The ``setup`` method
    def setup(self):
        self.hidden = nn.Dense(self.hidden_size)
        self.out = nn.Dense(self.out_size)

    # 3. User methods
    def __call__(self, x):
        a = self.hidden(x)
        h = nn.relu(a)
        return self.out(h)


def test_construction_and_init_is_apply():
    mlp = MLP(hidden_size=5, out_size=3)
    x = jax.numpy.ones((1, 2))
    variables = mlp.init(random.key(0), x)
    y = mlp.apply(variables, x)
    assert y.shape == (1, 3)
    # equivalent to: variables = mlp.init(random.key(0), x)
    _, variables2 = mlp.apply({}, x, rngs={"params": random.key(0)}, mutable=True)
    assert jax.tree_util.tree_all(jax.tree.map(jnp.array_equal, variables, variables2))
    assert mlp.hidden_size == 5 and mlp.out_size == 3


class CompactMLP(nn.Module):
    hidden_size: int
    out_size: int

    @nn.compact
    def __call__(self, x):
        a = nn.Dense(self.hidden_size)(x)
        h = nn.relu(a)
        return nn.Dense(self.out_size)(h)


class CompactScaledMLP(nn.Module):
    hidden_size: int
    out_size: int

    @nn.compact
    def __call__(self, x):
        scale = self.param("scale", nn.initializers.ones_init(), x.shape[-1:])
        x *= scale[None]
        a = nn.Dense(self.hidden_size)(x)
        h = nn.relu(a)
        return nn.Dense(self.out_size)(h)


def test_compact_modules():
    v = CompactMLP(4, 5).init(random.key(0), jnp.ones((3, 2)))
    assert shapes(v["params"]) == {
        "Dense_0": {"bias": (4,), "kernel": (2, 4)},
        "Dense_1": {"bias": (5,), "kernel": (4, 5)},
    }
    mdl = CompactScaledMLP(hidden_size=4, out_size=5)
    x = jax.numpy.ones((3, 2))
    vars = mdl.init(random.key(0), x)
    assert vars["params"]["scale"].shape == (2,)


class WrongModule(nn.Module):
    @nn.compact
    def __call__(self, x, mode):
        if mode == "encode":
            return nn.Dense(features=8)(x)
        elif mode == "decode":
            return nn.Dense(features=4)(x)


class CorrectModule(nn.Module):
    @nn.compact
    def __call__(self, x, mode):
        encoder = nn.Dense(8)
        decoder = nn.Dense(4)
        if mode == "encode":
            return encoder(x)
        elif mode == "decode":
            return decoder(x)


def test_compact_control_flow():
    def init_fn(mdl):
        x = jax.numpy.ones((3, 2))
        z = mdl(x, "encode")
        return mdl(z, "decode")

    # WrongModule: encoder and decoder both become Dense_0, with clashing shapes.
    with pytest.raises(errors.ScopeParamShapeError):
        nn.init(init_fn, WrongModule())(random.key(0))
    mdl = CorrectModule()
    vars = nn.init(init_fn, mdl)(random.key(0))
    assert vars["params"]["Dense_0"]["kernel"].shape == (2, 8)
    assert vars["params"]["Dense_1"]["kernel"].shape == (8, 4)


class TopLevelAccess(nn.Module):
    def setup(self):
        self.foo = nn.Dense(2)


def test_setup_not_called_on_unbound_top_level():
    mdl = TopLevelAccess()
    assert not hasattr(mdl, "foo")  # foo is not defined because setup is not called
    bound = mdl.bind({"params": {}})
    assert isinstance(bound.foo, nn.Dense)  # lazily, on first access


class Partial(struct.PyTreeNode):
    fn: Callable = struct.field(pytree_node=False)
    args: Iterable[Any]

    def __call__(self, *args, **kwargs):
        return self.fn(*(tuple(self.args) + args), **kwargs)


class ClosureFoo(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(x.shape[-1])
        fn = lambda x: dense(x) + 1  # noqa: E731
        vmap_inner = nn.vmap(
            ClosureFoo.inner,
            in_axes=0,
            variable_axes={"params": 0},
            split_rngs={"params": True},
        )
        return vmap_inner(self, x, fn)

    def inner(self, x, fn):
        for _ in range(3):
            x = fn(x)
        return x


class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(x.shape[-1])
        fn = lambda mdl, x: mdl(x) + 1  # noqa: E731
        vmap_inner = nn.vmap(
            Foo.inner,
            in_axes=0,
            variable_axes={"params": 0},
            split_rngs={"params": True},
        )
        return vmap_inner(self, x, Partial(fn, [dense]))

    def inner(self, x, fn):
        for _ in range(3):
            x = fn(x)
        return x


def test_closure_over_a_module_fails_and_partial_works():
    x = jax.numpy.ones((3, 2))
    # The closure hides `dense` from the transform; lens says so and points at
    # the Partial trick.
    with pytest.raises(errors.JaxTransformError, match="Partial"):
        ClosureFoo().init(random.key(0), x)
    mdl = Foo()
    vars = mdl.init(random.key(0), x)
    assert vars["params"]["Dense_0"]["kernel"].shape == (3, 2, 2)


class Encoder(nn.Module):
    features: int = 4

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)


class Decoder(nn.Module):
    features: int = 2

    @nn.compact
    def __call__(self, z):
        return nn.Dense(self.features)(z)


class AutoEncoder(nn.Module):
    """The seed's 'Future work' example, with lens's declare()."""

    def declare(self):
        self.encoder = Encoder()
        self.decoder = Decoder()

    def __call__(self, x):
        return self.decoder(self.encoder(x))


def test_future_work_unbound_submodules_via_declare():
    ae = AutoEncoder()
    variables = ae.init(random.key(0), jnp.ones((1, 2)))
    assert shapes(variables["params"]) == {
        "decoder": {"Dense_0": {"bias": (2,), "kernel": (4, 2)}},
        "encoder": {"Dense_0": {"bias": (4,), "kernel": (2, 4)}},
    }
    decoder_vars = {"params": variables["params"]["decoder"]}
    z = jnp.ones((1, 4))
    y = ae.decoder.apply(decoder_vars, z)
    assert jnp.allclose(y, ae.apply(variables, z, method=lambda m, z: m.decoder(z)))
    assert jnp.allclose(y, ae.apply(variables, z, method=ae.decoder.__call__))
    assert ae.decoder.scope is None  # inspection does not bind


# --------------------------------------------------------------- lifting seed


class SeedMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        h = nn.Dense(4, name="hidden")(xs)
        h = nn.relu(h)
        return nn.Dense(1, name="out")(h)


class NaiveVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        mlp = SeedMLP()
        return jax.vmap(lambda mlp, x: mlp(x))(mlp, xs)  # fails


class ManualVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        mlp = SeedMLP(parent=None)
        init_fn = lambda rng, xs: jax.vmap(mlp.init, in_axes=0)(
            random.split(rng, xs.shape[0]), xs
        )["params"]  # noqa: E731
        apply_fn = jax.vmap(mlp.apply, in_axes=0)
        mlp_params = self.param("mlp", init_fn, xs)
        return apply_fn({"params": mlp_params}, xs)


class LinenVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        VmapMLP = nn.vmap(
            SeedMLP, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=0
        )
        return VmapMLP(name="mlp")(xs)


class StatefulMLP(nn.Module):
    @nn.compact
    def __call__(self, x, *, train):
        h = nn.Dense(4, name="hidden")(x)
        h = nn.BatchNorm(axis_name="batch")(h, use_running_average=not train)
        h = nn.relu(h)
        return nn.Dense(1, name="out")(h)


class LinenStatefulVmapMLP(nn.Module):
    axis_name: str | None = None

    @nn.compact
    def __call__(self, xs, *, train):
        VmapMLP = nn.vmap(
            StatefulMLP,
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True},
            in_axes=0,
            axis_name=self.axis_name,
        )
        return VmapMLP(name="mlp")(xs, train=train)


SEED_SHAPES = {
    "mlp": {
        "hidden": {"bias": (3, 4), "kernel": (3, 4, 4)},
        "out": {"bias": (3, 1), "kernel": (3, 4, 1)},
    }
}


def test_naive_vmap_fails_with_a_clear_error():
    with pytest.raises(TypeError):
        NaiveVmapMLP().init(random.key(0), jnp.ones((3, 4)))


def test_manual_vmap_mlp_shapes():
    xs = jnp.ones((3, 4))
    variables = ManualVmapMLP().init(random.key(0), xs)
    assert shapes(variables["params"]) == SEED_SHAPES


def test_linen_vmap_mlp_shapes_and_independent_members():
    xs = jnp.ones((3, 4))
    variables = LinenVmapMLP().init(random.key(0), xs)
    assert shapes(variables["params"]) == SEED_SHAPES
    k = variables["params"]["mlp"]["hidden"]["kernel"]
    assert not jnp.allclose(k[0], k[1])

    # the seed's second printout uses 2 input features and auto-named layers
    class Unnamed(nn.Module):
        @nn.compact
        def __call__(self, xs):
            h = nn.Dense(4)(xs)  # constructed first: Dense_0 (as in Flax)
            return nn.Dense(1)(nn.relu(h))

    class V(nn.Module):
        @nn.compact
        def __call__(self, xs):
            return nn.vmap(
                Unnamed,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes=0,
            )(name="mlp")(xs)

    assert shapes(V().init(random.key(0), jnp.ones((3, 2)))["params"]) == {
        "mlp": {
            "Dense_0": {"bias": (3, 4), "kernel": (3, 2, 4)},
            "Dense_1": {"bias": (3, 1), "kernel": (3, 4, 1)},
        }
    }


def test_stateful_vmap_mlp_with_train_keyword():
    xs = jnp.ones((3, 4))
    variables = LinenStatefulVmapMLP().init(random.key(0), xs, train=False)
    assert shapes(variables) == {
        "batch_stats": {"mlp": {"BatchNorm_0": {"mean": (3, 4), "var": (3, 4)}}},
        "params": {
            "mlp": {
                "BatchNorm_0": {"bias": (3, 4), "scale": (3, 4)},
                "hidden": {"bias": (3, 4), "kernel": (3, 4, 4)},
                "out": {"bias": (3, 1), "kernel": (3, 4, 1)},
            }
        },
    }
    # train=True as a keyword reaches the module through vmap (init works without
    # an axis; apply needs the named axis for the cross-member mean).
    LinenStatefulVmapMLP().init(random.key(0), xs, train=True)
    xs = jax.random.normal(random.key(1), (3, 5, 4))
    y, upd = LinenStatefulVmapMLP(axis_name="batch").apply(
        variables, xs, train=True, mutable=["batch_stats"]
    )
    assert y.shape == (3, 5, 1)
    assert not jnp.allclose(upd["batch_stats"]["mlp"]["BatchNorm_0"]["mean"], 0.0)
