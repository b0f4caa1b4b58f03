"""lens.nnx.bridge: Linen modules inside nnx models (ToNNX) and nnx modules inside
Linen models (ToLinen), against flax's bridge: same variables, values, outputs."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lens import nn as lnn
from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
fnn = pytest.importorskip("flax.linen")
X = jax.random.normal(jax.random.key(1), (2, 3))


def _arrays(tree):
    out = []
    for x in jax.tree.leaves(tree):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        out.append(np.asarray(x))
    return out


def _same(a, b, **tol):
    la, lb = _arrays(a), _arrays(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        np.testing.assert_allclose(x, y, **tol)


def _to_nnx(nnx, nn):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, train=False):
            x = nn.Dense(4)(x)
            return nn.BatchNorm(use_running_average=not train)(x)

    model = nnx.bridge.ToNNX(Block(), rngs=nnx.Rngs(0)).lazy_init(X)
    y = model(X)
    y_train, _ = model(X, train=True, mutable=["batch_stats"])
    return model, y, y_train


def test_to_nnx_matches_flax():
    (lm, ly, lyt), (fm, fy, fyt) = _to_nnx(lnnx, lnn), _to_nnx(fnnx, fnn)
    assert isinstance(lm.Dense_0["kernel"], lnnx.Param)
    assert isinstance(lm.BatchNorm_0["mean"], lnnx.BatchStat)
    assert sorted(lnnx.state(lm, lnnx.Param).flat_state().paths) == sorted(
        fnnx.state(fm, fnnx.Param).flat_state().paths
    )
    _same(lnnx.state(lm), fnnx.state(fm), rtol=1e-6)  # batch stats updated alike
    _same((ly, lyt), (fy, fyt), rtol=1e-5, atol=1e-6)


def test_to_nnx_trains_as_an_nnx_module():
    model = lnnx.bridge.ToNNX(lnn.Dense(2), rngs=lnnx.Rngs(0)).lazy_init(X)
    opt = lnnx.Optimizer(model, optax.sgd(0.1), wrt=lnnx.Param)
    before = np.asarray(model.kernel.value)

    @lnnx.jit
    def step(model, opt):
        grads = lnnx.grad(lambda m: jnp.sum(m(X) ** 2))(model)
        opt.update(model, grads)

    step(model, opt)
    assert not np.allclose(before, model.kernel.value)
    emb = lnnx.bridge.ToNNX(lnn.Embed(5, 3), rngs=lnnx.Rngs(0))
    emb.lazy_init(jnp.array([1, 2]))
    assert emb.attend(jnp.ones((1, 3))).shape == (1, 5)


def _to_linen(nnx, nn):
    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nnx.bridge.ToLinen(nnx.Linear, args=(3, 4))(x)
            return nnx.bridge.to_linen(nnx.BatchNorm, 4)(x)

    model = Model()
    variables = model.init(jax.random.key(0), X)
    y, updates = model.apply(variables, X, mutable=["batch_stats"])
    return variables, y, updates


def test_to_linen_matches_flax():
    (lv, ly, lu), (fv, fy, fu) = _to_linen(lnnx, lnn), _to_linen(fnnx, fnn)
    assert jax.tree.map(jnp.shape, lv) == jax.tree.map(jnp.shape, fv)
    _same(lv, fv, rtol=1e-6)
    _same((ly, lu), (fy, fu), rtol=1e-5, atol=1e-6)


def test_to_linen_partitioned_metadata_becomes_linen_boxes():
    layer = lnnx.bridge.to_linen(
        lnnx.Linear, 3, 4,
        kernel_init=lnnx.bridge.with_partitioning(
            lnnx.initializers.lecun_normal(), ("in", "out")
        ),
    )  # fmt: skip
    with lnnx.use_eager_sharding(False):  # no mesh here: keep only the names
        variables = layer.init(jax.random.key(0), X)
    kernel = variables["params"]["kernel"]
    assert isinstance(kernel, lnn.Partitioned) and kernel.names == ("in", "out")
    assert lnn.get_partition_spec(variables)["params"][
        "kernel"
    ] == jax.sharding.PartitionSpec("in", "out")


def test_lazy_init_needs_a_module():
    with pytest.raises(ValueError, match="needs to be a method of an NNX Module"):
        lnnx.bridge.lazy_init(lambda x: x, X)


def test_functional_init_and_apply_match_flax():
    def run(nnx):
        f = nnx.bridge.functional(nnx.Linear)(3, 4)
        state = f.init(rngs=nnx.Rngs(0))
        y, (graphdef, new_state) = f.apply(state)(X)
        return y, state

    (ours, ours_state), (theirs, _) = run(lnnx), run(fnnx)
    _same(ours, theirs, rtol=1e-6)
    assert ours_state["kernel"].shape == (3, 4)
    with pytest.raises(ValueError, match="apply called before init"):
        lnnx.bridge.functional(lnnx.Linear)(3, 4).apply(ours_state)


def test_to_linen_forwards_other_methods_of_the_nnx_class():
    def run(nn, nnx):
        class Foo(nn.Module):
            def setup(self):
                self.embedding = nnx.bridge.to_linen(nnx.Embed, 2, 3)

            def __call__(self, x):
                return self.embedding(x)

            def attend(self, x):
                return self.embedding.attend(x)

        v = Foo().init(jax.random.key(0), jnp.ones((1,), jnp.int32))
        return v, Foo().apply(v, jnp.ones((1, 3)), method="attend")

    (v, ours), (_, theirs) = run(lnn, lnnx), run(fnn, fnnx)
    assert ours.shape == (1, 2) and v["params"]["embedding"]["embedding"].shape == (
        2,
        3,
    )
    _same(ours, theirs, rtol=1e-6)
    with pytest.raises(AttributeError, match="no attribute"):
        lnnx.bridge.to_linen(lnnx.Embed, 2, 3).not_a_method  # noqa: B018


def test_lazy_init_reaches_a_to_nnx_inside_vmap():
    """lazy_init marks the ToNNX modules themselves, so the copies nnx.vmap
    calls initialize too (one kernel per member)."""

    class Outer(lnnx.Module):
        def __init__(self, rngs):
            self.inner = lnnx.bridge.ToNNX(lnn.Dense(3), rngs=rngs)
            self.rngs = rngs

        def __call__(self, x):
            @lnnx.split_rngs(splits=5)
            @lnnx.vmap(in_axes=(0, None), axis_size=5)
            def f(inner, x):
                return inner(x)

            return f(self.inner, x)

    model = Outer(lnnx.Rngs(0))
    lnnx.bridge.lazy_init(model, X)
    assert model.inner.kernel.shape == (5, 3, 3) and model.inner.bias.shape == (5, 3)
    assert not model.inner._is_initializing()  # reset: later calls apply
    assert model(X).shape == (5, 2, 3)


def test_nnx_metadata_crosses_the_bridge_as_nnxmeta():
    """nnx.with_partitioning (not the bridge's) keeps the nnx metadata in an
    NNXMeta box that knows its partition spec and comes back as the Variable."""
    layer = lnnx.bridge.to_linen(
        lnnx.Linear, 3, 4,
        kernel_init=lnnx.with_partitioning(lnnx.initializers.lecun_normal(), ("in", "out")),
    )  # fmt: skip
    with lnnx.use_eager_sharding(False):
        y, variables = layer.init_with_output(jax.random.key(0), X)
    kernel = variables["params"]["kernel"]
    assert isinstance(kernel, lnnx.bridge.NNXMeta)
    assert kernel.metadata["out_sharding"] == ("in", "out")
    assert lnn.get_partition_spec(variables)["params"][
        "kernel"
    ] == jax.sharding.PartitionSpec("in", "out")
    np.testing.assert_allclose(
        y, X @ kernel.value + variables["params"]["bias"], rtol=1e-6
    )
    from lens.nnx.bridge.variables import to_nnx_var

    back = to_nnx_var("params", kernel)
    assert isinstance(back, lnnx.Param) and back.metadata["out_sharding"] == (
        "in",
        "out",
    )
    assert isinstance(variables["params"]["bias"], jax.Array)  # no metadata: plain
