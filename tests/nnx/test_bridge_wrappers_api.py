"""lens.nnx.bridge.wrappers' helpers (current_linen_module, linen_rngs_dict,
to_linen_class) and the context stacks (bridge ModuleContext, lift's
TransformContext), against flax where flax runs the same code."""

import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nn as lnn
from lens import nnx as lnnx
from lens.core.lift import TransformContext
from lens.nnx.bridge import wrappers as lbw
from lens.nnx.bridge.module import MODULE_CONTEXT, ModuleContext

fnnx = pytest.importorskip("flax.nnx")
fnn = pytest.importorskip("flax.linen")
fbw = pytest.importorskip("flax.nnx.bridge.wrappers")
X = jnp.ones((1, 3))


def test_current_linen_module_is_the_running_module():
    seen = []

    class Foo(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            seen.append(lbw.current_linen_module())
            return x

    foo = Foo()
    foo.apply({}, X)
    assert lbw.current_linen_module() is None
    assert len(seen) == 1 and isinstance(seen[0], Foo) and seen[0].scope is not None


def _rng_keys(nn, bw):
    out = {}

    class Foo(nn.Module):
        @nn.compact
        def __call__(self, x):
            out["keys"] = bw.linen_rngs_dict(self)
            out["with_default"] = bw.linen_rngs_dict(self, add_default=True)
            return x

    Foo().init({"params": jax.random.key(0), "dropout": jax.random.key(1)}, X)
    return out


def test_linen_rngs_dict_draws_one_key_per_stream_as_flax():
    ours, theirs = _rng_keys(lnn, lbw), _rng_keys(fnn, fbw)
    assert sorted(ours["keys"]) == sorted(theirs["keys"]) == ["dropout", "params"]
    for name in ("dropout", "params"):
        np.testing.assert_array_equal(
            jax.random.key_data(ours["keys"][name]),
            jax.random.key_data(theirs["keys"][name]),
        )
    assert ours["with_default"]["default"] == 0 == theirs["with_default"]["default"]


def test_linen_rngs_dict_needs_a_bound_module():
    with pytest.raises(ValueError, match=r"^linen_rngs_dict\(\) must be called inside"):
        lbw.linen_rngs_dict(lnn.Dense(2))


def _to_nnx_in_linen(nn, nnx):
    bn = nnx.bridge.ToNNX(nn.BatchNorm(use_running_average=False), rngs=nnx.Rngs(0))
    bn.lazy_init(jnp.arange(6.0).reshape(2, 3))

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            self.variable("batch_stats", "dummy", lambda: jnp.zeros(()))
            return bn(x)  # mutable comes from the running Linen module

    x = jnp.arange(6.0).reshape(2, 3) * 2
    variables = Outer().init(jax.random.key(0), x)
    Outer().apply(variables, x, mutable=["batch_stats"])
    return np.asarray(nnx.state(bn)["mean"].get_value())


def test_to_nnx_in_a_linen_apply_updates_what_that_apply_may_change():
    ours, theirs = _to_nnx_in_linen(lnn, lnnx), _to_nnx_in_linen(fnn, fnnx)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert not np.allclose(ours, 0.0)  # the batch statistics were updated


def test_to_linen_class_instances_take_the_nnx_keywords():
    # typed as ToLinen (as flax's): its instances take the nnx keywords
    LinenLinear: Any = lbw.to_linen_class(lnnx.Linear, in_features=3)
    layer = LinenLinear(out_features=4)
    assert dict(layer.kwargs) == {"in_features": 3, "out_features": 4}
    ours = layer.init(jax.random.key(0), X)
    ref = lnnx.bridge.to_linen(lnnx.Linear, 3, 4).init(jax.random.key(0), X)
    np.testing.assert_array_equal(ours["params"]["kernel"], ref["params"]["kernel"])
    assert LinenLinear(out_features=2, name="x", use_bias=False).name == "x"
    with pytest.raises(TypeError):  # nnx.Linear itself refuses an unknown keyword
        LinenLinear(out_features=2, bogus=1).init(jax.random.key(0), X)


def _subclassed(nnx, bw, nn):
    class LinenLinear(bw.to_linen_class(nnx.Linear, in_features=3)):
        pass

    class Model(nn.Module):
        def setup(self):
            self.dense = LinenLinear(out_features=5)

        def __call__(self, x):
            return self.dense(x)

    class Compact(nn.Module):
        @nn.compact
        def __call__(self, x):
            return LinenLinear(out_features=2, use_bias=False)(x)

    return (
        Model().init(jax.random.key(1), X),
        Compact().init(jax.random.key(1), X),
    )


def test_to_linen_class_subclasses_match_flax():
    ours = _subclassed(lnnx, lbw, lnn)
    theirs = _subclassed(fnnx, fbw, fnn)
    for a, b in zip(ours, theirs, strict=True):
        assert jax.tree.map(jnp.shape, dict(a)) == jax.tree.map(jnp.shape, dict(b))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6)
    assert list(ours[1]["params"]) == ["LinenLinear_0"]


def test_module_context_starts_from_its_stack_per_thread():
    assert MODULE_CONTEXT.module_stack == [None]
    ctx = ModuleContext(module_stack=[None, "outer"])  # type: ignore[list-item]
    seen = []
    with ctx.push("inner"):  # type: ignore[arg-type]
        seen.append(ctx.module_stack)
        t = threading.Thread(target=lambda: seen.append(ctx.module_stack))
        t.start()
        t.join()
    assert seen == [[None, "outer", "inner"], [None, "outer"]]
    assert ctx.module_stack == [None, "outer"]
    assert ModuleContext().module_stack == [None]


def test_transform_context_starts_from_its_stack_per_thread():
    ctx = TransformContext(stack=[1])
    seen = []
    with ctx.push(2):
        seen.append((ctx.stack, ctx.get()))
        t = threading.Thread(target=lambda: seen.append((ctx.stack, ctx.get())))
        t.start()
        t.join()
    assert seen == [([1, 2], 2), ([1], 1)]
    assert TransformContext().stack == []


def test_lazy_init_marks_every_object_initializing_for_its_call_only():
    seen = []

    class Inner(lnnx.Module):
        def __call__(self):
            seen.append(("inner", self._pytree__state.initializing))

    class Outer(lnnx.Module):
        def __init__(self):
            self.inner = Inner()

        def __call__(self):
            seen.append(("outer", self._pytree__state.initializing))
            self.inner()
            rebuilt = lnnx.merge(*lnnx.split(self))  # the flag travels in the graphdef
            seen.append(("rebuilt", rebuilt._pytree__state.initializing))

    model = Outer()
    lnnx.bridge.lazy_init(model)
    assert seen == [("outer", True), ("inner", True), ("rebuilt", True)]
    assert not model._pytree__state.initializing
    assert not model.inner._pytree__state.initializing


def test_lazy_init_of_a_wrapped_linen_method_initializes_only_its_params():
    class Foo(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            b = self.param("b", lnn.initializers.zeros_init(), (1, 3))
            return self.dot(x) + b

        @lnn.compact
        def dot(self, x):
            return x @ self.param("w", lnn.initializers.lecun_normal(), (4, 3))

    x = jnp.ones((2, 4))
    model = lnnx.bridge.ToNNX(Foo(), rngs=lnnx.Rngs(0))
    lnnx.bridge.lazy_init(model.dot, x)  # a partial of ToNNX.__call__
    assert set(lnnx.state(model, lnnx.Param)) == {"w"}
    np.testing.assert_allclose(model.dot(x), x @ model.w[...], rtol=1e-6)
