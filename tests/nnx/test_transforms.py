"""lens.nnx transforms: the JAX-style conventions and the programs the seed rejects
(seed 001: in_axes per module, StateAxes, DiffState, split_rngs, consistent
aliasing)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors, nnx


class Weights(nnx.Module):
    def __init__(self, shape, stat_shape=None):
        self.w = nnx.Param(jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape))
        if stat_shape is not None:
            self.s = nnx.BatchStat(jnp.ones(stat_shape))


class Foo(nnx.Module):
    def __init__(self, shared):
        self.shared = shared


# --------------------------------------------------------------- JAX conventions


def test_vmap_maps_each_module_on_its_own_axis():
    m1, m2 = Weights((2, 5)), Weights((5, 3))

    @nnx.vmap(in_axes=(1, 0))
    def f(m1, m2):
        assert m1.w.shape == (2,) and m2.w.shape == (3,)
        return m1.w.sum() + m2.w.sum()

    got = f(m1, m2)
    want = np.asarray(m1.w.value).sum(0) + np.asarray(m2.w.value).sum(1)
    np.testing.assert_allclose(got, want)


def test_state_axes_map_params_and_broadcast_batch_stats():
    m1 = Weights((2, 5), stat_shape=(7,))
    m2 = Weights((5, 3))
    seen = {}

    @nnx.vmap(in_axes=(nnx.StateAxes({nnx.Param: 1, nnx.BatchStat: None}), 0))
    def f(m1, m2):
        seen["shapes"] = (m1.w.shape, m1.s.shape, m2.w.shape)
        return m1.w.sum() * m1.s.sum() + m2.w.sum()

    out = f(m1, m2)
    assert seen["shapes"] == ((2,), (7,), (3,))
    assert out.shape == (5,)


def test_state_axes_must_cover_every_variable():
    m = Weights((2, 5), stat_shape=(7,))
    f = nnx.vmap(lambda m: m.w.sum(), in_axes=(nnx.StateAxes({nnx.Param: 1}),))
    with pytest.raises(
        ValueError, match=r"^args\[0\]\.s: StateAxes.*no filter matches s "
    ):
        f(m)


def test_updates_inside_vmap_come_back_on_the_input_axis():
    m = Weights((4, 3))

    @nnx.vmap(in_axes=0)
    def scale(m):
        m.w.value = m.w.value * 2

    scale(m)
    np.testing.assert_allclose(m.w.value, 2 * np.arange(12.0).reshape(4, 3))


class LoRAParam(nnx.Param):
    pass


class LoRALinear(nnx.Module):
    def __init__(self, rngs):
        self.base = nnx.Linear(3, 2, rngs=rngs)
        self.a = LoRAParam(jnp.ones((3, 1)))
        self.b = LoRAParam(jnp.zeros((1, 2)))

    def __call__(self, x):
        return self.base(x) + x @ self.a.value @ self.b.value


def test_diff_state_differentiates_only_the_filtered_variables():
    model = LoRALinear(nnx.Rngs(0))
    x = jnp.ones((4, 3))

    def loss(model, x):
        return jnp.sum(model(x) ** 2)

    grads = nnx.grad(loss, argnums=nnx.DiffState(0, LoRAParam))(model, x)
    flat = dict(grads.flat_state())
    assert set(flat) == {("a",), ("b",)}
    assert isinstance(flat[("a",)], LoRAParam)
    # check against jax.grad on the pure function of a and b
    k, bias = model.base.kernel.value, model.base.bias.value
    ga, gb = jax.grad(
        lambda a, b: jnp.sum((x @ k + bias + x @ a @ b) ** 2), argnums=(0, 1)
    )(model.a.value, model.b.value)
    np.testing.assert_allclose(flat[("a",)].value, ga, rtol=1e-6)
    np.testing.assert_allclose(flat[("b",)].value, gb, rtol=1e-6)
    # and the default differentiates every Param (LoRAParam is a Param)
    all_grads = nnx.grad(loss)(model, x)
    assert set(dict(all_grads.flat_state())) == {
        ("a",),
        ("b",),
        ("base", "kernel"),
        ("base", "bias"),
    }


def test_grad_of_several_arguments_and_of_plain_arrays():
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((3, 2))
    gm, gx = nnx.grad(lambda m, x: jnp.sum(m(x)), argnums=(0, 1))(m, x)
    assert isinstance(gm, nnx.State)
    np.testing.assert_allclose(gx, np.broadcast_to(m.kernel.value.sum(1), (3, 2)))


def test_value_and_grad_with_aux_and_state_updates():
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.bn = nnx.BatchNorm(2, rngs=rngs)

        def __call__(self, x):
            return self.bn(self.lin(x))

    net = Net(nnx.Rngs(0))
    before = np.asarray(net.bn.mean.value).copy()
    x = jax.random.normal(jax.random.key(1), (8, 2)) + 3.0

    def loss(net, x):
        y = net(x)
        return jnp.mean(y**2), {"y": y}

    (value, aux), grads = nnx.value_and_grad(loss, has_aux=True)(net, x)
    assert aux["y"].shape == (8, 2)
    assert value.shape == ()
    assert set(dict(grads.flat_state())) == {
        ("bn", "bias"),
        ("bn", "scale"),
        ("lin", "bias"),
        ("lin", "kernel"),
    }
    # the batch statistics were updated in place, outside the gradient
    assert not np.allclose(net.bn.mean.value, before)


def test_jit_writes_updates_back_and_does_not_retrace():
    traces = []

    class Counter(nnx.Module):
        def __init__(self):
            self.n = nnx.BatchStat(jnp.zeros(()))

    @nnx.jit
    def inc(c, by):
        traces.append(1)
        c.n.value = c.n.value + by
        return c.n.value

    c = Counter()
    for _ in range(3):
        inc(c, 2.0)
    assert float(c.n.value) == 6.0
    assert len(traces) == 1


def test_jit_train_step_with_optimizer_learns():
    optax = pytest.importorskip("optax")
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(0), (32, 2))
    y = x @ jnp.array([[1.0], [-2.0]]) + 0.5

    @nnx.jit
    def step(model, opt, x, y):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        opt.update(model, grads)
        return loss

    losses = [float(step(model, opt, x, y)) for _ in range(100)]
    assert losses[-1] < 1e-3 < losses[0]
    assert int(opt.step.value) == 100
    np.testing.assert_allclose(model.kernel.value, [[1.0], [-2.0]], atol=0.05)


def test_ensemble_with_split_rngs_and_vmap():
    @nnx.split_rngs(splits=5)
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 3, rngs=rngs)

    rngs = nnx.Rngs(0)
    ens = create(rngs)
    assert ens.kernel.shape == (5, 2, 3) and ens.bias.shape == (5, 3)
    k = np.asarray(ens.kernel.value)
    assert not np.allclose(k[0], k[1])  # each member its own key
    # the outer stream was restored (and advanced by one)
    assert rngs.default.key.shape == () and int(rngs.default.count.value) == 1
    x = jnp.ones((4, 2))
    y = nnx.vmap(lambda m, x: m(x), in_axes=(0, None))(ens, x)
    assert y.shape == (5, 4, 3)
    np.testing.assert_allclose(
        y[2], x @ k[2] + np.asarray(ens.bias.value)[2], rtol=1e-6
    )


def test_split_rngs_as_a_context_manager():
    rngs = nnx.Rngs(params=0, dropout=1)
    with nnx.split_rngs(rngs, splits=3, only="dropout"):
        assert rngs.dropout.key.shape == (3,)
        assert rngs.params.key.shape == ()
    assert rngs.dropout.key.shape == ()


def test_an_input_returned_comes_back_as_itself():
    m1, m2 = Weights((3,)), Weights((3,))

    @nnx.vmap(in_axes=(0, 0, 0), out_axes=0)
    def f(m1, m2, m1_alias):
        assert m1 is m1_alias
        return m2

    assert f(m1, m2, m1) is m2


# ----------------------------------------------------------- rejected programs


def test_inconsistent_input_aliases_are_rejected():
    m = Weights((3, 3))
    f = nnx.vmap(lambda a, b: None, in_axes=(0, 1))
    with pytest.raises(
        errors.InconsistentAliasingError, match=r"args\[0\].*axis 0.*args\[1\].*axis 1"
    ):
        f(m, m)
    np.testing.assert_allclose(m.w.value, np.arange(9.0).reshape(3, 3))  # untouched


def test_inconsistent_input_output_aliases_are_rejected():
    m = Weights((3, 3))
    g = nnx.vmap(lambda m: m, in_axes=0, out_axes=1)
    with pytest.raises(errors.InconsistentAliasingError, match="output"):
        g(m)


def test_inconsistent_aliases_in_nested_outputs_are_rejected():
    m = Weights((3, 3))
    f = nnx.vmap(lambda m: Foo(m), in_axes=0, out_axes=1)
    with pytest.raises(errors.InconsistentAliasingError):
        f(m)


def test_shared_reference_with_different_specs_is_rejected():
    shared = Weights((3, 3))
    m1, m2 = Foo(shared), Foo(shared)
    f = nnx.vmap(lambda m1, m2: None, in_axes=(0, 1))
    with pytest.raises(errors.InconsistentAliasingError, match="shared"):
        f(m1, m2)
    # the same spec for both is fine
    nnx.vmap(lambda m1, m2: None, in_axes=(0, 0))(m1, m2)


def test_captured_modules_cannot_be_outputs():
    m = Weights((3,))
    f = nnx.vmap(lambda: m, out_axes=0, axis_size=5)
    with pytest.raises(errors.CapturedOutputError, match="pass it as an argument"):
        f()


def test_mutating_a_captured_module_inside_a_transform_is_rejected():
    m = Weights((3,))

    @nnx.jit
    def f(x):
        m.w.value = x

    with pytest.raises(errors.TraceContextError, match="captured"):
        f(jnp.zeros(3))
    np.testing.assert_allclose(m.w.value, np.arange(3.0))


@pytest.mark.parametrize("what", ["attribute", "variable"])
def test_a_captured_object_s_error_starts_as_flax_s(what):
    """Setting a plain attribute of a captured module (Keras's RNN cells set
    ``_dropout_mask`` so) or a captured Variable's value inside nnx.jit: flax's
    trace check raises "Cannot mutate 'X' from different trace level" (for a
    Variable "Cannot mutate X from a different trace level"); lens's message
    starts with the same words, then names the transform and what was tried."""
    flax_nnx = pytest.importorskip("flax.nnx")

    def first_line(nnx_mod, errors_mod):
        class Cell(nnx_mod.Module):
            def __init__(self):
                self.w = nnx_mod.Param(jnp.zeros(3))
                self.mask = None

        cell = Cell()

        @nnx_mod.jit
        def f(x):
            if what == "attribute":
                cell.mask = "dropped"
            else:
                cell.w[...] = x

        with pytest.raises(errors_mod.TraceContextError) as info:
            f(jnp.ones(3))
        assert cell.mask is None
        np.testing.assert_allclose(cell.w[...], np.zeros(3))
        return str(info.value).splitlines()[0]

    import flax.errors

    flax_line = first_line(flax_nnx, flax.errors)
    lens_line = first_line(nnx, errors)
    flax_sentence = flax_line.split(" (https://")[0]
    assert lens_line.startswith(flax_sentence), (lens_line, flax_sentence)
    assert "inside nnx.jit" in lens_line


def test_a_module_given_to_grad_and_not_to_grad_is_rejected():
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    f = nnx.grad(lambda a, b: jnp.sum(a(jnp.ones((1, 2)))), argnums=0)
    with pytest.raises(errors.InconsistentAliasingError, match="no gradient"):
        f(m, m)


def test_structure_changes_inside_jit_are_applied_to_the_caller_objects():
    class Grow(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.zeros(()))
            self.layers = nnx.List([nnx.Linear(1, 1, rngs=nnx.Rngs(0))])

    def f(m, x):
        m.b = nnx.Param(x + 1)  # a new variable
        m.layers.append(nnx.Linear(1, 2, rngs=nnx.Rngs(1)))  # a new submodule
        m.a.value = m.a.value + x
        return m.layers[1](jnp.ones((1, 1)))

    m = Grow()
    first = m.layers[0]
    y = nnx.jit(f)(m, jnp.float32(2.0))
    assert float(m.a.value) == 2.0 and float(m.b.value) == 3.0
    assert len(m.layers) == 2 and m.layers[0] is first  # same objects, grown
    assert m.layers[1].kernel.value.shape == (1, 2)
    np.testing.assert_allclose(y, m.layers[1](jnp.ones((1, 1))), rtol=1e-6)


def test_state_created_inside_vmap_comes_out_on_the_arguments_axis():
    """As in flax.nnx: a variable added to a mapped argument is stacked on that
    argument's axis, and the caller's object gets it."""

    class Grow(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.zeros((2,)))

    def f(m):
        m.b = nnx.Param(jnp.ones(()))

    g = Grow()
    nnx.vmap(f)(g)
    assert g.b[...].shape == (2,) and g.a[...].shape == (2,)
    with pytest.raises(errors.GraphStructureError, match="changed structure"):
        nnx.shard_map(
            f,
            mesh=jax.make_mesh((1,), ("d",)),
            in_specs=(jax.P(),),
            out_specs=jax.P(),
        )(Grow())


def test_mapping_a_scalar_variable_names_it_and_the_fix():
    m = Weights((3, 2), stat_shape=())
    with pytest.raises(
        ValueError, match=r"(?s)args\[0\]\.s \(BatchStat, shape \(\)\).*StateAxes"
    ):
        nnx.vmap(lambda m: m.w.sum(), in_axes=0)(m)


def test_vmap_size_mismatch_names_the_module_path_not_a_flat_index():
    layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    with pytest.raises(
        ValueError,
        match=r"(?s)^vmap got inconsistent sizes for array axes to be mapped:.*"
        r"args\[0\]\.bias \(Param\) has size 2 on axis 0;.*an array in "
        r"args\[1\] has size 3",
    ):
        nnx.vmap(lambda m, x: m(x), in_axes=(0, 0))(layer, jnp.ones((3, 2)))
    assert layer.kernel.value.shape == (2, 2)


def test_grad_argnums_beyond_the_arguments_raise_jaxs_type_error():
    with pytest.raises(TypeError, match="argnums=3 requires at least 4 positional"):
        nnx.grad(lambda a, b: a.sum(), argnums=3)(jnp.ones(2), jnp.ones(2))


def test_jit_reuses_its_graph_walk_but_sees_every_structure_change():
    # nnx.jit caches the walk of its arguments; each kind of change must be seen.
    class Model(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.blocks = [nnx.Param(jnp.ones(2))]  # a plain list
            self.scale = 1.0  # a static attribute

        def __call__(self, x):
            y = x * self.w.value * self.scale
            for b in self.blocks:
                y = y + b.value
            return y

    m = Model()
    f = nnx.jit(lambda m, x: m(x))
    x = jnp.ones(2)
    np.testing.assert_allclose(f(m, x), [2, 2])
    np.testing.assert_allclose(f(m, x), [2, 2])  # cached walk
    m.w.value = jnp.full(2, 3.0)  # a value: no re-walk needed, still seen
    np.testing.assert_allclose(f(m, x), [4, 4])
    m.blocks.append(nnx.Param(jnp.full(2, 10.0)))  # plain list, no hook
    np.testing.assert_allclose(f(m, x), [14, 14])
    m.scale = 2.0  # static attribute
    np.testing.assert_allclose(f(m, x), [17, 17])
    m.blocks[0] = nnx.Param(jnp.zeros(2))  # an item replaced
    np.testing.assert_allclose(f(m, x), [16, 16])
    m.w = nnx.Param(jnp.ones(2))  # a variable replaced
    np.testing.assert_allclose(f(m, x), [12, 12])
    other = Model()  # another object in the same place
    np.testing.assert_allclose(f(other, x), [2, 2])
    np.testing.assert_allclose(f(m, x), [12, 12])


def test_jit_reuses_its_walk_for_a_batch_tuple_or_dict_of_arrays():
    # flax's nnx_simple_training passes its batch as a tuple: each call walked the
    # arguments again. A plain tuple, list or dict of arrays is now part of the
    # cached walk; another structure, or a Variable inside, walks.
    from lens.nnx._transforms.jit_cache import TreeSlot

    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    traces = []

    @nnx.jit
    def loss(m, batch):
        traces.append(1)
        x, y = batch["x"], batch["y"]
        return ((m(x) - y) ** 2).mean()

    x, y = jnp.ones((4, 3)), jnp.zeros((4, 2))
    for shift in (0.0, 1.0, 2.0):
        got = loss(m, {"x": x + shift, "y": y})
        want = ((m(x + shift) - y) ** 2).mean()  # eager, as the check
        np.testing.assert_allclose(got, want, rtol=1e-6)
    hit = loss._cache["last"]
    assert isinstance(hit.kinds[1], TreeSlot) and len(traces) == 1
    assert hit.quick((m, {"x": x, "y": y}))
    assert not hit.quick((m, {"x": x}))  # another structure: walked again
    assert not hit.quick((m, (x, y)))
    np.testing.assert_allclose(  # another structure: walked, and right too
        loss(m, {"x": x, "y": y, "z": y}), ((m(x) - y) ** 2).mean(), rtol=1e-6
    )

    @nnx.jit
    def bump(pair):
        pair[0].value += 1  # a Variable in a tuple: its update comes back
        return pair[1] * 2

    v = nnx.BatchStat(jnp.zeros(()))
    for i in range(3):
        np.testing.assert_allclose(bump((v, jnp.ones(2))), [2, 2])
        assert float(v.value) == i + 1
    assert "last" not in bump._cache or not isinstance(
        bump._cache["last"].kinds[0], TreeSlot
    )


def test_tree_mode_jit_partial_takes_the_cached_call_and_still_checks_aliases():
    # flax's nnx_graph_overhead.py: jit_partial(step, model, optimizer,
    # graph=False) checked every Variable for sharing on every call (3-11x
    # flax's time); a cached call's inputs are the checked ones.
    import optax

    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param)

    def step(m, opt, x):
        loss, g = nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(m)
        opt.update(m, g)
        return loss

    f = nnx.jit_partial(step, m, opt, graph=False)
    x = jnp.ones((4, 3))
    losses = [float(f(x)) for _ in range(3)]
    assert losses[0] > losses[1] > losses[2]  # the updates came back each call
    assert f._cache["last"].quick((m, opt, x))
    m.alias = m.kernel  # a Variable reached twice: tree mode refuses it
    with pytest.raises(ValueError, match="Duplicate"):
        f(x)
    del m.alias
    g = nnx.jit(lambda m: m.kernel, graph=False)  # an input Variable returned
    for _ in range(2):  # on the cached call too
        with pytest.raises(ValueError, match="Duplicate"):
            g(m)


def test_jit_writes_back_only_what_changed_and_updates_stay_visible():
    class Counter(nnx.Module):
        def __init__(self):
            self.count = nnx.BatchStat(jnp.zeros(()))
            self.w = nnx.Param(jnp.ones(3))

        def __call__(self, x):
            self.count.value += 1
            return x * self.w.value

    c = Counter()
    w_before = c.w.value
    step = nnx.jit(lambda c, x: c(x))
    for _ in range(4):
        step(c, jnp.ones(3))
    assert float(c.count.value) == 4.0
    assert c.w.value is w_before  # unchanged: the same buffer, not a copy


def test_state_axes_filters_see_the_path_inside_the_object_as_in_flax():
    import flax.nnx as fnnx

    def paths(lib):
        seen = []

        def everything(path, x):
            seen.append(path)
            return True

        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        lib.vmap(lambda m, x: m(x), in_axes=(lib.StateAxes({everything: None}), 0))(
            m, jnp.ones((4, 2))
        )
        return sorted(set(seen))

    assert paths(nnx) == paths(fnnx) == [("bias",), ("kernel",)]


def test_scan_carries_stateaxes_carry_state_through_the_loop():
    """Seed 001's per-collection axes: a layer stack whose params are scanned and
    whose one BatchStat counter is carried through the loop (not stacked)."""

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)
            self.count = nnx.BatchStat(jnp.array(0))

        def __call__(self, x):
            self.count[...] += 1
            return jnp.tanh(self.linear(x))

    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return Block(rngs)

    stack = make(nnx.Rngs(0))
    stack.count = nnx.BatchStat(jnp.array(0))
    axes = nnx.StateAxes({nnx.BatchStat: nnx.Carry, ...: 0})

    @nnx.scan(in_axes=(nnx.Carry, axes), out_axes=nnx.Carry)
    def forward(x, block):
        return block(x)

    x = jnp.ones((2, 3))
    y = forward(x, stack)
    assert int(stack.count[...]) == 4
    assert stack.linear.kernel[...].shape == (4, 3, 3)
    expected = x
    for i in range(4):
        k, b = stack.linear.kernel[...][i], stack.linear.bias[...][i]
        expected = jnp.tanh(expected @ k + b)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "graph, graph_updates", [(True, False), (False, False), (False, None)]
)
def test_simple_modes_reject_variable_aliasing_as_flax(graph, graph_updates):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))
    flags = dict(graph=graph, graph_updates=graph_updates)
    f = nnx.jit(lambda a, b: a(x) + b(x), **flags)
    g = nnx.grad(lambda a, b: jnp.sum(a(x) + b(x)), **flags)
    if graph:  # graph mode keeps shared inputs; grad's two specs differ
        assert f(m, m).shape == (1, 3)
        with pytest.raises(ValueError, match=r"^Inconsistent aliasing detected"):
            g(m, m)
    else:  # tree mode: no Variable twice
        with pytest.raises(ValueError, match=r"^Duplicate Param found at paths"):
            f(m, m)  # one module passed twice
        with pytest.raises(ValueError, match=r"^Duplicate Param"):
            g(m, m)
    with pytest.raises(ValueError, match="does not support Variable aliasing"):
        nnx.jit(lambda a: a, **flags)(m)  # an input returned
    # the full mode keeps aliases: the same object comes back
    assert nnx.jit(lambda a: a)(m) is m
    assert nnx.jit(lambda a, b: a(x) + b(x))(m, m).shape == (1, 3)


def test_transforms_reject_bound_methods_with_flaxs_error():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    for transform in (nnx.jit, nnx.grad, nnx.vmap, nnx.remat, nnx.scan):
        name = transform.__name__
        with pytest.raises(
            ValueError, match=rf"^nnx\.{name} does not support bound methods"
        ):
            transform(m.__call__)
    # the unbound method is the way
    y = nnx.jit(nnx.Linear.__call__)(m, jnp.ones((1, 2)))
    assert y.shape == (1, 3)


def test_keyword_arguments_take_their_positions_spec():
    """flax.nnx binds keyword arguments to positions: ``rngs=`` of a vmapped
    ``__init__`` gets ``in_axes``' entry for ``rngs``."""

    class Ensemble(nnx.Module):
        @nnx.split_rngs(splits=3)
        @nnx.vmap(in_axes=(0, 0))
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 4, rngs=rngs)

    e = Ensemble(rngs=nnx.Rngs(0))
    assert e.lin.kernel[...].shape == (3, 2, 4)
    k = e.lin.kernel[...]
    assert not np.allclose(k[0], k[1])  # each member its own key

    def loss(m, x, *, scale=1.0):
        return scale * jnp.sum(m(x))

    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))
    with pytest.raises(TypeError, match="keyword-only"):
        nnx.value_and_grad(loss)(m, x, scale=2.0)
    value, grads = nnx.value_and_grad(lambda m, x, scale: loss(m, x, scale=scale))(
        m, x=x, scale=2.0
    )
    np.testing.assert_allclose(value, 2.0 * jnp.sum(m(x)), rtol=1e-6)
    assert set(grads) == {"bias", "kernel"}


