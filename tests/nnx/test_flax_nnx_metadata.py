"""Variable metadata and sharding annotations, sowing and capture, views, and the
attention/linear options the flax gemma example uses, against flax.nnx."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def _same_tree(a, b, **tol):
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        np.testing.assert_allclose(x, y, **tol)


# ------------------------------------------------------------------- metadata


def test_metadata_api_matches_flax():
    for nnx in (lnnx, fnnx):
        p = nnx.Param(jnp.ones(2), foo=1)
        assert p.get_metadata() == {
            "foo": 1,
            "hijax": False,
            "ref": False,
            "eager_sharding": True,
        }
        assert p.get_metadata("foo") == 1 and p.get_metadata("bar", 7) == 7
        assert p.has_metadata("foo") and not p.has_metadata("bar")
        p.set_metadata("bar", 2)
        p.set_metadata(baz=3)
        assert (p.bar, p.baz) == (2, 3)
        p.del_metadata("bar")
        assert not p.has_metadata("bar")
        with pytest.raises(ValueError, match="Cannot delete `hijax` metadata"):
            p.del_metadata("hijax")
        q = p.copy(jnp.zeros(2), foo=5)
        assert type(q) is type(p) and q.foo == 5 and p.foo == 1


def test_deprecated_sharding_names_become_out_sharding():
    with lnnx.use_eager_sharding(False), pytest.warns(DeprecationWarning):
        p = lnnx.Param(jnp.ones((2, 3)), sharding_names=("a", None))
    assert p.out_sharding == ("a", None)
    assert "sharding_names" not in p.get_metadata()


def test_out_sharding_without_a_mesh_raises_as_in_flax():
    for nnx in (lnnx, fnnx):
        with pytest.raises(ValueError, match="^An auto mesh context or metadata"):
            nnx.Param(jnp.ones(2), out_sharding=("a",))


def test_a_ref_mode_variable_keeps_its_value_in_a_jax_ref():
    p = lnnx.Param(jnp.ones(2), ref=True)
    assert p.ref and isinstance(p.get_raw_value(), jax.Ref)
    assert p.get_metadata()["ref"] is True


@BOTH
def test_with_partitioning_and_get_partition_spec(nnx):
    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model"))
    with nnx.use_eager_sharding(False):
        m = nnx.Linear(
            4, 8, kernel_init=init, bias_metadata={"out_sharding": ("model",)},
            rngs=nnx.Rngs(0),
        )  # fmt: skip
    assert m.kernel.out_sharding == (None, "model")
    assert not m.kernel.eager_sharding
    specs = nnx.get_partition_spec(nnx.state(m))
    assert specs["kernel"].value == P(None, "model")
    assert specs["bias"].value == P("model")
    with nnx.logical_axis_rules((("model", "tensor"),)):
        assert nnx.get_partition_spec(nnx.state(m))["kernel"].value == P(None, "tensor")


def test_same_partitioned_parameters_as_flax():
    def make(nnx):
        init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "m"))
        with nnx.use_eager_sharding(False):
            return nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(3))

    _same_tree(lnnx.state(make(lnnx)), fnnx.state(make(fnnx)))


def test_eager_sharding_on_a_mesh_lays_the_variable_out():
    mesh = jax.make_mesh(
        (1,), ("a",), axis_types=(jax.sharding.AxisType.Explicit,)
    )  # fmt: skip
    with jax.set_mesh(mesh):
        m = lnnx.Linear(
            2, 3, kernel_metadata={"out_sharding": ("a", None)}, rngs=lnnx.Rngs(0)
        )
        assert m.kernel.value.sharding.spec == P("a", None)
        named = lnnx.get_named_sharding(lnnx.state(m), mesh)
        assert named["kernel"].value == jax.sharding.NamedSharding(mesh, P("a", None))
        gdef, abstract = lnnx.get_abstract_model(
            lambda: lnnx.Linear(
                2, 3, kernel_metadata={"out_sharding": ("a", None)}, rngs=lnnx.Rngs(0)
            ),
            mesh,
        )
        assert abstract["kernel"].value.shape == (2, 3)
        assert abstract["kernel"].value.sharding.spec == P("a", None)


@BOTH
def test_vmap_transform_metadata_names_the_stacked_axis(nnx):
    @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "layers"})
    def make(key):
        with nnx.use_eager_sharding(False):
            return nnx.Linear(
                2, 3, kernel_metadata={"out_sharding": ("in", "out")},
                rngs=nnx.Rngs(key),
            )  # fmt: skip

    stack = make(jax.random.split(jax.random.key(0), 4))
    assert stack.kernel.shape == (4, 2, 3)
    assert stack.kernel.out_sharding == ("layers", "in", "out")


def test_transform_metadata_roundtrip_matches_flax():
    def run(nnx):
        @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "L"})
        def make(key):
            with nnx.use_eager_sharding(False):
                return nnx.Linear(
                    3, 3, kernel_metadata={"out_sharding": ("i", "o")},
                    rngs=nnx.Rngs(key),
                )  # fmt: skip

        stack = make(jax.random.split(jax.random.key(0), 2))
        inside = []

        @nnx.scan(
            in_axes=(nnx.Carry, 0),
            out_axes=nnx.Carry,
            transform_metadata={nnx.PARTITION_NAME: "L"},
        )
        def forward(x, layer):
            inside.append(layer.kernel.out_sharding)
            return layer(x)

        y = forward(jnp.ones((1, 3)), stack)
        return y, inside, stack.kernel.out_sharding

    (ly, lin, lout), (fy, fin, fout) = run(lnnx), run(fnnx)
    np.testing.assert_allclose(ly, fy, rtol=1e-6)
    assert lin == fin == [("i", "o")]
    assert lout == fout == ("L", "i", "o")


# ------------------------------------------------------------- sow and capture


class _Sower:
    @staticmethod
    def make(nnx):
        class Model(nnx.Module):
            def __init__(self, rngs):
                self.linear1 = nnx.Linear(2, 3, rngs=rngs)
                self.linear2 = nnx.Linear(3, 4, rngs=rngs)

            def __call__(self, x):
                x = self.linear1(x)
                self.sow(nnx.Intermediate, "features", x)
                self.sow(nnx.Intermediate, "features", x * 2)
                return self.linear2(x)

        return Model(nnx.Rngs(0))


def test_capture_collects_sown_values_like_flax():
    x = jnp.ones((1, 2))
    out = {}
    for name, nnx in (("lens", lnnx), ("flax", fnnx)):
        model = _Sower.make(nnx)
        y, inter = nnx.capture(model, nnx.Intermediate)(x)
        assert isinstance(inter["features"], nnx.Intermediate)
        assert len(inter["features"].value) == 2
        assert not hasattr(model, "__captures__")
        out[name] = (y, inter["features"].value)
    _same_tree(out["lens"], out["flax"], rtol=1e-6)


def test_capture_as_decorator_inside_jit():
    model = _Sower.make(lnnx)

    @lnnx.jit
    @lnnx.capture(lnnx.Intermediate)
    def forward(model, x):
        return model(x)

    y, inter = forward(model, jnp.ones((1, 2)))
    assert inter["features"].value[1].shape == (1, 3)
    np.testing.assert_allclose(
        inter["features"].value[1], 2 * inter["features"].value[0]
    )


def test_capture_method_outputs_and_nested_paths():
    def run(nnx):
        class Block(nnx.Module):
            def __init__(self, rngs):
                self.inner = nnx.Linear(2, 2, rngs=rngs)

            def features(self, x):
                return self.inner(x)

            def __call__(self, x):
                return self.features(x) * 2

        m = Block(nnx.Rngs(0))
        _, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(
            jnp.ones((1, 2))
        )
        return inter

    lens_inter, flax_inter = run(lnnx), run(fnnx)
    assert sorted(lens_inter.keys()) == sorted(flax_inter.keys())
    assert sorted(lens_inter["inner"].keys()) == sorted(flax_inter["inner"].keys())
    _same_tree(lens_inter, flax_inter, rtol=1e-6)


def test_perturb_gives_gradients_of_intermediates():
    def run(nnx):
        class Model(nnx.Module):
            def __call__(self, x):
                return 3 * self.perturb("grad_of_x", x) ** 2

        model = Model()
        x = jnp.array(2.0)
        _, perturbations = nnx.capture(model, nnx.Perturbation)(x)

        def loss(model, perturbations, x):
            return nnx.capture(model, nnx.Intermediate, init=perturbations)(x)

        (_, pgrads), _ = nnx.grad(loss, argnums=(0, 1), has_aux=True)(
            model, perturbations, x
        )
        return pgrads["grad_of_x"].value

    assert float(run(lnnx)) == pytest.approx(float(run(fnnx))) == pytest.approx(12.0)


def test_sow_outside_capture_still_stores_with_a_deprecation_warning():
    model = _Sower.make(lnnx)
    with pytest.warns(DeprecationWarning, match="outside of 'nnx.capture"):
        model(jnp.ones((1, 2)))
    assert len(model.features.value) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        del model.features
        model.features = 3
        with pytest.raises(ValueError, match="Expected 'features' to be a Variable"):
            model(jnp.ones((1, 2)))


# ------------------------------------------------------------------- views


def _block(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 5, rngs=rngs)
            self.dropout = nnx.Dropout(0.5)
            self.batch_norm = nnx.BatchNorm(5, rngs=rngs)

    return Block(nnx.Rngs(0))


@BOTH
def test_view_sets_attributes_on_a_copy_sharing_variables(nnx):
    block = _block(nnx)
    view = nnx.view(block, deterministic=True, use_running_average=True)
    assert (view.dropout.deterministic, view.batch_norm.use_running_average) == (
        True,
        True,
    )
    assert (block.dropout.deterministic, block.batch_norm.use_running_average) == (
        False,
        False,
    )
    assert view.linear.kernel is block.linear.kernel
    only = nnx.view(block, only=nnx.Dropout, deterministic=True)
    assert only.dropout.deterministic and not only.batch_norm.use_running_average
    with pytest.raises(ValueError, match=r"^Unused keys found in nnx.view: \['foo'\]"):
        nnx.view(block, foo=1)


def test_view_info_and_iteration_match_flax():
    lb, fb = _block(lnnx), _block(fnnx)
    assert lnnx.view_info(lb) == fnnx.view_info(fb)
    names = lambda it: [(p, type(m).__name__) for p, m in it]  # noqa: E731
    assert names(lnnx.iter_modules(lb)) == names(fnnx.iter_modules(fb))
    assert names(lnnx.iter_children(lb)) == names(fnnx.iter_children(fb))
    wa = lnnx.with_attributes(lb, deterministic=True)
    assert wa.dropout.deterministic and not lb.dropout.deterministic


# ------------------------------------------------------ attention and linear


def test_grouped_query_attention_matches_flax():
    def run(nnx):
        m = nnx.MultiHeadAttention(4, 8, num_kv_heads=2, decode=False, rngs=nnx.Rngs(0))
        x = jax.random.normal(jax.random.key(1), (2, 5, 8))
        y = m(x)
        yc = m(x, is_causal=True)
        return nnx.state(m), y, yc

    (ls, ly, lyc), (fs, fy, fyc) = run(lnnx), run(fnnx)
    assert ls["key"]["kernel"].value.shape == (8, 2, 2)
    _same_tree(ls, fs)
    np.testing.assert_allclose(ly, fy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lyc, fyc, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ly, lyc)


def test_attention_sow_weights_is_captured():
    m = lnnx.MultiHeadAttention(2, 4, decode=False, rngs=lnnx.Rngs(0))
    _, inter = lnnx.capture(lambda m, x: m(x, sow_weights=True), lnnx.Intermediate)(
        m, jnp.ones((1, 3, 4))
    )
    (w,) = inter["attention_weights"].value
    assert w.shape == (1, 2, 3, 3)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)


def test_linear_general_batch_axis_matches_flax():
    def run(nnx):
        m = nnx.LinearGeneral(
            3, 4, axis=-1, batch_axis={0: 2}, rngs=nnx.Rngs(0)
        )  # fmt: skip
        return nnx.state(m), m(jax.random.normal(jax.random.key(1), (2, 5, 3)))

    (ls, ly), (fs, fy) = run(lnnx), run(fnnx)
    assert ls["kernel"].value.shape == (2, 3, 4)
    _same_tree(ls, fs)
    np.testing.assert_allclose(ly, fy, rtol=1e-5)


def test_custom_promote_dtype_and_dot_general_are_used():
    calls = []

    def dot(*a, **k):
        calls.append(k)
        return jax.lax.dot_general(*a, **k)

    m = lnnx.Linear(2, 3, dot_general=dot, preferred_element_type=jnp.float32,
                    rngs=lnnx.Rngs(0))  # fmt: skip
    y = m(jnp.ones((1, 2), jnp.bfloat16))
    assert calls and calls[0]["preferred_element_type"] == jnp.float32
    assert y.dtype == jnp.float32


@BOTH
def test_dropout_takes_a_key_at_call_time(nnx):
    d = nnx.Dropout(0.5)
    y = d(jnp.ones((4, 4)), rngs=jax.random.key(0))
    assert set(np.unique(np.asarray(y)).tolist()) <= {0.0, 2.0}
    with pytest.raises(ValueError, match="no `rngs` argument was provided"):
        d(jnp.ones(3))


@BOTH
def test_sow_inside_grad_adds_the_attribute_as_in_flax(nnx):
    class M(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            y = self.linear(x)
            self.sow(nnx.Intermediate, "features", y)
            return y

    m = M(nnx.Rngs(0))

    @nnx.jit
    def step(m, x):
        return nnx.grad(lambda m: m(x).sum())(m)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        grads = step(m, jnp.ones((1, 2)))
        step(m, jnp.ones((1, 2)))
    assert sorted(grads["linear"].keys()) == ["bias", "kernel"]
    assert len(m.features.get_value()) == 2
