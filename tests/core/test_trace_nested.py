"""Pack traces: strict JSON for the extension, and nested trace_packs blocks."""

import json

import jax
import jax.numpy as jnp

from lens.core import init, lift
from lens.core._trace import trace_packs


def _f(scope, x):
    return x * scope.param("w", lambda k: jnp.ones(()))


def _vmapped(**options):
    return lift.vmap(
        _f, variable_axes={"params": 0}, split_rngs={"params": True}, **options
    )


def test_nan_in_a_trace_gives_valid_json():
    vf = _vmapped(metadata_params={"scale": float("nan"), "big": float("inf")})
    with trace_packs() as t:
        init(vf)(jax.random.key(0), jnp.ones((3,)))
    text = t.dumps()
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert "NaN" not in text and "Infinity" not in text
    assert '"nan"' in text and '"inf"' in text


def test_nested_trace_packs_keep_the_inner_calls_in_the_outer_trace():
    vf = _vmapped()
    with trace_packs() as outer:
        init(vf)(jax.random.key(0), jnp.ones((3,)))
        with trace_packs() as inner:
            init(vf)(jax.random.key(1), jnp.ones((3,)))
        init(vf)(jax.random.key(2), jnp.ones((3,)))
    assert inner.transforms() == ["vmap"]
    assert outer.transforms() == ["vmap", "vmap", "vmap"]
    json.loads(outer.dumps())


def test_trace_opened_inside_a_transform_body_nests_under_it():
    inner_traces = []

    def body(scope, x):
        with trace_packs() as t:
            y = lift.vmap(_f, variable_axes={"params": 0}, split_rngs={"params": True})(
                scope, x[None]
            )
        inner_traces.append(t)
        return y[0]

    outer_fn = lift.remat(body)
    with trace_packs() as outer:
        init(outer_fn)(jax.random.key(0), jnp.ones((3,)))
    assert outer.transforms() == ["remat"]
    children = outer.records[0]["children"]
    assert [c["transform"] for c in children] == ["vmap"]
    assert inner_traces[-1].transforms() == ["vmap"]
