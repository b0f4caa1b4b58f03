"""Module-level transforms, on classes and on methods."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors, nn
from tests.helpers import assert_tree_allclose, shapes

KEY = jax.random.key(0)


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(4)(x)
        return nn.Dense(2)(nn.relu(h))


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.tanh(nn.Dense(3)(c)), None


def test_vmap_class_gets_new_name_and_mapped_params():
    class Ens(nn.Module):
        @nn.compact
        def __call__(self, x):
            V = nn.vmap(MLP, variable_axes={"params": 0}, split_rngs={"params": True})
            assert V.__name__ == "VmapMLP"
            return V()(x)

    v = Ens().init(KEY, jnp.ones((5, 3)))
    assert shapes(v["params"]) == {
        "VmapMLP_0": {
            "Dense_0": {"bias": (5, 4), "kernel": (5, 3, 4)},
            "Dense_1": {"bias": (5, 2), "kernel": (5, 4, 2)},
        }
    }


def test_vmap_method_params_under_caller():
    class Caller2(nn.Module):
        def setup(self):
            self.d = nn.Dense(2)

        def __call__(self, x):
            return nn.vmap(
                Caller2.inner, variable_axes={"params": 0}, split_rngs={"params": True}
            )(self, x)

        def inner(self, x):
            return self.d(x)

    v = Caller2().init(KEY, jnp.ones((4, 3)))
    assert shapes(v["params"]) == {"d": {"bias": (4, 2), "kernel": (4, 3, 2)}}


def test_transforming_an_instance_is_an_error():
    with pytest.raises(
        errors.TransformTargetError,
        match="(?s)^Linen transformations must be applied to Modules classes.*transform the class",
    ):
        nn.vmap(MLP(), variable_axes={"params": 0})


def test_returning_a_module_from_a_transformed_method_is_an_error():
    class Ret(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(2)
            return nn.vmap(lambda m, x: m, variable_axes={}, split_rngs={})(d, x)

    with pytest.raises(
        errors.TransformedMethodReturnValueError,
        match="(?s)^Transformed module method <lambda> cannot return Modules or Variables.*Return arrays",
    ):
        Ret().init(KEY, jnp.ones((2, 3)))


class ScannedStack(nn.Module):
    """Six Blocks as one nn.scan over their params."""

    @nn.compact
    def __call__(self, x):
        S = nn.scan(
            Block,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=6,
        )
        return S()(x, None)[0]


def test_scan_over_layers_class():
    x = jax.random.normal(KEY, (2, 3))
    v = ScannedStack().init(KEY, x)
    assert shapes(v["params"]) == {
        "ScanBlock_0": {"Dense_0": {"bias": (6, 3), "kernel": (6, 3, 3)}}
    }
    p = v["params"]["ScanBlock_0"]["Dense_0"]
    h = x
    for i in range(6):
        h = jnp.tanh(h @ p["kernel"][i] + p["bias"][i])
    np.testing.assert_allclose(ScannedStack().apply(v, x), h, rtol=1e-5)


def test_scan_first_pass_leaves_nothing_in_the_enclosing_trace():
    # The body's first pass (invariant checks, broadcast variables) is traced on
    # its own; with nothing to create, none of its ops (nor the first slice)
    # belong in the caller's program: the apply is the one scan.
    x = jax.random.normal(KEY, (2, 3))
    v = ScannedStack().init(KEY, x)
    jaxpr = jax.make_jaxpr(ScannedStack().apply)(v, x).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["scan"]


def test_remat_equals_no_remat_with_static_argnums():
    class Drop(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            return nn.Dropout(0.5)(nn.Dense(3)(x), deterministic=not train)

    R = nn.remat(Drop, static_argnums=(2,))

    class Outer(nn.Module):
        cls: type

        @nn.compact
        def __call__(self, x, train):
            return self.cls(name="b")(x, train)

    x = jnp.ones((2, 3))
    v = Outer(Drop).init(KEY, x, False)
    vr = Outer(R).init(KEY, x, False)
    assert_tree_allclose(v, vr)
    loss = lambda cls: (
        lambda p: jnp.sum(
            Outer(cls).apply({"params": p}, x, True, rngs={"dropout": KEY}) ** 2
        )
    )  # noqa: E731
    assert_tree_allclose(
        jax.grad(loss(Drop))(v["params"]), jax.grad(loss(R))(v["params"])
    )


def test_jit_never_retraces_for_same_structure_and_shapes():
    traces = []

    class Traced(nn.Module):
        @nn.compact
        def __call__(self, x):
            traces.append(1)
            return nn.Dense(3)(x)

    J = nn.jit(Traced)

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return J()(x)

    x = jnp.ones((2, 3))
    v = Outer().init(KEY, x)
    n = len(traces)
    ys = [Outer().apply(v, x) for _ in range(4)]
    assert len(traces) == n + 1
    assert_tree_allclose(
        ys[0],
        jnp.ones((2, 3)) @ v["params"]["JitTraced_0"]["Dense_0"]["kernel"]
        + v["params"]["JitTraced_0"]["Dense_0"]["bias"],
    )


def test_kwargs_pass_through_every_class_transform():
    class KW(nn.Module):
        @nn.compact
        def __call__(self, x, *, scale):
            return nn.Dense(2)(x) * scale

    x = jnp.ones((3, 2))
    for T in (
        nn.vmap(KW, variable_axes={"params": 0}, split_rngs={"params": True}),
        nn.remat(KW),
        nn.jit(KW),
    ):

        class Outer(nn.Module):
            T: type

            @nn.compact
            def __call__(self, x):
                return self.T()(x, scale=0.0)

        v = Outer(T).init(KEY, x)
        assert jnp.allclose(Outer(T).apply(v, x), 0.0)


def test_function_transforms_vjp_grad_value_and_grad_jvp():
    class Scale(nn.Module):
        @nn.compact
        def __call__(self, x):
            p = self.param("scale", nn.initializers.ones_init(), ())
            return p * x

    class G(nn.Module):
        @nn.compact
        def __call__(self, x):
            s = Scale()
            y, bwd = nn.vjp(lambda m, x: jnp.sum(m(x) ** 2), s, x)
            pg, xg = bwd(jnp.ones(()))
            # As in Flax: value_and_grad and grad differentiate the primals only.
            y2, (xg2,) = nn.value_and_grad(lambda m, x: jnp.sum(m(x) ** 2), s, x)
            (xg3,) = nn.grad(lambda m, x: jnp.sum(m(x) ** 2), s, x)
            _, tan = nn.jvp(
                lambda m, x: m(x),
                s,
                (x,),
                (jnp.ones_like(x),),
                {"params": {"scale": jnp.zeros(())}},
            )
            return pg, xg, y, y2, xg2, xg3, tan

    x = jnp.arange(3.0)
    _, v = G().init_with_output(KEY, x)
    pg, xg, y, y2, xg2, xg3, tan = G().apply(v, x)
    assert float(pg["params"]["scale"]) == pytest.approx(float(jnp.sum(2 * x**2)))
    np.testing.assert_allclose(xg, 2 * x)
    np.testing.assert_allclose(y2, y)
    np.testing.assert_allclose(xg2, xg)
    np.testing.assert_allclose(xg3, xg)
    np.testing.assert_allclose(tan, jnp.ones(3))


def test_cond_switch_while_loop_on_modules():
    class C(nn.Module):
        @nn.compact
        def __call__(self, x, pred, i):
            d = nn.Dense(2)
            y = nn.cond(pred, lambda m, x: m(x), lambda m, x: -m(x), d, x)
            z = nn.switch(i, [lambda m, x: m(x), lambda m, x: 2 * m(x)], d, x)
            n = nn.while_loop(lambda m, c: c < 3, lambda m, c: c + 1, d, 0)
            return y, z, n

    x = jnp.ones((1, 3))
    v = C().init(KEY, x, True, 0)
    y1, z1, n = C().apply(v, x, True, 0)
    y2, z2, _ = C().apply(v, x, False, 1)
    assert jnp.allclose(y1, -y2) and jnp.allclose(2 * z1, z2) and int(n) == 3


@pytest.mark.parametrize("loop", ["while_loop", "scan"])
def test_a_loop_body_writing_an_outer_variable_it_closed_over_leaks_no_tracer(loop):
    # Loops trace their body once before the loop (to create carry variables).
    # A body closing over an outer module's variable wrote that pass's tracer
    # into the outer tree, and the loop itself then read it: JAX's
    # UnexpectedTracerError. flax.nnx's while_loop traces the body only inside
    # the loop and writes the carried collection back over the closure's write;
    # lens now leaves the outer tree as that first pass found it, so both loops
    # give flax's while_loop result.
    class A(nn.Module):
        @nn.compact
        def __call__(self, x):
            c = self.variable("s", "n", lambda: jnp.zeros(()))

            def body(m, carry):
                c.value = c.value + carry
                return carry + 1

            if loop == "while_loop":
                r = nn.while_loop(
                    lambda m, carry: carry < 3, body, self, x, carry_variables="s"
                )
            else:
                r, _ = nn.scan(
                    lambda m, carry, _: (body(m, carry), None),
                    variable_carry="s",
                    length=3,
                )(self, x, None)
            return r, c.value

    (r, n), state = A().apply({"s": {"n": jnp.zeros(())}}, 0.0, mutable="s")
    assert float(r) == 3.0
    assert float(n) == 0.0 and float(state["s"]["n"]) == 0.0
    assert not isinstance(state["s"]["n"], jax.core.Tracer)


def test_custom_vjp_on_module():
    class Sign(nn.Module):
        @nn.compact
        def __call__(self, x):
            def f(mdl, x):
                return mdl(x)

            def fwd(mdl, x):
                return nn.vjp(f, mdl, x)

            def bwd(vjp_fn, y_t):
                params_t, *inputs_t = vjp_fn(y_t)
                return (jax.tree.map(jnp.sign, params_t), *inputs_t)

            return nn.custom_vjp(f, forward_fn=fwd, backward_fn=bwd)(
                nn.Dense(1), x
            ).reshape(())

    x = jnp.array([[2.0, -3.0]])
    v = Sign().init(KEY, x)
    g = jax.grad(lambda p: Sign().apply({"params": p}, x))(v["params"])
    assert set(np.unique(np.asarray(jax.tree.leaves(g)[1])).tolist()) <= {-1.0, 1.0}


def test_map_variables_maps_params_going_in():
    neg = lambda v: jax.tree.map(lambda a: -a, v)  # noqa: E731

    class Neg(nn.Module):
        @nn.compact
        def __call__(self, x):
            D = nn.map_variables(
                nn.Dense, "params", neg, neg, init=self.is_initializing()
            )
            return D(2, name="d")(x)

    x = jnp.ones((1, 3))
    v = Neg().init(KEY, x)
    p = v["params"]["d"]
    np.testing.assert_allclose(
        Neg().apply(v, x), x @ -p["kernel"] - p["bias"], rtol=1e-6
    )


def test_remat_scan_with_metadata_params():
    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x):
            k = self.param(
                "kernel",
                nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp")),
                (3, 3),
            )
            return jnp.tanh(x @ k)

    class Deep(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(
                Layer, lengths=(2, 4), metadata_params={nn.PARTITION_NAME: "layers"}
            )()(x)

    x = jnp.ones((2, 3))
    v = Deep().init(KEY, x)
    box = v["params"]["Remat_scanLayer_0"]["kernel"]
    assert box.value.shape == (2, 4, 3, 3)
    assert box.names == ("layers", "layers", "embed", "mlp")
    assert Deep().apply(v, x).shape == (2, 3)
