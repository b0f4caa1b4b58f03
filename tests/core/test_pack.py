"""pack: the six stages, the seed's lift_transpose example, errors and traces."""

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens import errors
from lens.core import apply, init, lift, trace_packs
from lens.core import nn as core_nn
from lens.core._trace import schema
from tests.helpers import assert_tree_allclose, shapes


def lift_transpose(fn, target="params", variables=True, rngs=True):
    """The seed's example, verbatim but for the import names."""

    def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        target, rest = variable_groups

        def trans(x):
            if x.ndim == 2:
                return x.T
            return x

        target = jax.tree_util.tree_map(trans, target)
        variable_groups = (target, rest)
        scope = scope_fn(variable_groups, rng_groups)
        y = fn(scope, *args)
        out_variables = repack_fn(scope)
        return y, out_variables

    return lift.pack(
        wrapper,
        in_variable_filters=(target, variables),
        out_variable_filters=(variables,),
        rng_filters=(rngs,),
    )


def test_seed_lift_transpose_runs_and_transposes():
    x = jnp.ones((3, 2))
    y, params = init(lift_transpose(core_nn.dense))(jax.random.PRNGKey(0), x, 4)
    assert y.shape == (3, 4)
    assert shapes(params) == {"params": {"bias": (4,), "kernel": (2, 4)}}
    # Stored transposed, used as the dense kernel after transposition.
    k = jax.random.normal(jax.random.key(1), (4, 2))
    b = jnp.arange(4.0)
    x = jax.random.normal(jax.random.key(2), (3, 2))
    y = apply(lift_transpose(core_nn.dense))({"params": {"kernel": k, "bias": b}}, x, 4)
    np.testing.assert_allclose(y, x @ k.T + b, rtol=1e-5)


def identity(fn, variables=True, rngs=True):
    def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        scope = scope_fn(variable_groups, rng_groups)
        return fn(scope, *args), repack_fn(scope)

    return lift.pack(wrapper, (variables,), (variables,), (rngs,), name="identity")


leaf = st.integers(0, 3).map(lambda n: jnp.arange(float(n)))
tree = st.recursive(
    leaf,
    lambda inner: st.dictionaries(
        st.sampled_from(["a", "b", "c"]), inner, min_size=1, max_size=3
    ),
    max_leaves=6,
)
collections = st.dictionaries(
    st.sampled_from(["params", "batch_stats", "cache"]),
    st.dictionaries(
        st.sampled_from(["x", "y", "Dense_0"]), tree, min_size=1, max_size=2
    ),
    max_size=3,
)


@settings(max_examples=30, deadline=None)
@given(collections)
def test_identity_pack_round_trips_any_collections(variables):
    _, out = apply(identity(lambda scope: None), mutable=True)(variables)
    assert_tree_allclose(out, variables)


def test_only_root_scopes_are_lifted_and_children_rebuilt_by_path():
    def f(scope, x):
        core_nn.dense(scope.push("a").push("b"), x, 2)

    _, v = init(f)(jax.random.key(0), jnp.ones((1, 2)))

    def g(scopes, x):
        outer, inner = scopes
        assert inner.path == ("a", "b") and outer.path == ("a",)
        return core_nn.dense(inner, x, 2)

    def h(scope, x):
        a = scope.push("a")
        return identity(g)((a, a.push("b")), x)

    with trace_packs() as t:
        y = apply(h)(v, jnp.ones((1, 2)))
    assert y.shape == (1, 2)
    rec = t.records[0]
    assert [s["root"] for s in rec["scopes"]] == [True, False]
    assert rec["scopes"][1]["relative_path"] == ["b"]
    assert sorted(v["path"] for v in rec["groups"][0]["variables"]) == [
        "/a/b/bias",
        "/a/b/kernel",
    ]


def test_same_scope_twice_is_lifted_once():
    def f(scope, x):
        def g(scopes, x):
            s1, s2 = scopes
            assert s1 is s2
            return core_nn.dense(s1, x, 2)

        return identity(g)((scope, scope), x)

    y, v = init(f)(jax.random.key(0), jnp.ones((1, 2)))
    assert shapes(v) == {"params": {"bias": (2,), "kernel": (2, 2)}}


def test_hidden_collection_names_the_transform_and_the_fix():
    def mlp(scope, x):
        return core_nn.batch_norm(scope, core_nn.dense(scope.push("d"), x, 2))

    # Flax's class and first sentence, then where the collection got lost and
    # the fix.
    f = lift.vmap(mlp, variable_axes={"params": 0}, split_rngs={"params": True})
    with pytest.raises(
        errors.ScopeCollectionNotFound,
        match='(?s)^Tried to access "mean" from collection "batch_stats" in "/vmap\\(\\)".*'
        'not lifted into vmap at /.*variable_axes=\\{"batch_stats": 0\\}',
    ):
        init(f)(jax.random.key(0), jnp.ones((3, 1, 2)))
    g = lift.vmap(
        mlp, variable_axes={"params": 0, "batch_stats": 0}, split_rngs={"params": True}
    )
    _, v = init(g)(jax.random.key(0), jnp.ones((3, 1, 2)))
    with pytest.raises(errors.ScopeCollectionNotFound, match="not lifted into vmap"):
        apply(f)(v, jnp.ones((3, 1, 2)))


