"""flax.nnx's repr protocol (reprlib), object state and metaclass (pytreelib,
tracers), containers (helpers) and the small public helpers of module, summary,
visualization, proxy_caller and traversals, against flax.nnx where it is the
oracle."""

import abc
import copy
import pickle
import re
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens import nnx as lnnx
from lens.configurations import config
from lens.nnx import (
    helpers,
    module,
    proxy_caller,
    pytreelib,
    reprlib,
    statelib,
    summary,
    tracers,
    traversals,
    visualization,
)

fnnx = pytest.importorskip("flax.nnx")
from flax.nnx import reprlib as freprlib  # noqa: E402  (test oracle)


def _point_class(rl):
    class Point(rl.Representable):
        def __init__(self, x, children=(), tag=None):
            self.x, self.children, self.tag = x, children, tag

        def __nnx_repr__(self):
            yield rl.Object(type(self), comment=" # a point")
            yield rl.Attr("x", self.x)
            yield rl.Attr("tag", self.tag)
            yield rl.Attr("raw", "<raw>", use_raw_value=True)
            yield rl.Attr("children", list(self.children))

    class Pair(rl.Representable):
        def __nnx_repr__(self):
            yield rl.Object("Pair", same_line=True, start="<", end=">")
            yield rl.Attr("a", (1,))
            yield rl.Attr("b", {"k": 2.5, "s": {True}})

    class Empty(rl.Representable):
        def __nnx_repr__(self):
            yield rl.Object(type(self), empty_repr="...")

    def build():
        leaf = Point(1, tag="t")
        return Point(2.0, [leaf, Pair(), Empty(), None, int])

    return build


def _strip(text: str) -> str:
    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", text)


def test_a_user_representable_prints_as_flax():
    ours, theirs = _point_class(reprlib)(), _point_class(freprlib)()
    assert repr(ours) == repr(theirs)
    assert "Pair<a=(1,), b={'k': 2.5, 's': {True}}>" in repr(ours)
    pretty = reprlib.PrettyMapping({"a": ours}), freprlib.PrettyMapping({"a": theirs})
    assert repr(pretty[0]).replace("PrettyMapping", "") == repr(pretty[1]).replace(
        "PrettyMapping", ""
    )
    seq = reprlib.PrettySequence([1, "x"]), freprlib.PrettySequence([1, "x"])
    assert repr(seq[0]) == repr(seq[1]) == "PrettySequence([\n  1,\n  'x'\n])"


def test_colors_follow_the_repr_context_and_repr_is_plain():
    marks = [f"<{f}>" for f in reprlib.Color._fields]
    ours, theirs = _point_class(reprlib)(), _point_class(freprlib)()
    old, fold = reprlib.REPR_CONTEXT.current_color, freprlib.REPR_CONTEXT.current_color
    reprlib.REPR_CONTEXT.current_color = reprlib.Color(*marks)
    freprlib.REPR_CONTEXT.current_color = freprlib.Color(*marks)
    try:
        colored = str(ours)
        assert colored == str(theirs)
        assert "<TYPE>Point<END>" in colored and "<ATTRIBUTE>x<END>" in colored
        assert repr(ours) == repr(theirs) and "<TYPE>" not in repr(ours)
        assert reprlib.colorized([1, None]) == freprlib.colorized([1, None])
    finally:
        reprlib.REPR_CONTEXT.current_color = old
        freprlib.REPR_CONTEXT.current_color = fold
    assert reprlib.colorized({"a": (1,)}) == "{'a': (1,)}" or reprlib.COLOR != (
        reprlib.NO_COLOR
    )


def test_repr_context_is_per_thread():
    seen: list[Any] = []
    reprlib.REPR_CONTEXT.current_color = reprlib.Color(*["x"] * 11)
    try:
        t = threading.Thread(
            target=lambda: seen.append(reprlib.REPR_CONTEXT.current_color)
        )
        t.start()
        t.join()
    finally:
        reprlib.REPR_CONTEXT.current_color = reprlib.COLOR
    assert seen == [reprlib.COLOR]
    assert reprlib.REPR_CONTEXT.depth == 0


