"""Module lifecycle: naming, setup, clone, bind, sharing, adoption, and user errors."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

from lens import errors, nn
from tests.helpers import shapes

KEY = jax.random.key(0)
X = jnp.ones((1, 3))


class Compact(nn.Module):
    features: int = 2

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(nn.Dense(4)(x))


def test_dataclass_fields_with_keyword_parent_and_name():
    fields = [f.name for f in dataclasses.fields(nn.Dense)]
    assert fields[0] == "features" and {"parent", "name"} <= set(fields)
    d = nn.Dense(3, use_bias=False, name="proj")
    assert d.features == 3 and d.name == "proj" and d.parent is None
    # parent and name are keyword-only: one positional argument past the last
    # field (dot_general_cls) is an error.
    n_fields = len([f for f in fields if f not in ("parent", "name")])
    assert n_fields == 10
    with pytest.raises(TypeError):
        nn.Dense(*([3] + [None] * n_fields))

    class NoHint(nn.Module):
        scale = 2.0  # no annotation: a class attribute, not a field

        def __call__(self, x):
            return x * self.scale

    assert "scale" not in [f.name for f in dataclasses.fields(NoHint)]


def test_reserved_field_names_raise():
    # Like Flax: `name` may be re-declared as a str, but not as another type.
    class Renamed(nn.Module):
        name: str | None = None

    assert Renamed(name="r").name == "r"
    with pytest.raises(errors.ReservedModuleAttributeError, match="name -> label"):

        class Bad(nn.Module):
            name: int


def test_compact_names_setup_names_lists_and_dicts():
    class Setup(nn.Module):
        def setup(self):
            self.enc = nn.Dense(2)
            self.layers = [nn.Dense(2), nn.Dense(2)]
            self.heads = {"a": nn.Dense(1), "b": nn.Dense(1)}

        def __call__(self, x):
            x = self.enc(x)
            for layer in self.layers:
                x = layer(x)
            return self.heads["a"](x) + self.heads["b"](x)

    v = Setup().init(KEY, X)
    assert sorted(v["params"]) == ["enc", "heads_a", "heads_b", "layers_0", "layers_1"]
    v = Compact().init(KEY, X)
    assert sorted(v["params"]) == ["Dense_0", "Dense_1"]


def test_explicit_name_collision_raises():
    class Clash(nn.Module):
        @nn.compact
        def __call__(self, x):
            nn.Dense(2, name="a")(x)
            return nn.Dense(2, name="a")(x)

    with pytest.raises(
        errors.NameInUseError, match='submodule "a" in Module Clash: Name in use'
    ):
        Clash().init(KEY, X)


def test_setup_is_lazy_and_runs_once():
    calls = []

    class Lazy(nn.Module):
        def setup(self):
            calls.append(1)
            self.d = nn.Dense(2)

        def __call__(self, x):
            return self.d(x)

    m = Lazy()
    v = m.init(KEY, X)
    assert calls == [1]
    bound = m.bind(v)
    assert calls == [1]  # not run by bind
    bound(X)
    bound(X)
    assert calls == [1, 1]


def test_setting_attributes_outside_setup_raises():
    class Setter(nn.Module):
        @nn.compact
        def __call__(self, x):
            self.count = 1
            return x

    with pytest.raises(
        errors.SetAttributeFrozenModuleError,
        match="count=1 for Module of type Setter.*frozen outside of setup",
    ):
        Setter().init(KEY, X)
    # An unbound module outside any method is not frozen (as in Flax).
    d = nn.Dense(2)
    d.features = 3
    assert d.features == 3


def test_calling_unbound_modules_says_use_init_apply_bind():
    with pytest.raises(errors.CallCompactUnboundModuleError, match="init/apply"):
        nn.Dense(3)(X)

    class S(nn.Module):
        def setup(self):
            self.d = nn.Dense(2)

        def __call__(self, x):
            return self.d(x)

    # Like Flax: setup never runs on an unbound module, so its attributes are
    # missing; the message says where they live and how to get at them.
    with pytest.raises(
        AttributeError, match="only accessible from inside 'init'.*bind"
    ):
        S()(X)
    with pytest.raises(AttributeError, match='no attribute "d"'):
        S().d


def test_setup_and_compact_together_like_flax():
    # Flax allows a setup() next to a @compact method: both add to one scope.
    class Both(nn.Module):
        def setup(self):
            self.p = self.param("p", nn.initializers.ones, (1,))

        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(x) + self.p

    v = Both().init(KEY, X)
    assert sorted(v["params"]) == ["Dense_0", "p"]


def test_submodule_outside_setup_or_compact_raises():
    class Plain(nn.Module):
        def __call__(self, x):
            return nn.Dense(2)(x)

    with pytest.raises(errors.AssignSubModuleError, match="@compact"):
        Plain().init(KEY, X)


def test_bad_method_argument():
    # A string names an attribute: a typo is an AttributeError, as in Flax.
    with pytest.raises(
        AttributeError, match='"Compact" object has no attribute "encdoe"'
    ):
        Compact().init(KEY, X, method="encdoe")
    with pytest.raises(errors.ApplyModuleInvalidMethodError):
        Compact().init(KEY, X, method=3)


def test_method_as_name_function_and_lambda():
    class Two(nn.Module):
        def setup(self):
            self.a = nn.Dense(2)
            self.b = nn.Dense(2)

        def __call__(self, x):
            return self.b(self.a(x))

        def encode(self, x):
            return self.a(x)

    v = Two().init(KEY, X)
    y1 = Two().apply(v, X, method="encode")
    y2 = Two().apply(v, X, method=Two.encode)
    y3 = Two().apply(v, X, method=lambda m, x: m.a(x))
    assert jnp.allclose(y1, y2) and jnp.allclose(y1, y3)


def test_module_used_twice_shares_params():
    class Twice(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            return d(d(x))

    v = Twice().init(KEY, jnp.ones((1, 3)))
    assert list(v["params"]) == ["Dense_0"]


def test_unbound_modules_passed_as_attributes_are_adopted():
    class Wrapper(nn.Module):
        inner: nn.Module

        def __call__(self, x):
            return self.inner(x)

    shared = nn.Dense(2)

    class Pair(nn.Module):
        a: nn.Module
        b: nn.Module

        def __call__(self, x):
            return self.a(x) + self.b(x)

    w = Wrapper(nn.Dense(3))
    v = w.init(KEY, X)
    assert shapes(v["params"]) == {"inner": {"bias": (3,), "kernel": (3, 3)}}
    assert w.inner.scope is None  # the user's instance stays unbound
    v = Pair(shared, shared).init(KEY, X)
    assert list(v["params"]) == ["a"]  # the same instance is shared once


def test_clone_bind_unbind_and_variables():
    m = Compact(features=5)
    c = m.clone(features=7)
    assert c.features == 7 and m.features == 5 and type(c) is Compact
    v = m.init(KEY, X)
    bound = m.bind(v)
    assert bound(X).shape == (1, 5)
    assert shapes(bound.variables) == shapes(v)
    unbound, v2 = bound.unbind()
    assert unbound.scope is None and shapes(v2) == shapes(v)
    assert bound.path == ()


def test_init_with_output_and_lazy_init():
    y, v = Compact().init_with_output(KEY, X)
    assert y.shape == (1, 2)
    # lazy_init takes abstract inputs and skips the output's compute; the
    # variables are real and equal to init's (as in Flax).
    lazy = Compact().lazy_init(KEY, jax.ShapeDtypeStruct((1, 3), jnp.float32))
    assert lazy["params"]["Dense_1"]["kernel"].shape == (3, 4)
    assert jax.tree.all(jax.tree.map(jnp.array_equal, lazy, v))


def test_sow_and_capture_intermediates():
    class Sower(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.Dense(2)(x)
            self.sow("intermediates", "h", h)
            return h

    v = Sower().init(KEY, X)
    assert "intermediates" not in v  # init's default mutable excludes it
    y, state = Sower().apply(v, X, mutable=["intermediates"])
    assert isinstance(state["intermediates"]["h"], tuple)
    _, state = Sower().apply(
        v, X, capture_intermediates=True, mutable=["intermediates"]
    )
    assert "__call__" in state["intermediates"]["Dense_0"]
    assert "__call__" in state["intermediates"]


def test_perturb_gives_intermediate_gradients():
    class P(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = self.perturb("h", nn.Dense(2)(x))
            return jnp.sum(h**2)

    v = P().init(KEY, X)
    assert "perturbations" in v

    def loss(variables):
        return P().apply(variables, X)

    g = jax.grad(loss)(v)
    assert g["perturbations"]["h"].shape == (1, 2)


def test_intercept_methods():
    seen = []

    def interceptor(next_fun, args, kwargs, context):
        seen.append((type(context.module).__name__, context.method_name))
        return next_fun(*args, **kwargs)

    v = Compact().init(KEY, X)
    with nn.intercept_methods(interceptor):
        Compact().apply(v, X)
    assert ("Compact", "__call__") in seen and ("Dense", "__call__") in seen


def test_share_scope():
    class Shared(nn.Module):
        def setup(self):
            self.a = nn.Dense(2)
            nn.share_scope(self, self.a)

        def __call__(self, x):
            return self.a(x)

    # The Dense's parameters live in Shared's own scope (no "a" level).
    v = Shared().init(KEY, X)
    assert sorted(v["params"]) == ["bias", "kernel"]
    assert Shared().apply(v, X).shape == (1, 2)

    class Clash(nn.Module):
        def setup(self):
            self.a = nn.Dense(2)
            self.b = nn.Dense(2)
            nn.share_scope(self.a, self.b)

        def __call__(self, x):
            return self.a(x), self.b(x)

    with pytest.raises(errors.NameInUseError, match='param "kernel"'):
        Clash().init(KEY, X)


def test_make_rng_and_is_initializing():
    class R(nn.Module):
        @nn.compact
        def __call__(self):
            return self.make_rng("noise"), self.is_initializing(), self.has_rng("noise")

    (_, init_flag, has), _ = R().init_with_output({"params": KEY, "noise": KEY})
    assert init_flag and has
    (_, flag, _) = R().apply({}, rngs={"noise": KEY})
    assert not flag