def test_jit_returns_flaxs_wrapper_with_jitted_fn_and_stages():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    step = nnx.jit(lambda m, x: m(x))
    assert isinstance(step, nnx.transforms.compilation.JitWrapped)
    x = jnp.ones((1, 2))
    step(m, x)
    step(m, x)
    assert step.jitted_fn._cache_size() == 1
    assert "dot_general" in step.lower(m, x).as_text()
    assert step.eval_shape(m, x).shape == (1, 3)
    assert step.trace(m, x).jaxpr is not None

    class Model(nnx.Module):
        def __init__(self):
            self.lin = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

        @nnx.jit
        def __call__(self, x):
            return self.lin(x)

    model = Model()
    np.testing.assert_allclose(model(x), model.lin(x), rtol=1e-6)


def test_jit_donating_a_model_leaves_it_usable():
    """A donated variable the step does not change (the bias here) comes back: its
    input buffer is gone, so the model must not keep it."""
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

    @nnx.jit(donate_argnums=0)
    def step(m, x):
        m.kernel[...] = m.kernel[...] * 2
        return m(x)

    x = jnp.ones((1, 2))
    step(m, x)
    y = step(m, x)  # would fail on a deleted bias buffer
    assert not m.bias[...].is_deleted()
    np.testing.assert_allclose(y, x @ m.kernel[...] + m.bias[...], rtol=1e-6)