def test_unlifted_rng_stream_falls_back_to_params_like_flax():
    def noisy(scope, x):
        return core_nn.dropout(scope, x, 0.5)

    f = lift.vmap(noisy, variable_axes={}, split_rngs={"params": True})
    y = apply(f)(
        {},
        jnp.ones((3, 16)),
        rngs={"params": jax.random.key(0), "dropout": jax.random.key(1)},
    )
    # "dropout" is not lifted into the vmap, so make_rng("dropout") draws from
    # the (split) "params" stream, as in Flax: the "dropout" key plays no part.
    y2 = apply(f)({}, jnp.ones((3, 16)), rngs={"params": jax.random.key(0)})
    assert jnp.array_equal(y, y2)
    assert not jnp.array_equal(y[0], y[1])
    g = lift.vmap(noisy, variable_axes={}, split_rngs={"dropout": True})
    y3 = apply(g)({}, jnp.ones((3, 16)), rngs={"dropout": jax.random.key(1)})
    assert not jnp.array_equal(y3, y) and not jnp.array_equal(y3[0], y3[1])


def test_write_to_collection_outside_out_filters_raises():
    def f(scope):
        scope.put_variable("cache", "k", 1.0)

    def wrapper(scope_fn, repack_fn, variable_groups, rng_groups):
        s = scope_fn(variable_groups, rng_groups)
        return f(s), repack_fn(s)

    p = lift.pack(wrapper, (True,), ("params",), (True,), name="only_params")
    with pytest.raises(errors.ModifyScopeVariableError, match="only_params"):
        apply(p, mutable=True)({})


def test_keyword_arguments_pass_through():
    def f(scope, x, *, train):
        return core_nn.dropout(scope, x, 0.5, deterministic=not train)

    vf = lift.vmap(f, variable_axes={}, split_rngs={"dropout": True})
    x = jnp.ones((2, 8))
    assert jnp.array_equal(
        apply(vf)({}, x, train=False, rngs={"dropout": jax.random.key(0)}), x
    )
    assert not jnp.array_equal(
        apply(vf)({}, x, train=True, rngs={"dropout": jax.random.key(0)}), x
    )


def test_inner_scopes_are_invalid_after_the_transform():
    leaked = []

    def f(scope):
        leaked.append(scope)

    init(identity(f))(jax.random.key(0))
    with pytest.raises(errors.InvalidScopeError):
        leaked[0].make_rng("params")


def test_trace_records_every_stage_and_matches_schema():
    def layer(scope, c, _):
        return core_nn.dense(scope, c, 2), None

    def model(scope, x):
        body = lift.scan(
            layer, variable_axes={"params": 0}, split_rngs={"params": True}, length=3
        )
        inner = lift.vmap(
            lambda s, x: body(s, x, None)[0],
            variable_axes={"params": 0},
            split_rngs={"params": True},
        )
        return inner(scope.push("ens"), x)

    with trace_packs() as t:
        _, v = init(model)(jax.random.key(0), jnp.ones((4, 1, 2)))
    doc = t.to_json()
    jsonschema.validate(doc, schema())
    (rec,) = doc["packs"]
    assert rec["transform"] == "vmap"
    assert rec["options"]["variable_axes"] == [["params", 0]]
    assert rec["rngs"] == [
        {
            "stream": "params",
            "group": 0,
            "filter": "params",
            "split": True,
            "label": "split",
        }
    ]
    (child,) = rec["children"]
    assert child["transform"] == "scan"
    created = {e["path"]: e["inner"]["shape"] for e in child["repack"]["created"]}
    assert created == {"/ens/kernel": [2, 2], "/ens/bias": [2]}
    committed = {e["path"]: e["outer"]["shape"] for e in rec["commit"]}
    assert committed == {"/ens/kernel": [4, 3, 2, 2], "/ens/bias": [4, 3, 2]}
    # apply: the variables go in, with outer and inner shapes per stage
    with trace_packs() as t:
        apply(model)(v, jnp.ones((4, 1, 2)))
    g = t.records[0]["groups"][0]["variables"]
    kernel = next(x for x in g if x["path"] == "/ens/kernel")
    assert kernel["outer"]["shape"] == [4, 3, 2, 2] and kernel["inner"]["shape"] == [
        3,
        2,
        2,
    ]
    assert kernel["axis"] == "axis 0"
    jsonschema.validate(t.to_json(), schema())


def test_tracing_is_off_by_default():
    from lens.core import _trace

    assert not _trace.active()
    assert _trace.recorder("vmap", {}) is _trace.NULL_RECORDER
    init(identity(lambda s: None))(jax.random.key(0))
    assert not _trace.active()


def test_loop_bodies_traced_twice_are_recorded_once():
    # scan traces its body twice (the invariants pass, then the loop): the trace
    # lists each created variable and each nested pack once.
    def body(scope, c, x):
        inner = lift.vmap(
            lambda s, y: core_nn.dense(s, y, 2),
            variable_axes={"params": 0},
            split_rngs={"params": True},
        )
        return c, inner(scope.push("v"), x)

    def model(scope, xs):
        loop = lift.scan(
            body,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=0,
        )
        return loop(scope.push("s"), (), xs)

    with trace_packs() as t:
        init(model)(jax.random.key(0), jnp.ones((3, 4, 2)))
    (rec,) = t.records
    assert rec["transform"] == "scan"
    created = [e["path"] for e in rec["repack"]["created"]]
    assert sorted(created) == ["/s/v/bias", "/s/v/kernel"]
    assert [c["transform"] for c in rec["children"]] == ["vmap"]
    jsonschema.validate(t.to_json(), schema())
