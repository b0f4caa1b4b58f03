"""flax.nnx's functional helpers in lens.nnx (pop, variables, state partitioning,
TrainState, GraphDef.apply, cached_partial, Pytree, generic Variables), checked
against flax.nnx on the same programs."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lens import nnx as lnnx
from tests.helpers import tabulate

fnnx = pytest.importorskip("flax.nnx")
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _model(nnx):
    class Loss(nnx.Variable):
        pass

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 3, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)

        def __call__(self, x):
            y = self.bn(self.linear(x))
            self.loss = Loss(jnp.mean(y**2))
            return y

    return Model(nnx.Rngs(0)), Loss


@BOTH
def test_pop_removes_and_returns_variables(nnx):
    model, loss_t = _model(nnx)
    model(jnp.ones((4, 2)))
    losses = nnx.pop(model, loss_t)
    assert list(losses.keys()) == ["loss"]
    assert not hasattr(model, "loss")
    with pytest.raises(ValueError, match="^Expected at least one filter"):
        nnx.pop(model)


@BOTH
def test_variables_are_the_models_own(nnx):
    model, _ = _model(nnx)
    params, stats = nnx.variables(model, nnx.Param, nnx.BatchStat)
    assert params["linear"]["kernel"] is model.linear.kernel
    assert sorted(stats["bn"].keys()) == ["mean", "var"]


def test_state_partitioning_helpers_match_flax():
    out = {}
    for name, nnx in (("lens", lnnx), ("flax", fnnx)):
        model, _ = _model(nnx)
        st = nnx.state(model)
        params, rest = nnx.split_state(st, nnx.Param, ...)
        only = nnx.filter_state(st, nnx.BatchStat)
        merged = nnx.merge_state(params, rest)
        doubled = nnx.map_state(lambda p, v: v.replace(v.value * 2), params)
        out[name] = (
            sorted(
                jax.tree_util.keystr(k)
                for k, _ in jax.tree_util.tree_leaves_with_path(only)
            ),
            [np.asarray(x) for x in jax.tree.leaves(merged)],
            [np.asarray(x) for x in jax.tree.leaves(doubled)],
        )
    assert out["lens"][0] == out["flax"][0]
    for a, b in zip(
        out["lens"][1] + out["lens"][2], out["flax"][1] + out["flax"][2], strict=True
    ):
        np.testing.assert_allclose(a, b)


@BOTH
def test_set_metadata_and_find_duplicates(nnx):
    model, _ = _model(nnx)
    nnx.set_metadata(model, only=nnx.Param, tag="w")
    assert model.linear.kernel.tag == "w" and not model.bn.mean.has_metadata("tag")
    model.shared = model.linear
    dups = nnx.find_duplicates(model)
    assert sorted(map(sorted, dups)) == [[("linear",), ("shared",)]]


@BOTH
def test_generic_variable_types_and_pytree_base(nnx):
    class Count(nnx.Variable[nnx.A]):
        pass

    class Counter(nnx.Pytree):
        def __init__(self):
            self.count = Count(jnp.array(0))

    c = Counter()
    assert isinstance(c.count, nnx.Variable)
    assert jax.tree.leaves(Count(jnp.array(3))) == [jnp.array(3)]


def test_train_state_and_graphdef_apply_as_flax_toy_example():
    def run(nnx):
        model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        graphdef, params = nnx.split(model, nnx.Param)
        state = nnx.TrainState.create(graphdef, params=params, tx=optax.sgd(0.1))
        x, y = jnp.ones((4, 2)), jnp.zeros((4, 1))

        @jax.jit
        def step(state):
            def loss_fn(params):
                pred, _ = state.apply(params)(x)
                return jnp.mean((pred - y) ** 2)

            grads = jax.grad(loss_fn)(state.params)
            return state.apply_gradients(grads=grads)

        for _ in range(3):
            state = step(state)
        out, (_, new_state) = nnx.call((graphdef, state.params))(x)
        again, _ = graphdef.apply(state.params)(x)  # GraphDef.apply as call
        np.testing.assert_array_equal(again, out)
        return int(state.step), np.asarray(out)

    (ls, lo), (fs, fo) = run(lnnx), run(fnnx)
    assert ls == fs == 3
    np.testing.assert_allclose(lo, fo, rtol=1e-6)


def test_cached_partial_keeps_updating_the_model():
    model = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    opt = lnnx.Optimizer(model, optax.sgd(0.1), wrt=lnnx.Param)

    @lnnx.jit
    def step(model, opt, x):
        grads = lnnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
        opt.update(model, grads)

    before = np.asarray(model.kernel.value)
    cached = lnnx.cached_partial(step, model, opt)
    cached(jnp.ones((1, 2)))
    cached(jnp.ones((1, 2)))
    assert int(opt.step.value) == 2
    assert not np.allclose(before, model.kernel.value)


def test_merge_takes_flaxs_keywords():
    model = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    g, s = lnnx.split(model)
    m2 = lnnx.merge(g, s, copy=True)
    assert m2.kernel is not model.kernel
    np.testing.assert_array_equal(m2.kernel.value, model.kernel.value)


def test_grad_filter_applies_to_array_attributes():
    class MLP(lnnx.Module):
        def __init__(self):
            self.w = jnp.ones((2, 2))
            self.count = jnp.array(0)

        def __call__(self, x):
            self.count += 1
            return x @ self.w

    is_w = lambda path, value: path[-1] == "w"  # noqa: E731
    grads = lnnx.grad(
        lambda m: jnp.sum(m(jnp.ones((1, 2)))), argnums=lnnx.DiffState(0, is_w)
    )(MLP())
    assert list(grads.keys()) == ["w"]


def test_flax_submodule_imports_port():
    from lens.nnx import graph, rnglib, statelib, traversals, variablelib

    model = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    gdef, st = graph.split(model)
    assert isinstance(gdef, graph.GraphDef) and isinstance(st, statelib.State)
    assert variablelib.VariableState is lnnx.Variable
    assert isinstance(rnglib.Rngs(0), lnnx.Rngs)
    flat = traversals.flatten_mapping(st)
    assert set(flat) == {("bias",), ("kernel",)}


@BOTH
def test_flatten_unflatten_roundtrip(nnx):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    gdef, flat = nnx.flatten(model)
    assert [tuple(p) for p in flat.paths] == [("bias",), ("kernel",)]
    again = nnx.unflatten(gdef, flat)
    np.testing.assert_array_equal(again.kernel[...], model.kernel[...])


def test_reseed_and_fork_rngs_match_flax():
    def run(nnx):
        d = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=0))
        nnx.reseed(d, dropout=7)
        k1 = jax.random.key_data(d.rngs())
        backups = nnx.fork_rngs(d)
        forked = jax.random.key_data(d.rngs())
        nnx.restore_rngs(backups)
        return k1, forked, jax.random.key_data(d.rngs())

    for a, b in zip(run(lnnx), run(fnnx), strict=True):
        np.testing.assert_array_equal(a, b)


def test_make_jaxpr_and_checkify_over_objects():
    from jax.experimental import checkify

    model = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    jaxpr = lnnx.make_jaxpr(lambda m, x: m(x))(model, jnp.ones((1, 2)))
    assert "dot_general" in str(jaxpr)

    def f(m, x):
        checkify.check(jnp.all(x > 0), "x must be positive")
        return m(x)

    err, y = lnnx.checkify(f)(model, jnp.ones((1, 2)))
    assert err.get() is None and y.shape == (1, 3)
    err, _ = lnnx.checkify(f)(model, -jnp.ones((1, 2)))
    assert "x must be positive" in err.get()


def test_graph_mode_switch_is_scoped_to_the_block():
    with lnnx.set_graph_mode(False):
        assert lnnx.set_graph_mode.current_value() is False
        with lnnx.set_graph_mode(True):
            assert lnnx.set_graph_mode.current_value() is True
        assert lnnx.set_graph_mode.current_value() is False
    assert lnnx.set_graph_mode.current_value() is True


def test_tabulate_prints_flaxs_table():
    def table(nnx):
        class M(nnx.Module):
            def __init__(self, rngs):
                self.l = nnx.Linear(2, 3, rngs=rngs)
                self.bn = nnx.BatchNorm(3, rngs=rngs)

            def __call__(self, x):
                return self.bn(self.l(x))

        m = M(nnx.Rngs(0))
        text = tabulate(
            nnx,
            m,
            jnp.ones((1, 2)),
            console_kwargs={"width": 150, "force_terminal": False},
        )
        assert float(jnp.sum(m.bn.mean[...])) == 0.0  # the model was not run
        return text

    ours, theirs = table(lnnx), table(fnnx)
    assert ours.splitlines()[1:] == theirs.splitlines()[1:]  # the title's spacing aside
    assert "kernel: float32[2,3]" in ours and "Total Parameters: 21 (84 B)" in ours


def test_misuse_raises_clear_errors():
    with pytest.raises(TypeError, match="on_get_value must be a function"):
        lnnx.with_metadata(lnnx.initializers.ones, on_get_value=3)
    p = lnnx.Param(jnp.ones(2))
    with pytest.raises(ValueError, match="Cannot change `hijax` metadata"):
        p.set_metadata(hijax=True)
    with pytest.raises(TypeError, match="rngs must be a Rngs, RngStream or None"):
        lnnx.Dropout(0.5, rngs=3)
    f = lnnx.custom_vjp(lambda m: m)
    with pytest.raises(NotImplementedError, match="symbolic_zeros"):
        f.defvjp(lambda m: (m, None), lambda r, g: (g,), symbolic_zeros=True)

    @lnnx.split_rngs(splits=4)
    @lnnx.vmap(in_axes=0, out_axes=0)
    def make(rngs):
        return lnnx.Dropout(0.5, rngs=rngs)

    members = make(lnnx.Rngs(dropout=0))
    with pytest.raises(ValueError, match="policy='match_shape'"):
        lnnx.reseed(members, dropout=1)
    lnnx.reseed(members, dropout=1, policy="match_shape")
    assert members.rngs.key.value.shape == (4,)
    with pytest.raises(ValueError, match='policy must be "scalars_only"'):
        lnnx.reseed(members, dropout=1, policy="bogus")