def test_vmap_over_split_and_forked_rngs():
    """The randomness guide: ``rngs.split(n)`` / ``rngs.fork(split=n)`` give one key
    and one counter per member, so a vmap over them draws different values."""
    draw = nnx.vmap(lambda rngs: rngs.normal(()), in_axes=0)
    for rngs in (nnx.Rngs(0).split(5), nnx.Rngs(0).fork(split=5)):
        assert rngs.default.count[...].shape == (5,)
        x = draw(rngs)
        assert x.shape == (5,) and len(set(np.asarray(x).tolist())) == 5


def test_split_rngs_simple_mode_returns_a_split_copy():
    rngs = nnx.Rngs(params=0, dropout=1)
    key = rngs.params.key[...]
    split = nnx.split_rngs(rngs, splits=4, only="params", graph_updates=False)
    assert split is not rngs
    assert split.params.key[...].shape == (4,)
    assert split.dropout.key[...].shape == ()
    assert rngs.params.key[...] == key  # the original keeps its key
    assert int(rngs.params.count[...]) == 1  # and advanced once, as flax's

    @nnx.split_rngs(splits=3, graph=False, graph_updates=False)
    @nnx.vmap(in_axes=0, graph=False, graph_updates=False)
    def make(rngs):
        return nnx.Linear(2, 2, rngs=rngs)

    assert make(nnx.Rngs(0)).kernel[...].shape == (3, 2, 2)


