"""lens.nnx.bridge.Module: Linen-style modules (setup, @compact, init/apply) on
nnx, checked against flax.nnx.bridge (same variables and values from a seed) and
for the errors a user can cause."""

import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens import nn as lnn
from lens import nnx as lnnx
from lens.nnx import bridge
from lens.nnx.bridge.module import MODULE_CONTEXT

fnnx = pytest.importorskip("flax.nnx")
X = jnp.ones((3, 2))


def _mlp(nnx, bridge):
    class Dense(bridge.Module):
        dout: int

        @bridge.compact
        def __call__(self, x):
            w = self.param(
                "w", nnx.initializers.lecun_normal(), (x.shape[-1], self.dout)
            )
            count = self.variable("counts", "n", lambda: jnp.zeros((), jnp.int32))
            if not self.is_initializing():
                count.value += 1
            return x @ w

    class MLP(bridge.Module):
        def setup(self):
            self.first = Dense(4)

        def __call__(self, x):
            return Dense(5, name="last")(self.first(x))

    return MLP()


def _flat(tree):
    return {
        jax.tree_util.keystr(p): np.asarray(v)
        for p, v in jax.tree_util.tree_leaves_with_path(tree)
    }


def test_init_apply_match_flax():
    import flax.nnx.bridge as fbridge

    lens_vars = _mlp(lnnx, bridge).init(0, X)
    flax_vars = _mlp(fnnx, fbridge).init(0, X)
    ours, theirs = _flat(lens_vars), _flat(flax_vars)
    assert ours.keys() == theirs.keys()
    for k in ours:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-6, atol=1e-6)
    assert lens_vars["params"]["first"]["w"].shape == (2, 4)


def test_apply_returns_updated_collections_and_leaves_model_unbound():
    model = _mlp(lnnx, bridge)
    variables = model.init(0, X)
    y, updates = model.apply(variables, X, mutable=True)
    assert y.shape == (3, 5)
    assert int(updates["counts"]["first"]["n"]) == 1
    assert int(variables["counts"]["first"]["n"]) == 0
    assert model.scope is None and "first" not in vars(model)
    np.testing.assert_allclose(
        model.apply(variables, X),
        X @ variables["params"]["first"]["w"] @ variables["params"]["last"]["w"],
        rtol=1e-6,
    )


def test_compact_names_and_context():
    seen = []

    class Leaf(bridge.Module):
        @bridge.compact
        def __call__(self):
            entry = MODULE_CONTEXT.module_stack[-1]
            seen.append(entry is not None and entry.in_compact)
            return self.param("b", jax.nn.initializers.zeros, (2,))

    class Root(bridge.Module):
        @bridge.compact
        def __call__(self):
            assert bridge.current_module() is self
            Leaf()()
            Leaf()()
            return Leaf(parent=None).scope

    variables = Root().init(0)
    assert sorted(variables["params"]) == ["Leaf_0", "Leaf_1"]
    assert seen == [True, True]
    assert bridge.current_module() is None
    assert Root().apply(variables) is None  # parent=None: not attached, unbound


def test_module_stack_is_per_thread():
    stacks = []

    class Foo(bridge.Module):
        def __call__(self):
            t = threading.Thread(target=lambda: stacks.append(bridge.current_context()))
            t.start()
            t.join()
            return bridge.current_module()

    foo = Foo()
    assert isinstance(foo.apply({}), Foo)
    assert stacks == [None]


def test_param_shape_mismatch_raises_and_explains():
    class Dense(bridge.Module):
        dout: int

        @bridge.compact
        def __call__(self, x):
            return x @ self.param(
                "w", jax.nn.initializers.ones, (x.shape[-1], self.dout)
            )

    variables = Dense(3).init(0, X)
    with pytest.raises(errors.ScopeParamShapeError, match="expected to generate shape"):
        Dense(3).apply({"params": {"w": jnp.ones((2, 4))}}, X)
    # raw values set as attributes are checked against the initializer's shape
    assert Dense(3).apply(variables, X).shape == (3, 3)


def test_errors_name_the_cause():
    class Foo(bridge.Module):
        def __call__(self):
            return self.make_rng("params")

    with pytest.raises(ValueError, match="Parameters must be initialized in `setup"):
        Foo().param("w", jax.nn.initializers.ones, (1,))
    with pytest.raises(ValueError, match="Variables must be initialized"):
        Foo().variable("counts", "n", lambda: 0)
    with pytest.raises(ValueError, match="Can't use RNGs on unbound modules"):
        Foo().make_rng()
    with pytest.raises(KeyError, match="No RngStream named"):  # flax's rngs[name]
        Foo().apply({})
    assert Foo().apply({}, rngs=0).shape == jax.random.key(0).shape

    class NeedsInit(bridge.Module):
        def __call__(self):
            return self.variable("counts", "n")

    with pytest.raises(ValueError, match="Expected 'init_fn' to be a callable"):
        NeedsInit().init()

    class BadParent(bridge.Module):
        @bridge.compact
        def __call__(self):
            return Foo(parent=self)

    with pytest.raises(ValueError, match="'parent' can only be set to None"):
        BadParent().init()

    class BadName(bridge.Module):
        @bridge.compact
        def __call__(self):
            return Foo(name=3)

    with pytest.raises(ValueError, match="'name' must be a 'str'"):
        BadName().init()
    with pytest.raises(TypeError, match="must be a callable"):
        Foo().apply({}, method="__module__")
    with pytest.raises(errors.ApplyModuleInvalidMethodError):
        Foo().apply({}, method=lambda: None)


def test_not_a_param_and_compact_on_plain_object():
    class Foo(bridge.Module):
        @bridge.compact
        def __call__(self):
            self.variable("counts", "w", lambda: 0)
            return self.param("w", jax.nn.initializers.ones, (1,))

    with pytest.raises(ValueError, match="Expected 'w' to be a Param, got counts"):
        Foo().init()
    with pytest.raises(ValueError, match="Expected 'self' to be a nnx.bridge.Module"):
        bridge.compact(lambda self: None)(object())


def test_interop_helpers_only_inside_a_bridge_module():
    with pytest.raises(ValueError, match="only needed inside bridge Module"):
        bridge.nnx_in_bridge_mdl(lambda r: lnnx.Linear(2, 2, rngs=r))
    with pytest.raises(ValueError, match="only needed inside bridge Module"):
        bridge.linen_in_bridge_mdl(lnn.Dense(2))


def test_linen_and_nnx_submodules():
    class Top(bridge.Module):
        @bridge.compact
        def __call__(self, x):
            dense: Any = bridge.linen_in_bridge_mdl(lnn.Dense(3))
            linear: Any = bridge.nnx_in_bridge_mdl(lambda r: lnnx.Linear(3, 2, rngs=r))
            return linear(dense(x))

    model = Top()
    variables = model.init(jax.random.key(0), X)
    assert variables["params"]["Dense_0"]["kernel"].shape == (2, 3)
    assert variables["params"]["Linear_0"]["kernel"].shape == (3, 2)
    p = variables["params"]
    expected = (X @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]) @ p["Linear_0"][
        "kernel"
    ] + p["Linear_0"]["bias"]
    np.testing.assert_allclose(model.apply(variables, X), expected, rtol=1e-5)
