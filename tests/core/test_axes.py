"""Pack traces say per argument how a scan or a vmap takes it (``lens/core/_axes.py``):
a scan's carry is carried step to step and its ``xs`` split along ``in_axes`` (or not
split, for ``broadcast``), a vmap's arguments split along their axis or not split,
keyword arguments passed whole; a scan's results come out part by part. Arguments
are named by the function's parameters; the text and HTML forms say the same."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import lens
from lens import nn, nnx
from lens.core import _axes, init, lift
from lens.display import PackTraceView
from tests.helpers import visible_text

SCAN_OUT = "outputs: carry from the last step, ys stacked along axis 0"


def _traced(fn):
    """The trace of ``fn()`` and the ``axes`` of its one top-level record."""
    with lens.trace() as t:
        fn()
    (rec,) = t.to_json()["packs"]
    return t, rec["axes"]


def _said(axes):
    return [(a["arg"], a["axis"]) for a in axes["in"]]


class Step(nn.Module):
    @nn.compact
    def __call__(self, carry, x):
        h = nn.Dense(3)(x)
        return carry + h.sum(), h


def test_a_linen_scan_carries_its_carry_and_splits_its_xs():
    class Stack(nn.Module):
        @nn.compact
        def __call__(self, xs):
            S = nn.scan(Step, variable_axes={"params": 0}, split_rngs={"params": True})
            return S(name="steps")(jnp.zeros(()), xs)

    t, axes = _traced(lambda: Stack().init(jax.random.key(0), jnp.ones((5, 2))))
    assert _said(axes) == [
        ("carry", "carried step to step"),
        ("x", "split along axis 0"),
    ]
    assert [(a["arg"], a["axis"]) for a in axes["out_parts"]] == [
        ("carry", "from the last step"),
        ("ys", "stacked along axis 0"),
    ]
    text = f"inputs: carry carried step to step, x split along axis 0 · {SCAN_OUT}"
    assert axes["text"] == text
    # the text/plain and HTML forms say the same words
    view = PackTraceView(t)
    assert f"  {text}" in view.text().splitlines()
    assert text in visible_text(view.html())


def test_the_loop_of_notebook_03_carries_its_zeros_and_splits_xs():
    class Counter(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            steps = self.variable("counter", "steps", lambda: jnp.zeros((), jnp.int32))
            steps.value += 1
            scale = self.param("scale", nn.initializers.ones, ())
            return c + scale * x, c

    class Loop(nn.Module):
        @nn.compact
        def __call__(self, xs):
            S = nn.scan(
                Counter,
                variable_broadcast="params",
                variable_carry="counter",
                split_rngs={"params": False},
            )
            return S()(jnp.zeros(()), xs)

    _, axes = _traced(lambda: Loop().init(jax.random.key(0), jnp.arange(5.0)))
    assert axes["text"] == (
        f"inputs: c carried step to step, x split along axis 0 · {SCAN_OUT}"
    )


def test_a_broadcast_input_is_not_split():
    class Cell(nn.Module):
        @nn.compact
        def __call__(self, c, context, x):
            return c + nn.Dense(1)(context + x).sum(), x

    class Run(nn.Module):
        @nn.compact
        def __call__(self, context, xs):
            S = nn.scan(
                Cell,
                variable_broadcast="params",
                split_rngs={"params": False},
                in_axes=(nn.broadcast, 0),
            )
            return S()(jnp.zeros(()), context, xs)

    _, axes = _traced(
        lambda: Run().init(jax.random.key(0), jnp.ones((3,)), jnp.ones((4, 3)))
    )
    assert _said(axes) == [
        ("c", "carried step to step"),
        ("context", "not split (broadcast)"),
        ("x", "split along axis 0"),
    ]


def test_a_pytree_input_is_said_once_and_a_pytree_of_axes_compactly():
    def body(scope, c, xs):
        return c + xs["a"].sum() + xs["b"], xs["b"]

    xs = {"a": jnp.ones((4, 3)), "b": jnp.ones((4,))}
    _, axes = _traced(lambda: init(lift.scan(body))(jax.random.key(0), 0.0, xs))
    assert _said(axes) == [("c", "carried step to step"), ("xs", "split along axis 0")]

    def two(scope, c, xs):
        return c + xs["a"].sum() + xs["b"].sum(), c

    per_leaf = lift.scan(two, in_axes=({"a": 0, "b": lift.broadcast},))
    _, axes = _traced(
        lambda: init(per_leaf)(
            jax.random.key(0), 0.0, {"a": jnp.ones((4, 3)), "b": jnp.ones((2,))}
        )
    )
    assert _said(axes) == [
        ("c", "carried step to step"),
        ("xs", "split by {a: 0, b: broadcast}"),
    ]


def test_in_axes_1_splits_along_axis_1_and_out_axes_stacks_there():
    class Seq(nn.Module):
        @nn.compact
        def __call__(self, xs):
            S = nn.scan(
                Step,
                variable_broadcast="params",
                split_rngs={"params": False},
                in_axes=1,
                out_axes=1,
            )
            return S()(jnp.zeros(()), xs)

    _, axes = _traced(lambda: Seq().init(jax.random.key(0), jnp.ones((2, 5, 4))))
    assert axes["text"] == (
        "inputs: carry carried step to step, x split along axis 1"
        " · outputs: carry from the last step, ys stacked along axis 1"
    )


def test_a_core_scan_names_star_xs_by_position():
    def body(scope, carry, *xs):
        return carry + sum(x.sum() for x in xs), None

    _, axes = _traced(
        lambda: init(lift.scan(body))(
            jax.random.key(0), 0.0, jnp.ones((3, 2)), jnp.ones((3,))
        )
    )
    assert _said(axes) == [
        ("carry", "carried step to step"),
        ("xs[0]", "split along axis 0"),
        ("xs[1]", "split along axis 0"),
    ]


def test_a_linen_vmap_splits_or_broadcasts_each_argument_and_passes_keywords():
    class Member(nn.Module):
        @nn.compact
        def __call__(self, x, y, *, train):
            return nn.Dense(2)(x + y) * (2.0 if train else 1.0)

    class Ens(nn.Module):
        @nn.compact
        def __call__(self, x, y):
            V = nn.vmap(
                Member,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes=(0, None),
            )
            return V()(x, y, train=True)

    _, axes = _traced(
        lambda: Ens().init(jax.random.key(0), jnp.ones((4, 3)), jnp.ones((3,)))
    )
    assert axes["text"] == (
        "inputs: x split along axis 0, y not split (broadcast),"
        " train not split (keyword argument) · outputs stacked along axis 0"
    )
    assert "out_parts" not in axes


def test_a_core_vmap_with_one_axis_names_every_argument():
    def f(scope, x, y):
        return x * y * scope.param("w", jax.nn.initializers.ones, ())

    vf = lift.vmap(f, variable_axes={"params": 0}, split_rngs={"params": True})
    _, axes = _traced(lambda: init(vf)(jax.random.key(0), jnp.ones(3), jnp.ones(3)))
    assert _said(axes) == [("x", "split along axis 0"), ("y", "split along axis 0")]
    vf = lift.vmap(
        f, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=(0, None)
    )
    _, axes = _traced(lambda: init(vf)(jax.random.key(0), jnp.ones(3), 2.0))
    assert _said(axes) == [("x", "split along axis 0"), ("y", "not split (broadcast)")]


def test_the_nnx_scan_caption_is_unchanged():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return x + self.linear(x)

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=0, out_axes=0)
    def make_stack(rngs):
        return Block(rngs)

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x, block):
        return block(x)

    stack = make_stack(nnx.Rngs(2))
    _, axes = _traced(lambda: forward(jnp.ones((2, 4)), stack))
    assert axes["text"] == (
        "inputs: x carried step to step, block split along axis 0 · outputs carried"
    )
    assert "out_parts" not in axes


def test_argument_names_skip_the_scope_and_number_star_args():
    def scanned(scope, carry, *xs, **kw):
        return carry

    def all_star(*args):
        return args

    assert _axes.arg_names(scanned, 3) == ["carry", "xs[0]", "xs[1]"]
    assert _axes.arg_names(scanned, 1) == ["carry"]
    assert _axes.arg_names(all_star, 2) == ["args[0]", "args[1]"]
    assert _axes.arg_names(lambda scope, x: x, 2) == ["x", "args[1]"]
    assert _axes.arg_names(print, 1) == ["args[0]"]
    x = jnp.ones(2)
    assert _axes.per_argument(0, (x, x)) == [0, 0]
    assert _axes.per_argument((0, None), (x, {"a": x})) == [0, None]
    assert _axes.per_argument(0, (x, None, ())) == [0, _axes.EMPTY, _axes.EMPTY]


def test_an_argument_with_no_arrays_has_nothing_to_split():
    """Notebook 03's ``Stack``: ``Block.__call__(self, c, _)`` scanned with ``None``."""

    class Block(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.tanh(nn.Dense(8)(c)), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            S = nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=3,
            )
            return S(name="blocks")(x, None)[0]

    _, axes = _traced(lambda: Stack().init(jax.random.key(0), jnp.ones((2, 8))))
    assert _said(axes) == [
        ("c", "carried step to step"),
        ("_", "nothing to split (no arrays)"),
    ]
