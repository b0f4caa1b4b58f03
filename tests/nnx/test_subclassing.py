"""Subclassing nnx's classes as frameworks do: the same internals as flax.nnx.

A training framework's NNX backend makes its variables ``nnx.Variable`` subclasses
that also inherit its own (non-slotted) variable base, define a ``_value`` property
of their own, call ``nnx.Variable.__init__`` with a placeholder before their own
``__init__``, write the stored value with ``object.__setattr__(self, "raw_value",
...)`` and pickle ``_raw_value``/``_trace_state``/``_var_metadata`` beside their own
attributes. Each test runs on lens and on flax (the oracle) alike: what it asserts
holds for both.
"""

from __future__ import annotations

import copy
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")

BACKENDS = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def arange_init(shape):
    return jnp.arange(float(np.prod(shape))).reshape(shape)


class FrameworkVariableBase:
    """A framework's own variable class: plain attributes in ``__dict__``, and a
    value it writes through ``self._value`` (which the NNX subclass redirects)."""

    def __init__(self, initializer, shape, name):
        self._initializer = initializer
        self._shape = tuple(shape)
        self.name = name
        self._value = initializer(self._shape)

    @property
    def shape(self):
        return self._shape

    def assign(self, value):
        self._value = jnp.asarray(value)


def framework_variable(nnx):
    """The NNX variable type such a framework defines, for one nnx module."""

    class FrameworkVariable(FrameworkVariableBase, nnx.Variable):
        def __init__(self, initializer, shape, name=None, trainable=True, **meta):
            meta["mutable"] = trainable
            nnx.Variable.__init__(self, value=jnp.zeros(shape), **meta)
            FrameworkVariableBase.__init__(self, initializer, shape, name)
            object.__setattr__(self, "raw_value", self._value)

        @property
        def _value(self):
            return self.get_raw_value() if hasattr(self, "_raw_value") else None

        @_value.setter
        def _value(self, value):
            object.__setattr__(self, "raw_value", value)

        def __getstate__(self):
            state = dict(vars(self))
            state.update(nnx.Variable.__getstate__(self))
            return state

        def __setstate__(self, state):
            state = dict(state)
            nnx.Variable.__setstate__(
                self,
                {
                    k: state.pop(k)
                    for k in ("_raw_value", "_trace_state", "_var_metadata")
                },
            )
            vars(self).update(state)

    FrameworkVariable.__qualname__ = FrameworkVariable.__name__ = (
        "FrameworkVariable_" + nnx.__name__.split(".")[0]
    )
    return FrameworkVariable


# module-level, so that pickle finds them by name
FrameworkVariable_lens = framework_variable(lnnx)
FrameworkVariable_flax = framework_variable(fnnx)
FRAMEWORK_VARIABLE = {
    lnnx.__name__: FrameworkVariable_lens,
    fnnx.__name__: FrameworkVariable_flax,
}


@BACKENDS
def test_framework_variable_builds_reads_and_reprs(nnx):
    FV = FRAMEWORK_VARIABLE[nnx.__name__]
    v = FV(lambda s: jnp.full(s, 2.0), (2, 3), name="kernel", tag="w")
    np.testing.assert_array_equal(v.get_value(), np.full((2, 3), 2.0))
    assert v.shape == (2, 3) and v.name == "kernel"
    assert v.get_metadata("mutable") is True and v.tag == "w"
    # its own attributes are plain attributes, not metadata
    assert {"_initializer", "_shape", "name"} <= set(vars(v))
    assert "name" not in v.get_metadata() and "_shape" not in v.get_metadata()
    assert type(v).__name__ in repr(v)
    v.assign(jnp.ones((2, 3)))
    np.testing.assert_array_equal(v[...], np.ones((2, 3)))


