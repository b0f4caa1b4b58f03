"""lens.nnx against flax.nnx: the same layers give the same parameters for the same
Rngs and the same outputs; the same programs (scan stacks, loops, branches,
metrics, optimizers) give the same results. Skipped when flax is not installed."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")


def layers(nnx):
    r = lambda: nnx.Rngs(0)  # noqa: E731
    x4 = jax.random.normal(jax.random.key(1), (2, 6, 6, 3))
    x3 = jax.random.normal(jax.random.key(2), (2, 5, 4))
    return {
        "conv": (lambda: nnx.Conv(3, 4, (3, 3), rngs=r()), x4),
        "conv_strided_valid": (
            lambda: nnx.Conv(3, 4, 2, strides=2, padding="VALID", rngs=r()),
            x4,
        ),
        "conv_grouped": (
            lambda: nnx.Conv(3, 6, (2, 2), feature_group_count=3, rngs=r()),
            x4,
        ),
        "conv_transpose": (
            lambda: nnx.ConvTranspose(3, 2, (3, 3), strides=2, rngs=r()),
            x4,
        ),
        "embed": (lambda: nnx.Embed(7, 4, rngs=r()), jnp.array([[1, 6, 0]])),
        "einsum": (lambda: nnx.Einsum("btd,dk->btk", (4, 5), (5,), rngs=r()), x3),
        "rms_norm": (lambda: nnx.RMSNorm(4, rngs=r()), x3),
        "group_norm": (lambda: nnx.GroupNorm(4, num_groups=2, rngs=r()), x3),
        "layer_norm": (lambda: nnx.LayerNorm(4, rngs=r()), x3),
        "linear_general": (lambda: nnx.LinearGeneral(4, (2, 3), rngs=r()), x3),
        "mha": (
            lambda: nnx.MultiHeadAttention(
                2, 4, qkv_features=8, decode=False, rngs=r()
            ),
            x3,
        ),
        "prelu": (lambda: nnx.PReLU(0.2), x3),
        "instance_norm": (lambda: nnx.InstanceNorm(4, rngs=r()), x3),
        "lora": (
            lambda: nnx.LoRA(4, 2, 5, b_initializer=nnx.initializers.ones, rngs=r()),
            x3,
        ),
        "lora_linear": (lambda: nnx.LoRALinear(4, 5, lora_rank=2, rngs=r()), x3),
        "mha_gqa": (
            lambda: nnx.MultiHeadAttention(
                4, 4, num_kv_heads=2, decode=False, rngs=r()
            ),
            x3,
        ),
        "lstm": (lambda: nnx.RNN(nnx.LSTMCell(4, 3, rngs=r())), x3),
        "optimized_lstm": (lambda: nnx.RNN(nnx.OptimizedLSTMCell(4, 3, rngs=r())), x3),
        "gru": (lambda: nnx.RNN(nnx.GRUCell(4, 3, rngs=r())), x3),
        "bidirectional": (
            lambda: nnx.Bidirectional(
                nnx.RNN(nnx.LSTMCell(4, 3, rngs=r())),
                nnx.RNN(nnx.GRUCell(4, 2, rngs=nnx.Rngs(1))),
            ),
            x3,
        ),
        "simple_cell": (lambda: nnx.RNN(nnx.SimpleCell(4, 3, rngs=r())), x3),
        "gru_reverse": (
            lambda: nnx.RNN(nnx.GRUCell(4, 3, rngs=r()), reverse=True, keep_order=True),
            x3,
        ),
    }


LENS, FLAX = layers(lnnx), layers(fnnx)


def _pure(nnx, m):
    def plain(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.key_data(x)
        return x

    return jax.tree.map(plain, nnx.to_pure_dict(nnx.state(m)))


@pytest.mark.parametrize("name", sorted(LENS))
def test_same_parameters_and_outputs_as_flax_nnx(name):
    lmake, x = LENS[name]
    fmake, _ = FLAX[name]
    lm, fm = lmake(), fmake()
    lp, fp = _pure(lnnx, lm), _pure(fnnx, fm)
    assert jax.tree.structure(lp) == jax.tree.structure(fp)
    for a, b in zip(jax.tree.leaves(lp), jax.tree.leaves(fp)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(lm(x), fm(x), rtol=1e-5, atol=1e-5)


def test_rnn_seq_lengths_and_carry_match_flax():
    x = jax.random.normal(jax.random.key(3), (2, 5, 4))
    lengths = jnp.array([5, 2])
    out = []
    for nnx in (lnnx, fnnx):
        rnn = nnx.RNN(nnx.LSTMCell(4, 3, rngs=nnx.Rngs(0)), return_carry=True)
        out.append(rnn(x, seq_lengths=lengths))
    (lc, ly), (fc, fy) = out
    for a, b in zip(jax.tree.leaves(lc), jax.tree.leaves(fc)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ly[0], fy[0], rtol=1e-5, atol=1e-6)


def test_attention_decode_cache_matches_flax():
    x = jax.random.normal(jax.random.key(4), (1, 3, 4))
    results = []
    for nnx in (lnnx, fnnx):
        m = nnx.MultiHeadAttention(2, 4, decode=True, rngs=nnx.Rngs(0))
        m.init_cache(x.shape)
        mask = nnx.make_causal_mask(jnp.ones(x.shape[:2]))
        full = m(x, mask=mask, decode=False)
        steps = jnp.concatenate([m(x[:, i : i + 1]) for i in range(3)], axis=1)
        results.append((full, steps))
    (lf, ls), (ff, fs) = results
    np.testing.assert_allclose(lf, ff, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ls, fs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ls, lf, rtol=1e-5, atol=1e-5)  # decode == causal


def stack(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)
            self.norm = nnx.BatchNorm(4, rngs=rngs)

        def __call__(self, x):
            return nnx.relu(self.norm(self.linear(x)))

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def create(rngs):
        return Block(rngs)

    blocks = create(nnx.Rngs(0))

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x, block):
        return block(x)

    return blocks, forward


def test_layer_stack_made_by_vmap_and_run_by_scan_matches_flax():
    x = jax.random.normal(jax.random.key(5), (8, 4))
    (lb, lfwd), (fb, ffwd) = stack(lnnx), stack(fnnx)
    for a, b in zip(jax.tree.leaves(_pure(lnnx, lb)), jax.tree.leaves(_pure(fnnx, fb))):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    ly, fy = lfwd(x, lb), ffwd(x, fb)
    np.testing.assert_allclose(ly, fy, rtol=1e-5, atol=1e-6)
    # the batch statistics updated inside the loop came back, stacked
    lmean = lb.norm.mean.value
    assert lmean.shape == (3, 4)
    np.testing.assert_allclose(lmean, fb.norm.mean[...], rtol=1e-5, atol=1e-7)
    # and inside nnx.jit
    jy = lnnx.jit(lambda x, b: lfwd(x, b))(x, lb)
    assert jy.shape == (8, 4)


def test_scan_with_per_step_outputs_and_reverse():
    def f(c, x):
        return c + x, c * x

    xs = jnp.arange(6.0).reshape(3, 2)
    c, ys = lnnx.scan(f, reverse=True)(jnp.zeros(2), xs)
    jc, jys = jax.lax.scan(f, jnp.zeros(2), xs, reverse=True)
    np.testing.assert_allclose(c, jc)
    np.testing.assert_allclose(ys, jys)


def test_scan_broadcast_state_updates_carry_to_the_next_step_as_in_flax():
    """State broadcast into a scan (in_axes None) may be updated; each step reads
    what the previous one wrote, and the caller gets the last value: flax.nnx's
    rule with graph_updates=False. (flax's default mode drops those updates
    silently; lens carries them in every mode, see docs/porting.md.)"""
    means = []
    for nnx in (lnnx, fnnx):
        m = nnx.BatchNorm(2, rngs=nnx.Rngs(0))

        def f(c, x, m):
            return m(c + x), None

        xs = jnp.arange(24.0).reshape(3, 4, 2)
        scan = nnx.scan(f, in_axes=(nnx.Carry, 0, None), graph_updates=False)
        c, _ = scan(jnp.ones((4, 2)), xs, m)
        means.append((np.asarray(m.mean[...]), np.asarray(c)))
    np.testing.assert_allclose(means[0][0], means[1][0], rtol=1e-5)
    np.testing.assert_allclose(means[0][1], means[1][1], rtol=1e-5, atol=1e-6)
    assert np.abs(means[0][0]).sum() > 0


def lnnx_errors():
    from lens import errors

    return errors


def test_loops_and_branches_update_modules():
    for nnx in (lnnx, fnnx):
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        counter = nnx.BatchNorm(2, rngs=nnx.Rngs(0))

        def body(i, val):
            m, c, x = val
            return m, c, c(m(x))

        out = nnx.fori_loop(0, 3, body, (m, counter, jnp.ones((4, 2))))
        assert out[0] is m and out[1] is counter
        if nnx is lnnx:
            lres = (out[2], counter.mean.value)
        else:
            fres = (out[2], counter.mean[...])
    for a, b in zip(lres, fres):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_while_loop_cond_and_switch():
    m = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    x = jnp.ones((1, 2))

    def cond_fun(val):
        return val[0] < 3

    def body_fun(val):
        i, m, y = val
        return i + 1, m, m(y)

    i, m2, y = lnnx.while_loop(cond_fun, body_fun, (0, m, x))
    assert int(i) == 3 and m2 is m
    np.testing.assert_allclose(y, m(m(m(x))), rtol=1e-5)
    pos = lnnx.cond(True, lambda m, x: m(x), lambda m, x: -m(x), m, x)
    neg = lnnx.switch(1, [lambda m, x: m(x), lambda m, x: -m(x)], m, x)
    np.testing.assert_allclose(pos, -neg, rtol=1e-6)


def test_remat_gives_the_same_gradients():
    m = lnnx.Linear(3, 3, rngs=lnnx.Rngs(0))
    x = jnp.ones((2, 3))
    plain = lnnx.grad(lambda m: jnp.sum(jnp.sin(m(x))))(m)
    rem = lnnx.grad(lambda m: jnp.sum(jnp.sin(lnnx.remat(lambda m: m(x))(m))))(m)
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(rem)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_eval_shape_builds_an_abstract_model():
    abstract = lnnx.eval_shape(lambda: lnnx.Linear(3, 5, rngs=lnnx.Rngs(0)))
    assert isinstance(abstract.kernel.value, jax.ShapeDtypeStruct)
    assert abstract.kernel.value.shape == (3, 5)


def test_grads_are_plain_array_trees_that_optax_updates():
    m = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    g = lnnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2))) ** 2))(m)
    assert all(isinstance(a, jax.Array) for a in jax.tree.leaves(g))
    doubled = jax.tree.map(lambda a: 2 * a, g)
    np.testing.assert_allclose(doubled["kernel"].value, 2 * g["kernel"].value)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2))
    params = lnnx.state(m, lnnx.Param)
    updates, _ = tx.update(g, tx.init(params), params)
    new = optax.apply_updates(params, updates)
    assert jax.tree.structure(new) == jax.tree.structure(params)


@pytest.mark.filterwarnings("ignore:Some donated buffers")
def test_jit_keyword_static_and_donated_arguments():
    traces = []

    def f(m, x, *, scale, mode):
        traces.append(mode)
        y = m(x) * scale
        return y if mode == "plain" else -y

    m = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    jf = lnnx.jit(f, static_argnames="mode", donate_argnames="scale")
    x = jnp.ones((1, 2))
    a = jf(m, x, scale=jnp.float32(2.0), mode="plain")
    b = jf(m, x, scale=jnp.float32(3.0), mode="plain")
    c = jf(m, x, scale=jnp.float32(2.0), mode="neg")
    assert traces == ["plain", "neg"]
    np.testing.assert_allclose(a * 1.5, b, rtol=1e-6)
    np.testing.assert_allclose(a, -c, rtol=1e-6)
    with pytest.raises(ValueError, match="only accepts 2 positional"):
        lnnx.jit(lambda a, b: a, static_argnums=5)
    with pytest.raises(ValueError, match="Non-hashable static"):
        lnnx.jit(lambda a, n: a, static_argnums=1)(x, np.ones(2))


def test_metrics_match_flax():
    logits = jax.random.normal(jax.random.key(6), (6, 3))
    labels = jnp.array([0, 1, 2, 0, 1, 2])
    loss = jnp.linspace(0.0, 1.0, 6)
    out = []
    for nnx in (lnnx, fnnx):
        m = nnx.MultiMetric(
            accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss")
        )
        m.update(logits=logits, labels=labels, loss=loss)
        m.update(logits=logits[:2], labels=labels[:2], loss=loss[:2])
        w = nnx.metrics.Welford()
        w.update(values=loss)
        w.update(values=loss[:3] * 2)
        out.append((m.compute(), w.compute()))
        m.reset()
        assert np.isnan(float(m.compute()["loss"]))
    (lm, lw), (fm, fw) = out
    for k in ("accuracy", "loss"):
        np.testing.assert_allclose(lm[k], fm[k], rtol=1e-6)
    for k in ("mean", "standard_error_of_mean", "standard_deviation"):
        np.testing.assert_allclose(getattr(lw, k), getattr(fw, k), rtol=1e-5)


def test_list_items_live_at_integer_paths_and_pure_dicts_round_trip():
    class Net(lnnx.Module):
        def __init__(self, rngs):
            self.layers = lnnx.List([lnnx.Linear(2, 2, rngs=rngs) for _ in range(2)])

    net = Net(lnnx.Rngs(0))
    state = lnnx.state(net)
    paths = [p for p, _ in lnnx.to_flat_state(state)]
    assert ("layers", 0, "kernel") in paths and ("layers", 1, "bias") in paths
    pure = lnnx.to_pure_dict(state)
    zeros = jax.tree.map(jnp.zeros_like, pure)
    lnnx.replace_by_pure_dict(state, zeros)
    lnnx.update(net, state)
    assert float(jnp.abs(net.layers[1].kernel.value).sum()) == 0.0
    clone = lnnx.clone(net)
    assert isinstance(clone.layers, lnnx.List) and len(clone.layers) == 2
    with pytest.raises(lnnx_errors().GraphStructureError, match="no variable"):
        lnnx.replace_by_pure_dict(state, {"layers": {5: {"kernel": 0}}})


def test_vmap_creates_an_ensemble_with_state_axes_in_out_axes():
    def ensemble(nnx):
        @nnx.split_rngs(splits=4)
        @nnx.vmap(in_axes=0, out_axes=nnx.StateAxes({nnx.BatchStat: None, ...: 1}))
        def create(rngs):
            return nnx.Sequential(
                nnx.Linear(3, 2, rngs=rngs), nnx.BatchNorm(2, rngs=rngs)
            )

        return create(nnx.Rngs(0))

    out = [ensemble(lnnx), ensemble(fnnx)]
    lm, fm = out
    assert lm.layers[0].kernel.value.shape == (3, 4, 2)  # members on axis 1
    assert lm.layers[1].mean.value.shape == (2,)  # broadcast: one copy
    for a, b in zip(jax.tree.leaves(_pure(lnnx, lm)), jax.tree.leaves(_pure(fnnx, fm))):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _bad_scan_length():
    lnnx.scan(lambda c, x, y: (c, x), in_axes=(lnnx.Carry, 0, 0))(
        jnp.zeros(()), jnp.ones(3), jnp.ones(4)
    )


def _bad_while_structure():
    lnnx.while_loop(lambda v: v[0] < 2, lambda v: (v[0] + 1,), (0, jnp.ones(2)))


def _bad_scan_axis():
    lnnx.scan(lambda c, x: (c, x), in_axes=(lnnx.Carry, 2))(jnp.zeros(()), jnp.ones(3))


R = lambda: lnnx.Rngs(0)  # noqa: E731


@pytest.mark.parametrize(
    "make, error, match",
    [
        (
            lambda: lnnx.Conv(3, 4, 3, feature_group_count=2, rngs=R()),
            ValueError,
            "divisible",
        ),
        (
            lambda: lnnx.GroupNorm(6, num_groups=4, rngs=R()),
            ValueError,
            "Number of groups \\(4\\) does not divide the number of channels \\(6\\)",
        ),
        (
            lambda: lnnx.GroupNorm(6, num_groups=None, rngs=R()),
            ValueError,
            "Either `num_groups` or `group_size` should be specified",
        ),
        (lambda: lnnx.Einsum("ab", (2, 2), rngs=R()), ValueError, "two operands"),
        (
            lambda: lnnx.MultiHeadAttention(3, 4, rngs=R()),
            ValueError,
            "divisible by 'num_heads'",
        ),
        (
            lambda: lnnx.MultiHeadAttention(4, 4, num_kv_heads=3, rngs=R()),
            ValueError,
            "divisible by num_kv_heads",
        ),
        (
            lambda: lnnx.MultiHeadAttention(2, 4, decode=True, rngs=R())(
                jnp.ones((1, 1, 4))
            ),
            ValueError,
            "init_cache",
        ),
        (lambda: lnnx.metrics.Average("loss").update(values=1.0), TypeError, "'loss'"),
        (
            lambda: lnnx.metrics.Accuracy().update(
                logits=jnp.ones(3), labels=jnp.ones(3, int)
            ),
            ValueError,
            "one more axis",
        ),
        (lambda: lnnx.MultiMetric(a=3), TypeError, "not a Metric"),
        (
            lambda: lnnx.Dict().__setitem__(1, 2),
            KeyError,
            "attribute names",
        ),
        (_bad_scan_length, ValueError, "one length"),
        (_bad_scan_axis, ValueError, "cannot scan"),
        (
            _bad_while_structure,
            lnnx_errors().GraphStructureError,
            "structure of its input",
        ),
        (
            lambda: lnnx.scan(lambda c: c, in_axes=lnnx.Carry, out_axes=0)(jnp.ones(2)),
            ValueError,
            "the other must also have Carry",
        ),
        (
            lambda: lnnx.remat(lambda a: a, static_argnums=3)(jnp.ones(2)),
            ValueError,
            "static_argnums",
        ),
        (lambda: lnnx.Carry(), TypeError, "marker"),
    ],
)
def test_bad_input_raises_a_clear_error(make, error, match):
    with pytest.raises(error, match=match):
        make()


def _opt_run(nnx, cls_name="Optimizer"):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-1))
    if cls_name == "Optimizer":
        opt = nnx.Optimizer(model, tx, wrt=nnx.Param)
    else:
        opt = nnx.ModelAndOptimizer(model, tx, wrt=nnx.Param)

    @nnx.jit
    def step(model, opt, x):
        grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
        if cls_name == "Optimizer":
            return opt.update(model, grads)
        return opt.update(grads)

    updates = [step(model, opt, jnp.ones((4, 2))) for _ in range(3)]
    flat = jax.tree_util.tree_flatten_with_path(
        nnx.state(opt), is_leaf=lambda v: isinstance(v, nnx.Variable)
    )[0]
    paths = [(jax.tree_util.keystr(p), type(v).__name__) for p, v in flat]
    arrays = [np.asarray(a) for a in jax.tree.leaves((nnx.state(model), updates))]
    return paths, arrays, [np.asarray(v[...]) for _, v in flat]


@pytest.mark.parametrize("cls_name", ["Optimizer", "ModelAndOptimizer"])
def test_optimizer_state_is_flaxs_per_leaf_tree_and_steps_match(cls_name):
    paths, arrays, opt_values = _opt_run(lnnx, cls_name)
    fpaths, farrays, fopt_values = _opt_run(fnnx, cls_name)
    assert paths == fpaths
    assert ("['opt_state'][1][0]['mu']['kernel']", "OptVariable") in paths
    assert ("['opt_state'][1][0]['count']", "OptArray") in paths
    for a, b in zip(arrays + opt_values, farrays + fopt_values, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_optimizer_update_that_cannot_apply_writes_nothing():
    model = lnnx.Linear(2, 3, rngs=lnnx.Rngs(0))
    opt = lnnx.Optimizer(
        model,
        optax.chain(optax.scale_by_schedule(lambda n: n), optax.adam(1e-1)),
        wrt=lnnx.Param,
    )
    before = [
        np.asarray(a) for a in jax.tree.leaves((lnnx.state(model), lnnx.state(opt)))
    ]
    bad = [
        {"kernel": jnp.ones((2, 3))},  # a variable is missing
        {"kernel": jnp.ones((1, 3)), "bias": jnp.ones(3)},  # would broadcast
    ]
    for grads in bad:
        with pytest.raises(ValueError, match="Optimizer.update: the gradient"):
            opt.update(model, lnnx.State(grads))
    after = [
        np.asarray(a) for a in jax.tree.leaves((lnnx.state(model), lnnx.state(opt)))
    ]
    assert (
        len(before) == len(after) == 9
    )  # kernel, bias; schedule count; adam count, mu, nu; step
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "mask",
    [
        np.array([True, True, False, True] * 3),  # one per channel
        np.arange(120).reshape(10, 12) % 3 != 0,  # one per element
    ],
    ids=["per_channel", "full"],
)
def test_group_norm_mask_broadcasts_as_flax(mask):
    """GroupNorm's mask may be any shape broadcastable to x (nnx and Linen)."""
    from flax import linen as fnn

    from lens import nn as lnn

    x = jax.random.normal(jax.random.key(0), (10, 12))
    ours = lnnx.GroupNorm(12, num_groups=3, rngs=lnnx.Rngs(0))(x, mask=mask)
    theirs = fnnx.GroupNorm(12, num_groups=3, rngs=fnnx.Rngs(0))(x, mask=mask)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    v = fnn.GroupNorm(num_groups=3).init(jax.random.key(1), x)
    linen_ours = lnn.GroupNorm(num_groups=3).apply(v, x, mask=mask)
    linen_theirs: Any = fnn.GroupNorm(num_groups=3).apply(v, x, mask=mask)
    np.testing.assert_allclose(linen_ours, linen_theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(linen_ours, ours, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "q,k,v,dropout",
    [
        ((2, 16, 4, 8), (16, 4, 8), (16, 4, 8), 0.1),  # rank
        ((2, 16, 4, 8), (3, 16, 4, 8), (3, 16, 4, 8), 0.1),  # batch dims
        ((2, 16, 4, 8), (2, 16, 4, 8), (2, 15, 4, 8), 0.1),  # k, v lengths
        ((2, 16, 4, 8), (2, 16, 4, 7), (2, 16, 4, 8), 0.1),  # depths
        ((1, 4, 5, 8), (1, 4, 2, 8), (1, 4, 2, 8), 0.0),  # heads, fast path
        ((1, 4, 5, 8), (1, 4, 2, 8), (1, 4, 2, 8), 0.1),  # heads, weights path
    ],
)
def test_attention_shape_errors_start_as_flaxs(q, k, v, dropout):
    def error(nnx):
        with pytest.raises(ValueError) as info:
            nnx.dot_product_attention(
                jnp.ones(q), jnp.ones(k), jnp.ones(v), dropout_rate=dropout,
                dropout_rng=jax.random.key(0),
            )  # fmt: skip
        return str(info.value)

    ours, theirs = error(lnnx), error(fnnx)
    first = ours.splitlines()[0]
    assert theirs.startswith(first.rstrip(".")) and len(first) > 20
    assert "[batch..., length, heads, depth]" in ours  # and how to fix it


def _recurrent_dropout_rnn(nnx):
    class Cell(nnx.OptimizedLSTMCell):
        def __init__(self, *, rngs, **kwargs):
            super().__init__(rngs=rngs, **kwargs)
            self.drop = nnx.Dropout(
                0.5, deterministic=False, rng_collection="recurrent_dropout", rngs=rngs
            )

        def __call__(self, carry, x):
            carry, y = super().__call__(carry, x)
            return carry, self.drop(y)

    cell = Cell(in_features=3, hidden_features=4, rngs=nnx.Rngs(0, recurrent_dropout=1))
    return nnx.RNN(cell, broadcast_rngs="recurrent_dropout")


def test_rnn_recurrent_dropout_keeps_one_mask_per_call_as_flax():
    """broadcast_rngs: every time step of a call drops the same units; each call
    draws one new key (the stream's count goes up by one), as in flax.nnx."""
    ours, theirs = _recurrent_dropout_rnn(lnnx), _recurrent_dropout_rnn(fnnx)
    x = jnp.ones((2, 5, 3))
    for _ in range(2):
        y = ours(x)
        np.testing.assert_allclose(y, theirs(x), rtol=1e-5, atol=1e-6)
        dropped = np.asarray(y) == 0
        assert dropped.any() and (dropped == dropped[:, :1]).all()  # same each step
    cell: Any = ours.cell
    assert int(cell.drop.rngs.count[...]) == 2


def test_lstm_in_half_precision_initializes_as_flax():
    ours = lnnx.LSTMCell(3, 4, param_dtype=jnp.float16, rngs=lnnx.Rngs(0))
    theirs = fnnx.LSTMCell(3, 4, param_dtype=jnp.float16, rngs=fnnx.Rngs(0))
    assert ours.hi.kernel.value.dtype == jnp.float16
    np.testing.assert_array_equal(ours.hi.kernel.value, theirs.hi.kernel[...])


@pytest.mark.parametrize(
    "cell", ["LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell"]
)
def test_keep_rngs_stores_a_fork_of_the_carry_stream_as_flax(cell):
    # the fork draws from the Rngs before the cell's Linears: the layers made
    # after it get flax's keys, and the cell's state has the stream
    import warnings

    out = {}
    for name, nnx in (("lens", lnnx), ("flax", fnnx)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rngs = nnx.Rngs(0)
            c = getattr(nnx, cell)(3, 4, rngs=rngs, keep_rngs=True)
            after = nnx.Linear(2, 2, rngs=rngs).kernel[...]
        assert any("keep_rngs argument is deprecated" in str(w.message) for w in caught)
        keys = [k for k, _ in nnx.state(c).flat_state()]
        assert ("rngs", "key") in keys and ("rngs", "count") in keys
        carry = c.initialize_carry((2, 3))  # from the kept stream
        plain = getattr(nnx, cell)(3, 4, rngs=nnx.Rngs(0))
        assert plain.rngs is None
        out[name] = (after, jax.tree.leaves(carry))
    np.testing.assert_allclose(out["lens"][0], out["flax"][0], rtol=1e-6)
    for a, b in zip(out["lens"][1], out["flax"][1], strict=True):
        np.testing.assert_allclose(a, b)


def _layers(nnx):
    r = lambda: nnx.Rngs(0)  # noqa: E731
    return {
        "Linear": nnx.Linear(2, 3, rngs=r()),
        "LinearGeneral": nnx.LinearGeneral(2, 3, rngs=r()),
        "Einsum": nnx.Einsum("ab,bc->ac", (2, 3), rngs=r()),
        "Conv": nnx.Conv(2, 3, (3,), rngs=r()),
        "ConvTranspose": nnx.ConvTranspose(2, 3, (3,), rngs=r()),
        "Embed": nnx.Embed(4, 3, rngs=r()),
        "BatchNorm": nnx.BatchNorm(3, rngs=r()),
        "LayerNorm": nnx.LayerNorm(3, rngs=r()),
        "RMSNorm": nnx.RMSNorm(3, rngs=r()),
        "GroupNorm": nnx.GroupNorm(4, num_groups=2, rngs=r()),
        "InstanceNorm": nnx.InstanceNorm(4, rngs=r()),
        "Dropout": nnx.Dropout(0.5, rngs=r()),
        "MultiHeadAttention": nnx.MultiHeadAttention(2, 4, decode=False, rngs=r()),
        "LSTMCell": nnx.LSTMCell(2, 3, rngs=r()),
        "OptimizedLSTMCell": nnx.OptimizedLSTMCell(2, 3, rngs=r()),
        "GRUCell": nnx.GRUCell(2, 3, rngs=r()),
        "SimpleCell": nnx.SimpleCell(2, 3, rngs=r()),
        "RNN": nnx.RNN(nnx.GRUCell(2, 3, rngs=r())),
        "LoRALinear": nnx.LoRALinear(2, 3, lora_rank=1, rngs=r()),
        "Optimizer": nnx.Optimizer(
            nnx.Linear(1, 1, rngs=r()), optax.sgd(0.1), wrt=nnx.Param
        ),
    }


def test_layers_have_flaxs_attributes_in_flaxs_order():
    # what vars(layer), its repr and code reading layer.kernel_shape,
    # layer.group_size or cell.dtype see
    def public(m):
        return [k for k in vars(m) if not k.startswith(("_pytree__", "_lens_"))]

    ours, theirs = _layers(lnnx), _layers(fnnx)
    for name in theirs:
        assert public(ours[name]) == public(theirs[name]), name
    assert ours["Conv"].kernel_shape == theirs["Conv"].kernel_shape == (3, 2, 3)
    assert ours["ConvTranspose"].kernel_shape == (3, 2, 3)
    gn = ours["GroupNorm"]
    assert (gn.feature_axis, gn.num_groups, gn.group_size, gn.num_features) == (
        -1,
        2,
        2,
        4,
    )
    assert ours["Embed"].dtype == theirs["Embed"].dtype == jnp.float32
    for cell in ("LSTMCell", "GRUCell"):
        assert ours[cell].dtype is None and callable(ours[cell].promote_dtype)


def test_rnn_rngs_of_another_kind_is_flaxs_value_error():
    for nnx in (lnnx, fnnx):
        with pytest.raises(ValueError, match="Expected rngs to be a jax.Array, int"):
            nnx.RNN(nnx.GRUCell(2, 3, rngs=nnx.Rngs(0)), rngs="carry")
        assert nnx.RNN(nnx.GRUCell(2, 3, rngs=nnx.Rngs(0)), rngs=False).rngs is None


@pytest.mark.parametrize("return_carry", [False, True])
def test_rnn_runs_past_a_sequences_end_as_flax_and_returns_its_last_carry(
    return_carry,
):
    # flax.nnx's RNN computes every step (outputs past seq_lengths are the
    # cell's) and returns each sequence's carry at its last step; lens used to
    # freeze the carry there, which changed the outputs after it
    x = jnp.asarray(np.random.RandomState(0).randn(2, 5, 3), jnp.float32)
    got = {}
    for name, nnx in (("lens", lnnx), ("flax", fnnx)):
        rnn = nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(0)), return_carry=return_carry)
        got[name] = jax.tree.leaves(rnn(x, seq_lengths=jnp.array([5, 3])))
    for a, b in zip(got["lens"], got["flax"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