def test_capture_perturbations_under_vmap_as_in_the_intermediates_guide():
    """A capture buffer (a Variable holding an empty dict) mapped on axis 0 has
    nothing to map: vmap over a split model with one must work."""

    class Foo(nnx.Module):
        def __init__(self, dim):
            self.w = nnx.Param(jax.random.normal(jax.random.key(0), dim))

        def __call__(self, x):
            x = self.perturb("grad_of_x", x)
            y = jnp.dot(x, self.w)
            self.sow(nnx.Intermediate, "y", y)
            return y

    @nnx.capture(nnx.Perturbation)
    def init_perturbations(model, x):
        graphdef, intms, params = nnx.split(model, nnx.Intermediate, nnx.Param)

        def forward(intms, params, x):
            return nnx.merge(graphdef, intms, params)(x)

        return nnx.vmap(forward, in_axes=(0, None, 0))(intms, params, x)

    def loss(model, perturbations, x):
        return nnx.capture(model, nnx.Intermediate, init=perturbations)(x)

    def loss_grad(model, perturbations, x):
        (_, perturb_grads), sowed = nnx.grad(loss, argnums=(0, 1), has_aux=True)(
            model, perturbations, x
        )
        return nnx.merge_state(perturb_grads, sowed)

    model, x = Foo(4), jnp.ones((3, 4))
    _, perturbations = init_perturbations(model, x)
    out = nnx.vmap(loss_grad, in_axes=(None, 0, 0))(model, perturbations, x)
    assert out["grad_of_x"][...].shape == (3, 4)
    np.testing.assert_allclose(out["grad_of_x"][...], jnp.tile(model.w[...], (3, 1)))
    assert out["y"].get_value()[0].shape == (3,)