@BACKENDS
def test_flax_internal_slots(nnx):
    v = nnx.Param(jnp.arange(3.0), tag="a")
    assert set(nnx.Variable.__slots__) == {
        "_raw_value",
        "_trace_state",
        "_var_metadata",
    }
    np.testing.assert_array_equal(v._raw_value, np.arange(3.0))
    assert v._var_metadata["tag"] == "a"
    assert v._trace_state.is_valid()
    assert set(nnx.Variable.__getstate__(v)) == {
        "_raw_value",
        "_trace_state",
        "_var_metadata",
    }
    v.set_raw_value(jnp.zeros(3))
    np.testing.assert_array_equal(v.get_raw_value(), np.zeros(3))


@BACKENDS
def test_create_value_sees_the_metadata_and_trace_state_already_set(nnx):
    seen = {}

    class Scaled(nnx.Variable):
        def create_value(self, value):
            seen["meta"] = dict(self._var_metadata)
            seen["valid"] = self._trace_state.is_valid()
            return value * self._var_metadata["scale"]

    v = Scaled(jnp.ones(2), scale=3.0)
    np.testing.assert_array_equal(v[...], np.full(2, 3.0))
    assert seen["meta"]["scale"] == 3.0 and seen["valid"]


@BACKENDS
def test_setting_an_unknown_attribute_on_a_param_says_use_set_metadata(nnx):
    v = nnx.Param(jnp.ones(2))
    with pytest.raises(AttributeError, match=r"Cannot set attribute foo"):
        v.foo = 1
    v.set_metadata(foo=1)
    assert v.foo == 1 and v.get_metadata("foo") == 1
    with pytest.raises(AttributeError, match=r"del_metadata"):
        del v.bar


@BACKENDS
def test_a_property_whose_getter_misses_an_attribute(nnx):
    # Python drops the getter's AttributeError and asks __getattr__; both stay
    # an AttributeError (hasattr answers False), lens's names what was missed
    class Lazy(nnx.Variable):
        @property
        def value(self):
            return self._not_built_yet.value

    v = Lazy(jnp.ones(2))
    assert not hasattr(v, "value")
    with pytest.raises(AttributeError) as info:
        v.value
    if nnx is lnnx:
        assert "Lazy.value's getter raised AttributeError" in str(info.value)
        assert "'_not_built_yet'" in str(info.value)
        assert isinstance(info.value.__cause__, AttributeError)
    with pytest.raises(AttributeError, match="nothing_here"):
        v.nothing_here


@BACKENDS
def test_framework_variable_pickles_and_copies(nnx):
    FV = FRAMEWORK_VARIABLE[nnx.__name__]
    v = FV(arange_init, (2, 2), name="k", trainable=False)
    w = pickle.loads(pickle.dumps(v))
    assert type(w) is FV and w.name == "k"
    np.testing.assert_array_equal(w[...], v[...])
    assert w.get_metadata("mutable") is False
    assert w._trace_state.is_valid()
    c = copy.deepcopy(v)
    np.testing.assert_array_equal(c[...], v[...])
    assert c is not v
    if nnx is lnnx:  # flax's deepcopy rebuilds it from value and metadata only
        assert c.name == "k"


@BACKENDS
def test_plain_variable_pickles_its_three_slots(nnx):
    v = nnx.Param(jnp.arange(3.0), tag="x")
    w = pickle.loads(pickle.dumps(v))
    assert type(w) is nnx.Param and w.get_metadata("tag") == "x"
    np.testing.assert_array_equal(w[...], v[...])


@BACKENDS
def test_framework_variable_in_a_module_through_split_merge_and_jit(nnx):
    FV = FRAMEWORK_VARIABLE[nnx.__name__]

    class Model(nnx.Module):
        def __init__(self):
            self.w = FV(lambda s: jnp.ones(s), (3,), name="w")

        def __call__(self, x):
            return x * self.w[...]

    m = Model()
    graphdef, state = nnx.split(m)
    leaves = jax.tree.leaves(state)
    assert len(leaves) == 1 and leaves[0].shape == (3,)
    m2 = nnx.merge(graphdef, state)
    np.testing.assert_array_equal(m2(jnp.full(3, 2.0)), np.full(3, 2.0))

    @nnx.jit
    def bump(m):
        m.w[...] = m.w[...] + 1

    bump(m)
    np.testing.assert_array_equal(m.w[...], np.full(3, 2.0))