def test_get_repr_refuses_bad_input():
    with pytest.raises(TypeError, match="is not representable"):
        reprlib.get_repr(3)  # type: ignore[arg-type]

    class Bad(reprlib.Representable):
        def __nnx_repr__(self):
            yield reprlib.Attr("a", 1)

    with pytest.raises(TypeError, match="First item must be Config"):
        repr(Bad())

    class NoRepr(reprlib.Representable):
        pass

    with pytest.raises(NotImplementedError, match="__nnx_repr__"):
        repr(NoRepr())


def test_max_repr_depth_elides_deep_nodes():
    from flax import config as flax_config

    ours, theirs = _point_class(reprlib)(), _point_class(freprlib)()
    old, fold = config.flax_max_repr_depth, flax_config.flax_max_repr_depth
    config.update("flax_max_repr_depth", 1)
    flax_config.update("flax_max_repr_depth", 1)
    try:
        text, expected = repr(ours), repr(theirs)
    finally:
        config.update("flax_max_repr_depth", old)
        flax_config.update("flax_max_repr_depth", fold)
    assert text == expected
    assert "Point(...)" in text and "Pair<...>" in text and "a=(1,)" not in text


def _model(nnx):
    class Foo(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 3, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)
            self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs), 5, "s"])
            self.d = nnx.Dict(b=nnx.Param(jnp.ones(2)), a=1)
            self.t = (1, 2.0, None, True)
            self.scalar = jnp.array(1.0)
            self.arr = jnp.zeros((2, 2))
            self.shared = self.lin
            self._private = 3

    return Foo(nnx.Rngs(0))


def test_module_and_state_reprs_match_flax():
    ours, theirs = _model(lnnx), _model(fnnx)
    assert _strip(repr(ours)) == _strip(repr(theirs))
    text = repr(ours)
    assert "value=Array(shape=(2, 3), dtype=dtype('float32'))" in text
    assert "shared=Linear(...)" in text and "_private" not in text
    assert repr(lnnx.state(ours)) == repr(fnnx.state(theirs))
    nested = statelib.NestedStateRepr(lnnx.State({"a": {"b": 1}}))
    assert repr(nested) == "{\n  'a': {\n    'b': 1\n  }\n}"
    assert repr(lnnx.Sequential()) == repr(fnnx.Sequential())


def test_an_unflattened_module_prints_as_flaxs_does():
    """jax.eval_shape rebuilds a module from its pytree: data attributes first,
    then the static ones, as flax.nnx does (flax's key_concepts guide prints one)."""

    def abstract(nnx):
        def make():
            return nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.relu)

        return jax.eval_shape(make)

    ours, theirs = abstract(lnnx), abstract(fnnx)
    assert _strip(repr(ours)) == _strip(repr(theirs))
    text = repr(ours.layers[0])
    assert text.index("kernel=") < text.index("dot_general=")
    assert ours.layers[1] is lnnx.relu  # the list keeps its order


def test_filter_predicates_print_and_nest_as_flaxs():
    def reprs(nnx):
        to = nnx.filterlib.to_predicate
        made = (
            to(nnx.Param),
            to(...),
            to(False),
            to((nnx.Param, "dropout")),
            nnx.Not(nnx.Param),
            nnx.All(nnx.Param, nnx.PathContains("a")),
        )
        return [repr(x).replace(nnx.Param.__module__, "<module>") for x in made]

    assert reprs(lnnx) == reprs(fnnx)
    any_ = lnnx.filterlib.Any(lnnx.Param, "x")
    assert (
        any_.predicates
        == any_.filters
        == (
            lnnx.filterlib.OfType(lnnx.Param),
            lnnx.filterlib.WithTag("x"),
        )
    )
    assert lnnx.Not(lnnx.Param).predicate == lnnx.filterlib.OfType(lnnx.Param)