def test_split_rngs_decorator_simple_graph_mode_splits_streams_in_containers():
    """flax.nnx's simple mode splits the streams found in the call's arguments
    (tuples and dicts are walked into), so a vmapped constructor maps them."""

    @nnx.split_rngs(splits=5, graph=True, graph_updates=False)
    @nnx.vmap(in_axes=0, axis_size=5, graph=True, graph_updates=False)
    def create(rngs):
        return nnx.Linear(3, 3, rngs=rngs)

    rngs = nnx.Rngs(0)
    m = create(rngs)
    assert m.kernel[...].shape == (5, 3, 3)
    assert int(rngs.default.count[...]) == 1


def test_with_rngs_copies_with_split_broadcast_and_forked_streams():
    """flax.nnx's with_rngs: a copy; the randomness guide's recurrent dropout
    broadcasts one key over the scan steps (the same mask at every step)."""
    rngs = nnx.Rngs(params=0, dropout=1, noise=2)
    new = nnx.with_rngs(
        rngs, split={"params": 4}, broadcast={"dropout": 3}, fork="noise"
    )
    assert new is not rngs
    assert new.params.key[...].shape == (4,)
    keys = new.dropout.key[...]
    assert keys.shape == (3,) and bool(jnp.all(keys == keys[0]))
    assert new.noise.key[...].shape == ()
    assert int(rngs.params.count[...]) == 1  # the original advanced once

    drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=0))
    bcast = nnx.with_rngs(drop, broadcast=4)
    axes = nnx.prefix(bcast, {"dropout": 0, ...: None})

    @nnx.scan(in_axes=(axes, nnx.Carry, 0), out_axes=(nnx.Carry, 0))
    def steps(d, c, x):
        return c, d(x)

    _, ys = steps(bcast, jnp.zeros(()), jnp.ones((4, 16)))
    masks = ys != 0
    assert bool(jnp.all(masks == masks[0]))  # one mask for every step
