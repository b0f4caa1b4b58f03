"""What nnx transforms do in flax.nnx's simple modes (``graph_updates=False`` and
tree mode ``graph=False``): gradients shaped as the arguments, which aliases are
allowed, and which prefixes are refused; each checked against flax.nnx where flax
is installed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])
MODES = pytest.mark.parametrize(
    "graph, graph_updates", [(True, True), (True, False), (False, False)]
)


@BOTH
@MODES
def test_grad_is_a_state_in_full_mode_and_shaped_as_the_argument_otherwise(
    nnx, graph, graph_updates
):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.array(2.0))
            self.s = nnx.BatchStat(jnp.array(3.0))

    m = M()
    grads = nnx.grad(
        lambda m: m.w[...] * m.s[...], graph=graph, graph_updates=graph_updates
    )(m)
    if graph and graph_updates:  # Params only, as a State
        assert isinstance(grads, nnx.State)
        assert set(grads.keys()) == {"w"}
    else:  # every array leaf, as an M of Variables of their types
        assert type(grads) is M
        assert type(grads.s) is nnx.BatchStat
        np.testing.assert_allclose(grads.s[...], 2.0)
    w = grads["w"] if isinstance(grads, nnx.State) else grads.w
    assert type(w) is nnx.Param
    np.testing.assert_allclose(w[...], 3.0)


@BOTH
@MODES
def test_shared_inputs_are_kept_in_graph_mode_and_refused_in_tree_mode(
    nnx, graph, graph_updates
):
    v = nnx.Param(jnp.array(1.0))

    class C(nnx.Module):
        def __init__(self, v):
            self.v = v

    c1, c2 = C(v), C(v)
    f = nnx.jit(
        lambda a, b: a.v[...] + b.v[...], graph=graph, graph_updates=graph_updates
    )
    if graph:
        np.testing.assert_allclose(f(c1, c2), 2.0)
    else:
        with pytest.raises(ValueError, match=r"^Duplicate Param"):
            f(c1, c2)
    returned = nnx.jit(lambda a: a.v, graph=graph, graph_updates=graph_updates)
    if graph and graph_updates:
        assert returned(c1) is v
    else:  # an input Variable may not come back out
        with pytest.raises(ValueError, match="does not support Variable aliasing"):
            returned(c1)


@BOTH
def test_prefixes_flax_refuses(nnx):
    with pytest.raises(ValueError, match="cannot contain `DiffState` objects"):
        nnx.grad(lambda x: x, argnums=nnx.DiffState(0, ...), graph=False)
    with pytest.raises(ValueError, match="cannot contain `StateAxes` objects"):
        nnx.vmap(lambda x: x, in_axes=nnx.StateAxes({...: 0}), graph_updates=False)
    with pytest.raises(ValueError, match="Graph nodes are not allowed as prefixes"):
        nnx.vmap(lambda x: x, in_axes=nnx.Dict(a=nnx.Param(1)), graph=True)
    with pytest.raises(ValueError, match="Variables prefixes are not supported"):
        nnx.vmap(lambda x: x, in_axes=(nnx.Variable(0),), graph=False)


@BOTH
def test_inconsistent_aliasing_names_the_variable_and_its_paths(nnx):
    class Shared(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.zeros((3, 3)))

    class Foo(nnx.Module):
        def __init__(self, shared):
            self.a = shared

    shared = Shared()
    f = nnx.vmap(lambda m1, m2: None, in_axes=(0, 1))
    with pytest.raises(
        ValueError, match=r"^Inconsistent aliasing detected[\s\S]*Param[\s\S]*a: 0"
    ):
        f(Foo(shared), Foo(shared))


@BOTH
@pytest.mark.parametrize("graph", [True, False])
def test_custom_vjp_simple_mode_writes_updates_back_and_gives_their_cotangents(
    nnx, graph
):
    class Foo(nnx.Module):
        def __init__(self):
            self.x = nnx.Param(jnp.array(1.0))
            self.z = nnx.BatchStat(jnp.array(0.0))

    @nnx.custom_vjp(graph=graph, graph_updates=False)
    def f(m):
        m.z[...] += 1.0
        return jnp.sin(m.x[...])

    seen = []

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]), m)

    def f_bwd(res, g, updates_g):
        cos_x, m = res
        (m_up,) = updates_g
        seen.append((m_up.x is None, type(m_up.z)))
        m_g = jax.tree.map(jnp.zeros_like, m)
        m_g.x[...] = 10 * cos_x * g  # a custom gradient
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = Foo()
    grads = nnx.grad(lambda m: f(m), graph=graph, graph_updates=False)(m)
    np.testing.assert_allclose(grads.x[...], 10 * np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(m.z[...], 1.0)  # the update came back
    assert seen == [(True, nnx.BatchStat)]


@BOTH
def test_full_mode_custom_vjp_and_remat_apply_static_changes(nnx):
    class Foo(nnx.Module):
        def __init__(self):
            self.x = nnx.Param(jnp.array(1.0))
            self.calls = 0

    def body(m):
        m.calls += 1
        return jnp.sin(m.x[...])

    @nnx.custom_vjp
    def f(m):
        return body(m)

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]),)

    def f_bwd(res, g):
        (m_g,), out_g = g
        m_g["x"][...] = res[0] * out_g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = Foo()
    grads = nnx.grad(f)(m)
    np.testing.assert_allclose(grads["x"][...], np.cos(1.0), rtol=1e-6)
    assert m.calls == 1
    assert nnx.remat(body)(m).shape == () and m.calls == 2


@BOTH
def test_jit_shardings_are_prefixes_over_objects(nnx):
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))

    def sharding(*names):
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*names))

    per_filter = nnx.StateSharding(
        {nnx.PathContains("kernel"): sharding("a", "b"), ...: sharding("b")}
    )
    m = nnx.Linear(16, 32, rngs=nnx.Rngs(0))

    @nnx.jit(in_shardings=(per_filter, None))
    def f(m, x):
        m.kernel[...] = m.kernel[...] * 2  # an update keeps its input sharding
        return m(x)

    y = f(m, jnp.ones((4, 16)))
    assert y.shape == (4, 32)
    assert m.kernel.sharding.spec == jax.sharding.PartitionSpec("a", "b")
    assert m.bias.sharding.spec == jax.sharding.PartitionSpec("b")

    out_spec = nnx.prefix(m, {...: sharding("b")}, graph=True)
    made = nnx.jit(
        lambda: nnx.Linear(16, 32, rngs=nnx.Rngs(0)),
        out_shardings=out_spec,
        graph_updates=False,
    )()
    assert made.bias.sharding.spec == jax.sharding.PartitionSpec("b")

    v = nnx.Param(jnp.ones(4))
    g = nnx.jit(lambda a, b: a[...] + b[...], in_shardings=(sharding(), sharding("a")))
    with pytest.raises(ValueError, match="^Inconsistent aliasing detected"):
        g(v, v)


@BOTH
@pytest.mark.parametrize("graph_updates", [True, False])
def test_vmap_output_rules_per_mode(nnx, graph_updates):
    class Foo(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.zeros((2, 3)))

    m = Foo()
    f = nnx.vmap(lambda m: m, in_axes=0, out_axes=1, graph_updates=graph_updates)
    expected = "Inconsistent aliasing detected" if graph_updates else "Duplicate Param"
    with pytest.raises(ValueError, match=expected):
        f(m)  # an input returned on another axis
    captured = nnx.vmap(lambda x: m, graph_updates=graph_updates)
    expected = (
        "Cannot extract graph node from different trace level"
        if graph_updates
        else "Cannot return captured Variable"
    )
    with pytest.raises(ValueError, match=expected):
        captured(jnp.zeros((4,)))


@BOTH
@MODES
def test_a_compiled_jit_takes_the_objects_and_writes_updates_back(
    nnx, graph, graph_updates
):
    class Foo(nnx.Module):
        def __init__(self):
            self.count = nnx.Variable(jnp.array(0))

    m = Foo()

    @nnx.jit(graph=graph, graph_updates=graph_updates)
    def f(m, x):
        m.count[...] += 1
        return x * 2

    compiled = f.lower(m, jnp.array(3.0)).compile()
    assert compiled.as_text()
    np.testing.assert_allclose(compiled(m, jnp.array(3.0)), 6.0)
    np.testing.assert_allclose(compiled(m, jnp.array(1.0)), 2.0)
    assert int(m.count[...]) == 2


@BOTH
def test_jit_static_argnames_by_keyword_or_position(nnx):
    @nnx.jit(static_argnames="scale")
    def f(x, scale):
        return x * scale

    np.testing.assert_allclose(f(jnp.array(2.0), scale=3), 6.0)
    np.testing.assert_allclose(f(jnp.array(2.0), 4), 8.0)


@BOTH
def test_loops_keep_variable_identity(nnx):
    def body(carry):
        m, c = carry
        m.kernel = nnx.Param(jnp.zeros_like(m.kernel[...]))  # a new Variable
        return m, c - 1.0

    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError):
        nnx.while_loop(lambda carry: carry[-1] > 0, body, (m, 2.0))
    _, c = nnx.fori_loop(0, 2, lambda i, carry: body(carry), (m, 2.0))
    np.testing.assert_allclose(c, 0.0)  # fori_loop takes the new Variable


@BOTH
def test_pmap_creates_objects_with_state_axes_out(nnx):
    axes = nnx.StateAxes({nnx.Param: 0, ...: None})

    @nnx.pmap(in_axes=0, out_axes=axes, axis_size=1)
    def create(x):
        m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
        m.kernel[...] += x
        m.count = nnx.BatchStat(jnp.array(0))
        return m

    m = create(jnp.zeros((1,)))
    assert m.kernel.shape == (1, 3, 2)
    assert m.count.shape == ()  # broadcast: one copy


@BOTH
def test_split_and_merge_inputs_around_a_jax_transform(nnx):
    general = pytest.importorskip(f"{nnx.__name__}.transforms.general")

    class Counter(nnx.Module):
        def __init__(self):
            self.count = nnx.BatchStat(jnp.array(0, jnp.uint32))

    counter = Counter()

    @general.merge_inputs
    def increment(c):
        c.count[...] += 1

    @general.merge_inputs
    def nothing(c):
        pass

    general.split_inputs(jax.lax.cond)(True, increment, nothing, counter)
    general.split_inputs(jax.lax.cond)(False, increment, nothing, counter)
    assert int(counter.count[...]) == 1
    jitted = general.split_inputs(jax.jit(increment))
    jitted(counter)
    assert int(counter.count[...]) == 2


@BOTH
@pytest.mark.parametrize("graph_updates", [True, False])
def test_jit_swapped_references_come_back_in_the_full_mode_only(nnx, graph_updates):
    class Foo(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.array(1.0))
            self.b = nnx.Param(jnp.array(2.0))

    @nnx.jit(graph_updates=graph_updates)
    def f(m):
        m.a, m.b = m.b, m.a

    m = Foo()
    a, b = m.a, m.b
    f(m)
    assert (m.a is b and m.b is a) if graph_updates else (m.a is a and m.b is b)


@BOTH
def test_make_jaxpr_refuses_graph_updates(nnx):
    with pytest.raises(ValueError, match="does not support graph_updates=True"):
        nnx.make_jaxpr(lambda m: m["a"][...], graph=True, graph_updates=True)(
            nnx.Dict(a=nnx.Param(jnp.array(1)))
        )


@BOTH
def test_state_axes_from_a_state_of_axes(nnx):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    state = nnx.state(model)
    state["kernel"] = 0
    state["bias"] = 1
    axes = nnx.StateAxes(state)
    assert axes.map_prefix(("kernel",), None) == 0
    assert axes.map_prefix(("bias",), None) == 1
    made = nnx.vmap(
        lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)), out_axes=axes, axis_size=4
    )()
    assert made.kernel.shape == (4, 2, 3) and made.bias.shape == (3, 4)


@BOTH
def test_vmap_names_the_broadcast_state_a_function_updated(nnx):
    class Env(nnx.Module):
        def __init__(self):
            self.broadcast = nnx.BatchStat(jnp.array(1))
            self.index = nnx.Param(jnp.arange(4))

    @nnx.vmap(in_axes=(nnx.StateAxes({nnx.BatchStat: None, ...: 0}),))
    def f(env):
        env.broadcast[...] += env.index[...]

    with pytest.raises(
        ValueError, match=r"at vmap.*'broadcast'.*got axis spec None but output"
    ):
        f(Env())


@BOTH
def test_rngs_broadcast_repeats_one_new_key(nnx):
    rngs = nnx.Rngs(params=0, dropout=1).broadcast({"dropout": 3})
    keys = jax.random.key_data(rngs.dropout.key[...])
    assert keys.shape[0] == 3
    np.testing.assert_array_equal(keys[0], keys[2])
    assert rngs.params.key.shape == ()


@BOTH
@pytest.mark.parametrize("graph", [True, False])
def test_prefix_reads_like_the_object_and_its_state(nnx, graph):
    class Foo(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 3, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)

    specs = nnx.prefix(
        Foo(nnx.Rngs(0)), {nnx.Param: 0, nnx.BatchStat: None}, graph=graph
    )
    if graph:  # flax: a TreeState whose state holds the prefixes
        assert isinstance(specs, nnx.extract.TreeState)
        assert specs.state["linear"]["kernel"] == 0
        assert specs.state["bn"]["mean"] is None
    else:  # flax: the object's tree with prefixes for leaves
        assert specs.linear.kernel == 0
        assert specs.bn.var is None


@BOTH
def test_ellipsis_assignment_writes_into_an_array_value(nnx):
    v = nnx.Param(jnp.array([1.0, 2.0]))
    v[...] = 3  # a scalar broadcast into the array, which stays an array
    assert isinstance(v[...], jax.Array)
    np.testing.assert_array_equal(v[...], [3.0, 3.0])
    new = jnp.array([5.0, 6.0])
    v[...] = new  # same shape and dtype: swapped whole
    assert v[...] is new
    with pytest.raises((ValueError, TypeError)):
        v[...] = jnp.ones((3,))  # a wrong shape is refused, as flax.nnx's
    np.testing.assert_array_equal(v[...], [5.0, 6.0])


@BOTH
def test_checkify_in_tree_mode_refuses_a_variable_passed_twice(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    f = nnx.checkify(lambda a, b: a(jnp.ones(2)).sum(), graph=False)
    with pytest.raises(ValueError, match="^Duplicate"):
        f(m, m)
    with pytest.raises(ValueError, match="^Duplicate"):
        f(m, m.kernel)
    err, out = f(m, nnx.Linear(2, 2, rngs=nnx.Rngs(1)))  # distinct objects: fine
    assert out.shape == ()


def _sharing(nnx):
    class Stateless(nnx.Module):
        def __init__(self):
            self.k = 3

    class Model(nnx.Module):
        def __init__(self):
            self.a = Stateless()
            self.b = self.a  # shared, but holds no Variable
            self.l = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    return Model()


@BOTH
def test_tree_mode_walks_a_shared_object_without_variables_twice(nnx):
    m = _sharing(nnx)
    graphdef, state = nnx.split(m, graph=False)
    back = nnx.merge(graphdef, state)
    assert back.a is not back.b and back.a.k == back.b.k == 3  # two copies
    assert set(nnx.state(m, graph=False).keys()) == {"l"}


@BOTH
def test_tree_mode_refuses_a_shared_variable_naming_both_paths(nnx):
    m = _sharing(nnx)
    m.l2 = m.l
    with pytest.raises(ValueError, match=r"^Duplicate Param") as e:
        nnx.split(m, graph=False)
    message = str(e.value)
    assert "  - .l.bias\n  - .l2.bias" in message
    assert "Tree mode (graph=False) does not support shared references." in message


def test_tree_mode_refuses_a_cycle_naming_where():
    # flax.nnx recurses until RecursionError here
    m = _sharing(lnnx)
    m.a.back = m
    with pytest.raises(ValueError, match=r"^Cycle detected for Model\nfound at") as e:
        lnnx.split(m, graph=False)
    assert "  - \n  - .a.back\n" in str(e.value)