def test_objects_carry_a_pytree_state_of_their_trace():
    m = lnnx.Linear(2, 2, rngs=lnnx.Rngs(0))
    state = m._pytree__state
    assert isinstance(state, pytreelib.PytreeState) and not state.initializing
    assert state.trace_state.is_valid() and not state.is_setup
    assert jax.tree.leaves(state) == []
    assert "_pytree__state" not in lnnx.state(m) and "_pytree__state" not in repr(m)
    assert pickle.loads(pickle.dumps(pytreelib.PytreeState(True, True))).initializing
    assert copy.deepcopy(m)._pytree__state.trace_state == state.trace_state

    @jax.jit
    def inside(x):
        t = tracers.TraceState()
        assert not state.trace_state.is_valid() and t.is_valid()
        assert t != state.trace_state
        return x

    inside(1.0)


def test_mutating_a_captured_object_inside_jax_jit_is_refused():
    d = lnnx.Dict(a=lnnx.Param(1))

    @jax.jit
    def captured():
        with pytest.raises(
            errors.TraceContextError, match="Cannot mutate 'Dict' from different trace"
        ):
            d.b = 2
        with pytest.raises(errors.TraceContextError, match="Pass it to the function"):
            del d.a
        return 0

    captured()
    assert list(d) == ["a"]  # unchanged

    @jax.jit
    def passed(d):
        d.b = jnp.ones(())  # rebuilt inside: its own trace
        inner = lnnx.List([1])
        inner.append(2)
        return d, len(inner)

    out, n = passed(d)
    assert int(n) == 2 and float(out["b"]) == 1.0


def test_check_pytree_and_nested_marks():
    with pytest.raises(TypeError, match="Expected a Pytree, got <class 'int'>"):
        pytreelib.check_pytree(1)

    class Foo(lnnx.Module):
        def __init__(self):
            self.tag = lnnx.static("a")

    foo = Foo()
    pytreelib.check_pytree(foo)
    object.__setattr__(foo, "tag", jnp.ones(2))  # bypasses the checks
    with pytest.raises(ValueError, match="Found unexpected data on value of type"):
        pytreelib.check_pytree(foo)
    with pytest.raises(ValueError, match="Found unexpected tags {'data'}"):
        foo.items = [lnnx.data(1)]
    assert not hasattr(foo, "items")

    class Late(lnnx.Module):
        def __init__(self):
            self.x = lnnx.static(1)
            object.__setattr__(self, "x", jnp.ones(2))

    with pytest.raises(ValueError, match="in static attribute 'x'"):
        Late()


def test_metaclasses_construct_and_keep_abstract_methods():
    assert type(lnnx.Module) is module.ModuleMeta
    assert issubclass(module.ModuleMeta, pytreelib.ObjectMeta)
    assert pytreelib.PytreeMeta is pytreelib.ObjectMeta
    calls = []

    class Tracing(module.ModuleMeta):
        def _pytree_meta_construct(cls, self, *args, **kwargs):
            calls.append(args)
            super()._pytree_meta_construct(self, *args, **kwargs)

    class M(lnnx.Module, metaclass=Tracing):
        def __init__(self, n):
            self.n = n

    assert M(3).n == 3 and calls == [(3,)]

    class Base(lnnx.Module, abc.ABC):
        @abc.abstractmethod
        def f(self): ...

    with pytest.raises(TypeError, match="abstract"):
        Base()
    with pytest.raises(TypeError, match="does not support __slots__"):

        class Slotted(lnnx.Module):
            __slots__ = ("a",)