@BACKENDS
def test_a_variable_made_outside_a_jit_cannot_be_set_inside(nnx):
    v = nnx.Param(jnp.ones(2))

    @jax.jit
    def f(x):
        v[...] = x
        return x

    with pytest.raises(errors.TraceContextError if nnx is lnnx else Exception):
        f(jnp.zeros(2))


class FrameworkLayerBase:
    """A framework's layer base: tracks its own attributes, and a property with a
    setter over a private attribute."""

    def __init__(self, name):
        self._name = name
        self.built = False

    @property
    def path(self):
        return getattr(self, "_path", self._name)

    @path.setter
    def path(self, value):
        self._path = value


def framework_layer(nnx):
    class FrameworkLayer(FrameworkLayerBase, nnx.Module):
        def __init__(self, features, name="layer"):
            FrameworkLayerBase.__init__(self, name)
            self.w = nnx.Param(jnp.ones((features,)))
            self.built = True

        def __call__(self, x):
            return x * self.w[...]

        def __getstate__(self):
            return nnx.Module.__getstate__(self)

        def __setstate__(self, state):
            nnx.Module.__setstate__(self, state)

    FrameworkLayer.__qualname__ = FrameworkLayer.__name__ = (
        "FrameworkLayer_" + nnx.__name__.split(".")[0]
    )
    return FrameworkLayer


FrameworkLayer_lens = framework_layer(lnnx)
FrameworkLayer_flax = framework_layer(fnnx)
FRAMEWORK_LAYER = {
    lnnx.__name__: FrameworkLayer_lens,
    fnnx.__name__: FrameworkLayer_flax,
}


@BACKENDS
def test_module_subclass_with_its_own_base_properties_and_pickling(nnx):
    Layer = FRAMEWORK_LAYER[nnx.__name__]
    layer = Layer(3, name="dense")
    assert layer.path == "dense" and layer.built
    layer.path = "model/dense"
    assert layer.path == "model/dense"
    state = nnx.Module.__getstate__(layer)
    assert {"_name", "built", "w", "_path", "_pytree__state"} <= set(state)
    again = pickle.loads(pickle.dumps(layer))
    assert type(again) is Layer and again.path == "model/dense"
    np.testing.assert_array_equal(again(jnp.full(3, 2.0)), np.full(3, 2.0))
    assert again._pytree__state.trace_state.is_valid()
    graphdef, params = nnx.split(layer, nnx.Param)
    assert len(jax.tree.leaves(params)) == 1
    np.testing.assert_array_equal(nnx.merge(graphdef, params).w[...], np.ones(3))


@BACKENDS
def test_rngs_subclass_draws_what_rngs_draws(nnx):
    class SeedGenerator(nnx.Rngs):
        def __init__(self, seed, **streams):
            super().__init__(seed, **streams)
            self.seed = seed

    gen, plain = SeedGenerator(3, dropout=4), nnx.Rngs(3, dropout=4)
    assert gen.seed == 3
    for _ in range(2):
        np.testing.assert_array_equal(
            jax.random.key_data(gen.dropout()), jax.random.key_data(plain.dropout())
        )
        np.testing.assert_array_equal(
            jax.random.key_data(gen()), jax.random.key_data(plain())
        )


def test_lens_and_flax_subclasses_draw_the_same_keys():
    a = FRAMEWORK_LAYER[lnnx.__name__](4)
    b = FRAMEWORK_LAYER[fnnx.__name__](4)
    np.testing.assert_array_equal(a.w[...], b.w[...])
    la, fa = lnnx.Rngs(5, params=6), fnnx.Rngs(5, params=6)
    np.testing.assert_array_equal(
        jax.random.key_data(la.params()), jax.random.key_data(fa.params())
    )


