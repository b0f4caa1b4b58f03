"""lens.memory: a step's bytes by category and module, summing to XLA's analysis,
and a donation hint that keeps its promise."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
import pytest

import lens
from lens import nn, nnx
from lens._instruments.memory import (
    GRADIENTS,
    INPUTS,
    OPTIMIZER,
    PARAMETERS,
    TEMPORARIES,
)
from lens.training import train_state


def _xla(fn, *args):
    return fn.lower(*args).compile().memory_analysis()


def _sums_to_xla(report, analysis):
    cats = report.categories()
    total = analysis.argument_size_in_bytes + analysis.output_size_in_bytes
    total += analysis.temp_size_in_bytes - analysis.alias_size_in_bytes
    assert abs(sum(cats.values()) - total) <= 0.05 * total
    args = sum(
        b for c, b in cats.items() if c not in (GRADIENTS, TEMPORARIES, "new outputs")
    )
    assert (
        abs(args - analysis.argument_size_in_bytes)
        <= 0.05 * analysis.argument_size_in_bytes
    )


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(3):
            x = nn.relu(nn.Dense(128)(x))
        return nn.Dense(1)(x)


def linen_step(state, x, y):
    def loss(p):
        return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)

    return state.apply_gradients(grads=jax.grad(loss)(state.params))


def linen_state(model, x):
    params = model.init(jax.random.key(0), x)["params"]
    return train_state.TrainState.create(
        apply_fn=model.apply, params=params, tx=optax.adam(1e-3)
    )


def test_linen_mlp_categories_sum_to_xla_and_name_modules():
    x, y = jnp.ones((64, 32)), jnp.ones((64, 1))
    state = linen_state(MLP(), x)
    step = jax.jit(linen_step)
    report = lens.memory(step, state, x, y)
    _sums_to_xla(report, _xla(step, state, x, y))
    cats = report.categories()
    params = sum(a.nbytes for a in jax.tree.leaves(state.params))
    assert cats[PARAMETERS] == params
    opt = sum(a.nbytes for a in jax.tree.leaves(state.opt_state)) + 4  # and step
    assert cats[OPTIMIZER] == opt
    assert cats[INPUTS] == x.nbytes + y.nbytes
    assert report.differentiates and cats[GRADIENTS] > 0
    assert set(report.by_module()) == {"/Dense_0", "/Dense_1", "/Dense_2", "/Dense_3"}
    assert report.by_module()["/Dense_0"][PARAMETERS] == (32 * 128 + 128) * 4


def test_the_donation_hint_keeps_its_promise():
    x, y = jnp.ones((64, 32)), jnp.ones((64, 1))
    state = linen_state(MLP(), x)
    report = lens.memory(jax.jit(linen_step), state, x, y)
    [hint] = report.donations
    assert hint.argument == "state" and hint.position == 0
    followed = lens.memory(
        jax.jit(linen_step, donate_argnums=hint.position), state, x, y
    )
    assert followed.donations == ()
    if report.peak_bytes is not None:
        saved = report.peak_bytes - followed.peak_bytes
        assert saved >= 0.95 * hint.bytes
    assert followed.alias_bytes >= 0.95 * hint.bytes


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=32)(h)
        x = x + h
        return x + nn.Dense(32)(nn.gelu(nn.Dense(64)(nn.LayerNorm()(x)))), None


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        blocks = nn.scan(
            Block,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=4,
        )
        x, _ = blocks(name="blocks")(x, None)
        return x.mean()


def test_a_scanned_transformer_stack_sums_to_xla():
    x = jnp.ones((2, 8, 32))
    state = linen_state(Stack(), x)

    def step(state, x):
        grads = jax.grad(lambda p: state.apply_fn({"params": p}, x))(state.params)
        return state.apply_gradients(grads=grads)

    step = jax.jit(step)
    report = lens.memory(step, state, x)
    _sums_to_xla(report, _xla(step, state, x))
    assert "/blocks" in report.by_module()


class Member(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(16, 16, rngs=rngs)
        self.norm = nnx.BatchNorm(16, rngs=rngs)

    def __call__(self, x):
        return self.norm(self.linear(x))


def test_an_nnx_vmapped_ensemble_and_an_optimizer_step():
    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return Member(nnx.Rngs(key))

    ensemble = make(jax.random.split(jax.random.key(0), 4))
    optimizer = nnx.Optimizer(ensemble, optax.adam(1e-3), wrt=nnx.Param)
    x = jnp.ones((8, 16))

    @nnx.jit
    def step(model, optimizer, x):
        def loss(m):
            out = nnx.vmap(lambda m, x: m(x), in_axes=(0, None))(m, x)
            return jnp.mean(out**2)

        optimizer.update(model, nnx.grad(loss)(model))

    report = lens.memory(step, ensemble, optimizer, x)
    _sums_to_xla(report, step.lower(ensemble, optimizer, x).compile().memory_analysis())
    cats = report.categories()
    params = nnx.state(ensemble, nnx.Param)
    assert cats[PARAMETERS] == sum(a.nbytes for a in jax.tree.leaves(params))
    assert cats["BatchStat"] == sum(
        a.nbytes for a in jax.tree.leaves(nnx.state(ensemble, nnx.BatchStat))
    )
    assert cats[OPTIMIZER] > 2 * cats[PARAMETERS] * 0.99  # Adam's two moments
    assert set(report.by_module()) >= {"/linear", "/norm"}
    assert {d.argument for d in report.donations} >= {"optimizer"}


def test_a_plain_function_is_jitted_and_bad_input_says_how():
    report = lens.memory(lambda a: a @ a.T, jnp.ones((64, 64)))
    assert report.categories()[INPUTS] == 64 * 64 * 4
    with pytest.raises(TypeError, match="lens.memory measures a function"):
        lens.memory(3, jnp.ones(2))


def test_views_text_html_no_scripts():
    x, y = jnp.ones((64, 32)), jnp.ones((64, 1))
    state = linen_state(MLP(), x)
    report = lens.memory(jax.jit(linen_step), state, x, y)
    bundle = report._repr_mimebundle_()
    html = bundle["text/html"]
    assert "<script" not in html and "<style" not in html
    assert "parameters" in html and "/Dense_0" in html and "donate state" in html
    assert "title=" in html
    assert "optimizer state" in bundle["text/plain"]


def test_the_docs_example_prints_what_the_page_says(capsys):
    import pathlib
    import re

    page = (pathlib.Path(__file__).parents[2] / "docs" / "memory.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    exec(compile(code, "<docs>", "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert f"prints `{printed}`" in page


def test_an_nnx_mlp_step_sums_to_xla():
    class MLPx(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(32, 32, rngs=rngs) for _ in range(3)])

        def __call__(self, x):
            for layer in self.layers:
                x = nnx.relu(layer(x))
            return x

    model = MLPx(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = jnp.ones((16, 32))

    @nnx.jit
    def step(model, optimizer, x):
        optimizer.update(model, nnx.grad(lambda m: jnp.mean(m(x) ** 2))(model))

    report = lens.memory(step, model, optimizer, x)
    _sums_to_xla(report, step.lower(model, optimizer, x).compile().memory_analysis())
    assert report.categories()[PARAMETERS] == 3 * (32 * 32 + 32) * 4
    assert set(report.by_module()) == {"/layers"}


class LinenMember(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(16)(x)))


def test_a_linen_vmapped_ensemble_sums_to_xla():
    Ensemble = nn.vmap(  # noqa: N806 - a module class
        LinenMember,
        variable_axes={"params": 0},
        split_rngs={"params": True},
        in_axes=None,
        axis_size=4,
    )
    x, y = jnp.ones((8, 16)), jnp.ones((4, 8, 1))
    state = linen_state(Ensemble(), x)

    def step(state, x, y):
        def loss(p):
            return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)

        return state.apply_gradients(grads=jax.grad(loss)(state.params))

    step = jax.jit(step)
    report = lens.memory(step, state, x, y)
    _sums_to_xla(report, _xla(step, state, x, y))
    params = sum(a.nbytes for a in jax.tree.leaves(state.params))
    assert report.categories()[PARAMETERS] == params
    assert set(report.by_module()) == {"/Dense_0", "/Dense_1"}


def test_an_nnx_scanned_block_stack_sums_to_xla():
    class NnxBlock(nnx.Module):
        def __init__(self, rngs):
            self.norm = nnx.LayerNorm(16, rngs=rngs)
            self.linear = nnx.Linear(16, 16, rngs=rngs)

        def __call__(self, x):
            return x + self.linear(self.norm(x))

    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return NnxBlock(nnx.Rngs(key))

    blocks = make(jax.random.split(jax.random.key(0), 6))
    optimizer = nnx.Optimizer(blocks, optax.adam(1e-3), wrt=nnx.Param)
    x = jnp.ones((4, 16))

    @nnx.jit
    def step(blocks, optimizer, x):
        def loss(b):
            @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
            def forward(block, h):
                return block(h)

            return jnp.mean(forward(b, x) ** 2)

        optimizer.update(blocks, nnx.grad(loss)(blocks))

    report = lens.memory(step, blocks, optimizer, x)
    _sums_to_xla(report, step.lower(blocks, optimizer, x).compile().memory_analysis())
    params = nnx.state(blocks, nnx.Param)
    assert report.categories()[PARAMETERS] == sum(
        a.nbytes for a in jax.tree.leaves(params)
    )
    assert set(report.by_module()) >= {"/linear", "/norm"}