def test_data_registry_annotations_and_has_data():
    assert pytreelib.is_data(np.zeros(2)) and not pytreelib.is_data([jnp.ones(1)])
    found = pytreelib.has_data([jnp.ones(1), 2])
    assert isinstance(found, list) and len(found) == 1 and not pytreelib.has_data([1])

    @pytreelib.register_data_type
    class Box:
        pass

    assert Box in pytreelib.DATA_REGISTRY and pytreelib.is_data(Box())
    assert pytreelib.Data[int].__metadata__ == (pytreelib.DataAnnotation,)
    assert pytreelib.Static[int].__metadata__ == ("__static__",)

    with pytest.warns(DeprecationWarning, match="'Static' is deprecated"):

        @lnnx.dataclass
        class P(lnnx.Pytree):
            a: lnnx.Data[int]
            b: lnnx.Static[Any]
            c: int = lnnx.static(default=3)

    p = P(1, "s")  # type: ignore[call-arg]
    assert jax.tree.leaves(p) == [1]
    assert pytreelib.AttributeStatus(True, False).is_data
    with pytest.raises(ValueError, match="Cannot use 'static' key in metadata"):
        lnnx.data(metadata={"static": True})


def test_registering_a_type_after_its_values_were_seen_makes_them_data():
    """is_data answers per type from a cache: a registration must reach it."""

    class Late:
        pass

    class Node:
        pass

    class Holder(lnnx.Module):
        def __init__(self):
            self.late, self.node = Late(), Node()
            self.size, self.shape, self.name = 3, (3, 3), "x"

    h = Holder()
    assert jax.tree.leaves(h) == [] and not pytreelib.is_data(Late())
    pytreelib.register_data_type(Late)
    assert jax.tree.leaves(h) == [h.late]
    lnnx.graph.register_graph_node_type(
        Node,
        flatten=lambda n: ((), None),
        set_key=lambda n, k, v: None,
        pop_key=lambda n, k: None,
        create_empty=lambda t: Node(),
        clear=lambda n: None,
        init=lambda n, items: None,
    )
    assert pytreelib.is_data(Node()) and len(jax.tree.leaves(h)) == 2


def test_list_items_declared_data_or_static():
    ls = lnnx.List([lnnx.data(10), lnnx.static("hello"), lnnx.data(20)])
    leaves, treedef = jax.tree.flatten(ls)
    assert leaves == [10, 20]
    again = jax.tree.unflatten(treedef, [1, 2])
    assert list(again) == [1, "hello", 2]
    ls.insert(0, lnnx.static(5))  # declarations move with their items
    assert jax.tree.leaves(ls) == [10, 20] and list(ls) == [5, 10, "hello", 20]
    del ls[1]
    assert jax.tree.leaves(ls) == [20]
    with pytest.raises(ValueError, match="annotated with nnx.static"):
        ls.append(lnnx.static(jnp.ones(2)))
    with pytest.raises(ValueError, match="Found unexpected tags"):
        ls.append([lnnx.data(1)])
    assert list(ls) == [5, "hello", 20]  # refused edits leave it unchanged
    assert ls == ls and ls != lnnx.List([5, "hello", 20])


def test_dict_iterates_in_insertion_order():
    d = lnnx.Dict(b=1, a=2)
    assert list(d) == ["b", "a"] == list(fnnx.Dict(b=1, a=2))
    with pytest.raises(KeyError):
        del d["zz"]


def test_sequential_passes_rngs_and_dict_outputs_as_flax():
    seen = {}

    def first(x, *, rngs=None):
        seen["first"] = rngs
        return {"y": x + 1, "z": 2}

    def second(y, z):
        return y * z

    rngs = lnnx.Rngs(0)
    seq = lnnx.Sequential(first, second)
    assert isinstance(seq.layers, lnnx.List)
    assert seq(1, rngs=rngs) == 4 and seen["first"] is rngs
    with pytest.raises(TypeError, match=r"Sequence\[1\] is not callable: 3"):
        lnnx.Sequential(abs, 3)(1)
    assert helpers.has_keyword_arg(first, "rngs")
    assert not helpers.has_keyword_arg(second, "rngs")


def test_module_helpers():
    assert module.first_from(None, 0, 1, error_msg="x") == 0
    with pytest.raises(ValueError, match="none given"):
        module.first_from(None, error_msg="none given")
    assert module.tuple_reduce(module.tuple_init(), 1) == (1,)