@BACKENDS
def test_object_subclass_pickles_its_instance_dict(nnx):
    class Counter(nnx.Pytree):
        def __init__(self):
            self.count = nnx.Variable(jnp.array(0))
            self.label = "steps"

    c = Counter()
    state = nnx.Pytree.__getstate__(c)
    assert state is not vars(c) and state["label"] == "steps"
    d = Counter.__new__(Counter)
    nnx.Pytree.__setstate__(d, state)
    assert d.label == "steps" and int(d.count[...]) == 0


@BACKENDS
def test_check_valid_context_is_the_hook_for_mutations_in_another_trace(nnx):
    """A framework allows its own bookkeeping inside its shape inference by
    overriding ``_check_valid_context``; without the override, the same write
    raises TraceContextError."""
    allowed = {"on": False}

    class Layer(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))

        def _check_valid_context(self, error_msg):
            if allowed["on"]:
                return
            super()._check_valid_context(error_msg)

    layer = Layer()

    def build(x):
        layer._path = "model/layer"
        return x

    with pytest.raises(Exception, match="Cannot mutate 'Layer' from different trace"):
        jax.eval_shape(build, jnp.ones(2))
    allowed["on"] = True
    jax.eval_shape(build, jnp.ones(2))
    assert layer._path == "model/layer"


class RecordsArguments:
    """A framework base that records its constructor's arguments in ``__new__``
    (to serialize the object later), placed after nnx.Module in the MRO."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        vars(instance)["_config"] = {"args": args, **kwargs}
        return instance


@BACKENDS
def test_a_base_class_new_later_in_the_mro_runs(nnx):
    class Layer(nnx.Module, RecordsArguments):
        def __init__(self, features, *, name="dense"):
            self.w = nnx.Param(jnp.ones(features))
            self.name = name

    layer = Layer(3, name="d")
    assert layer._config == {"args": (3,), "name": "d"}
    assert layer._pytree__state.trace_state.is_valid()
    assert len(jax.tree.leaves(nnx.state(layer, nnx.Param))) == 1


@BACKENDS
def test_a_get_value_override_is_what_operators_and_jax_see(nnx):
    # flax.nnx's deprecation of hooks says: "Create your own Variable type and
    # overload `get_value`". Its operators, __jax_array__, len, iter, in, == and
    # repr all read through get_value; attribute forwarding (v.sum()) and
    # np.asarray reach the stored array.
    class Scaled(nnx.Variable):
        def get_value(self, **kwargs):
            return super().get_value(**kwargs) * 10

    v = Scaled(jnp.arange(3.0))
    np.testing.assert_allclose(v + 1, [1.0, 11.0, 21.0])
    np.testing.assert_allclose(1 + v, [1.0, 11.0, 21.0])
    np.testing.assert_allclose(-v, [0.0, -10.0, -20.0])
    np.testing.assert_allclose(v + Scaled(jnp.ones(3)), [10.0, 20.0, 30.0])
    np.testing.assert_allclose(jnp.sum(v), 30.0)
    np.testing.assert_allclose(jnp.asarray(v), [0.0, 10.0, 20.0])
    np.testing.assert_allclose(list(v), [0.0, 10.0, 20.0])
    assert 20.0 in v
    assert bool((v == jnp.array([0.0, 10.0, 20.0])).all())
    assert v[1] == 10.0 and float(v.sum()) == 3.0
    np.testing.assert_allclose(np.asarray(v), [0.0, 1.0, 2.0])
    assert "20." in repr(v)
    np.testing.assert_allclose(jax.jit(lambda v: v + 1)(v), [1.0, 11.0, 21.0])
    s = Scaled(jnp.array(2.0))
    assert (float(s), int(s), float(round(s))) == (20.0, 20, 20.0)
    m = Scaled(jnp.eye(2))
    np.testing.assert_allclose(m @ jnp.ones(2), [10.0, 10.0])
    np.testing.assert_allclose(jnp.ones(2) @ m, [10.0, 10.0])


def test_a_failing_get_value_override_still_reprs():
    class Broken(lnnx.Variable):
        def get_value(self, **kwargs):
            raise RuntimeError("not readable now")

    assert "Array([0., 1.]" in repr(Broken(jnp.arange(2.0)))
