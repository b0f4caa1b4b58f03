"""A user's error inside a lens transform ends at the user's line: lens's own frames
are hidden from the traceback, as JAX hides its internals (and Flax its own)."""

import pathlib
import traceback

import jax
import jax.numpy as jnp
import pytest

import lens
from lens import nn, nnx

LENS = str(pathlib.Path(lens.__file__).parent)


class Bad(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 3, rngs=rngs)

    def __call__(self, x):
        return self.linear(x) @ jnp.ones((5, 2))  # the user's bug: 3 != 5


class BadLinen(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x) @ jnp.ones((5, 2))


def _frames(fn):
    with pytest.raises(TypeError) as info:
        fn()
    return traceback.extract_tb(info.value.__traceback__)


def _lens_frames(frames):
    return [
        f"{f.filename}:{f.lineno} {f.name}"
        for f in frames
        if f.filename.startswith(LENS)
    ]


x = jnp.ones((2, 1, 4))
model = Bad(nnx.Rngs(0))

CALLS = {
    "nnx.jit": lambda: nnx.jit(lambda m, x: m(x))(model, x[0]),
    "nnx.vmap": lambda: nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(model, x),
    "nnx.grad": lambda: nnx.grad(lambda m, x: m(x).sum())(model, x[0]),
    "nnx.value_and_grad": lambda: nnx.value_and_grad(lambda m, x: m(x).sum())(
        model, x[0]
    ),
    "nnx.remat": lambda: nnx.remat(lambda m, x: m(x))(model, x[0]),
    "nnx.cond": lambda: nnx.cond(
        True, lambda m, x: m(x), lambda m, x: m(x), model, x[0]
    ),
    "nnx.scan": lambda: nnx.scan(
        lambda m, c, xi: (c, m(xi)), in_axes=(None, nnx.Carry, 0)
    )(model, 0.0, x),
    "nnx.eval_shape": lambda: nnx.eval_shape(lambda m, x: m(x), model, x[0]),
    "nn.init": lambda: BadLinen().init(jax.random.key(0), x[0]),
    "nn.vmap": lambda: nn.vmap(
        BadLinen, variable_axes={"params": 0}, split_rngs={"params": True}
    )().init(jax.random.key(0), x),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_user_error_inside_a_transform_hides_lens_frames(name):
    frames = _frames(CALLS[name])
    assert _lens_frames(frames) == []
    # the last frame of this file is the user's buggy line
    user = [f for f in frames if f.filename == __file__]
    assert "@ jnp.ones((5, 2))" in (user[-1].line or "")


def test_show_lens_in_tracebacks_brings_the_frames_back():
    lens.traceback_util.show_lens_in_tracebacks()
    try:
        frames = _frames(CALLS["nnx.jit"])
        assert any("lens/nnx/_transforms/jit.py" in f for f in _lens_frames(frames))
    finally:
        lens.traceback_util.hide_lens_in_tracebacks()
    assert _lens_frames(_frames(CALLS["nnx.jit"])) == []


def test_new_transforms_end_at_the_users_line():
    import traceback

    from lens import nnx as lnnx

    def user_fn(m, x):
        raise RuntimeError("user error here")

    m = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    calls = [
        lambda: lnnx.vjp(user_fn, m, jnp.ones((1, 2))),
        lambda: lnnx.jvp(user_fn, (m, jnp.ones((1, 2))), (None, jnp.ones((1, 2)))),
        lambda: lnnx.capture(user_fn, lnnx.Intermediate)(m, 1),
        lambda: lnnx.checkify(user_fn)(m, 1),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="user error here") as info:
            call()
        frames = traceback.extract_tb(info.value.__traceback__)
        assert frames[-1].name == "user_fn"
        assert not any("/lens/nnx/" in f.filename for f in frames[:-1]), [
            f.filename for f in frames
        ]