def test_proxy_caller_records_accesses():
    acc = proxy_caller.DelayedAccessor().a[0]
    assert acc.actions == (proxy_caller.GetAttr("a"), proxy_caller.GetItem(0))

    class A:
        a = [lambda x: x * 2]

    assert acc(A())(3) == 6
    proxy = proxy_caller.CallableProxy(lambda accessor, x: accessor(A())(x))
    assert proxy.a[0](4) == 8
    assert jax.tree.leaves(acc) == [] and copy.deepcopy(acc) == acc


def test_traversals():
    xs = {"foo": 1, "bar": {"a": 2, "b": {}}}
    assert traversals.flatten_to_sequence(xs) == [(("foo",), 1), (("bar", "a"), 2)]
    flat = traversals.flatten_mapping(xs, keep_empty_nodes=True)
    assert flat[("bar", "b")] is traversals.empty_node
    assert traversals.unflatten_mapping(list(flat.items())) == xs
    with pytest.raises(TypeError, match="expected Mapping"):
        traversals.flatten_to_sequence([1])  # type: ignore[arg-type]


def test_summary_and_visualization_helpers():
    assert (
        str(summary.ArrayRepr.from_array(jnp.ones((4, 3)))) == "[dim]float32[/dim][4,3]"
    )
    assert repr(summary.SimpleObjectRepr(lnnx.Rngs(0))) == "Rngs(...)"
    yaml = pytest.importorskip("yaml")
    assert yaml.dump({"a": None}, Dumper=summary.NoneDumper).strip() == "a: None"
    assert isinstance(summary.in_ipython, bool)
    assert isinstance(visualization.in_ipython, bool)
    import treescope

    class Thing:
        def __init__(self):
            self.a, self.b = 1, "x"

        def __treescope_repr__(self, path, subtree_renderer):
            return visualization.render_object_constructor(
                type(self), {"a": self.a, "b": self.b}, path, subtree_renderer
            )

    assert treescope.render_to_text(Thing()) == "Thing(a=1, b='x')"
    state_text = treescope.render_to_text(pytreelib.PytreeState())
    assert "PytreeState" in state_text and "trace_state" in state_text


def test_set_attributes_takes_graph_and_class_attributes_as_flax():
    class Block(lnnx.Module):
        mode = "a"  # a class attribute: set_attributes finds it (hasattr)

        def __init__(self, rngs):
            self.dropout = lnnx.Dropout(0.5, rngs=rngs)

    ours = Block(lnnx.Rngs(0))
    ours.set_attributes(mode="b", deterministic=True, graph=False)
    assert ours.mode == "b" and ours.dropout.deterministic
    assert Block.mode == "a"  # set on the instance
    ours.set_attributes(lnnx.Dropout, Block, deterministic=False)
    assert not ours.dropout.deterministic
    with pytest.raises(ValueError, match=r"following attributes: \['nope'\]"):
        ours.set_attributes(nope=1)


def test_a_data_attribute_stays_data_when_a_value_without_data_replaces_it():
    # flax.nnx's pytree guide: "data status doesn't change"; an explicit
    # lnnx.data / lnnx.static still switches it.
    class Foo(lnnx.Pytree):
        def __init__(self):
            self.a = jnp.array(1.0)
            self.b = "hello"
            self.c = lnnx.data(3.14)

    foo = Foo()
    foo.a = "not an array"
    foo.b = lnnx.data(42)
    foo.c = lnnx.static(0.5)
    leaves = jax.tree_util.tree_flatten_with_path(foo)[0]
    assert [(path[0].name, leaf) for path, leaf in leaves] == [
        ("a", "not an array"),
        ("b", 42),
    ]
    foo.b = "static again?"  # declared data by lnnx.data: stays data
    assert [leaf for _, leaf in jax.tree_util.tree_flatten_with_path(foo)[0]] == [
        "not an array",
        "static again?",
    ]
