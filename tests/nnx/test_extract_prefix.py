"""lens.nnx.extract's prefix helpers (broadcast_prefix*, extract/insert, argument
tuples, labeled, OrderedDict, filter_kwargs), compared with flax.nnx.extract."""

import jax
import jax.numpy as jnp
import pytest

from lens import nnx
from lens.nnx import extract

fnnx = pytest.importorskip("flax.nnx")
fextract = fnnx.extract

FULL = ({"a": 1, "b": 2}, [3, (4, 5)], 6)


def _model(nnx_mod):
    return nnx_mod.Linear(2, 3, rngs=nnx_mod.Rngs(0))


@pytest.mark.parametrize(
    "prefix",
    [0, (0, 1, 2), ({"a": 7, "b": 8}, 1, None), (None, [1, 2], 3)],
)
def test_broadcast_prefix_matches_flax(prefix):
    kw = {"prefix_is_leaf": lambda x: x is None}
    assert extract.broadcast_prefix(prefix, FULL, **kw) == fextract.broadcast_prefix(
        prefix, FULL, **kw
    )


def test_broadcast_prefix_stops_at_objects_and_variables():
    for mod, ext in ((nnx, extract), (fnnx, fextract)):
        m = _model(mod)
        tree = (m, [mod.Param(jnp.ones(2)), 1])
        # objects and Variables are prefix leaves; tree_is_leaf counts them as one
        is_node = lambda x, mod=mod: isinstance(x, mod.Variable | mod.Module)  # noqa: E731
        assert ext.broadcast_prefix((0, 1), tree, tree_is_leaf=is_node) == [0, 1, 1]
        # without tree_is_leaf, each array leaf of the model gets the prefix
        assert ext.broadcast_prefix((0, 1), tree) == [0, 0, 1, 1]


def test_broadcast_prefix_refuses_a_non_prefix():
    with pytest.raises(
        ValueError, match="pytree structure error|must be a tree prefix"
    ):
        extract.broadcast_prefix((0, 1), FULL)
    with pytest.raises(ValueError, match="tree prefix of the full tree"):
        extract.broadcast_prefix([0, 1, 2], FULL)


def test_broadcast_prefix2_matches_flax():
    prefix = ({"a": 0, "b": None}, 1, 2)
    kw = {"prefix_leaf": lambda x: x is None}
    got = extract.broadcast_prefix2(prefix, FULL, **kw)
    want = fextract.broadcast_prefix2(prefix, FULL, **kw)
    assert got == want
    assert got[1] == [0, None, 1, 1, 1, 2]


def test_broadcast_prefix_map_passes_paths_prefixes_and_rest():
    prefix = (0, 1, 2)
    rest = jax.tree.map(lambda x: 10 * x, FULL)
    f = lambda path, p, x, r: (jax.tree_util.keystr(path), p, x + r)  # noqa: E731
    got = extract.broadcast_prefix_map(f, prefix, FULL, rest)
    assert got == fextract.broadcast_prefix_map(f, prefix, FULL, rest)
    assert got[1][1][0] == ("[1][1][0]", 1, 44)


def test_broadcast_prefix_map_refuses_rest_of_another_structure():
    with pytest.raises(ValueError, match="rest must have full_tree's structure"):
        extract.broadcast_prefix_map(lambda *a: 0, 0, [1, 2], [1])


def test_extract_and_insert_round_trip():
    f = lambda path, p, x: p == 1  # noqa: E731
    new, taken = extract.extract(f, (0, 1, 0), FULL)
    fnew, ftaken = fextract.extract(f, (0, 1, 0), FULL)
    assert taken == ftaken == [3, 4, 5]
    index = extract.ExtractIndex
    assert new[1] == [index(0), (index(1), index(2))]
    assert jax.tree.leaves(new) == jax.tree.leaves(fnew) == [1, 2, 6]
    assert extract.insert(new, taken) == FULL


def test_insert_refuses_an_index_past_the_extracted_list():
    new, taken = extract.extract(lambda p, pre, x: True, 0, [1, 2])
    with pytest.raises(IndexError, match="out of range for 1 extracted"):
        extract.insert(new, taken[:1])


def test_tuple_helpers_match_flax():
    t = (1, 2, 3)
    for name, args in [
        ("mask_at", (t, 1)),
        ("mask_at", (t, None)),
        ("mask_at", ([1, 2], 0)),
        ("slice_at", (t, 0)),
        ("slice_at", (t, None)),
        ("replace_at", (t, 2, 9)),
        ("replace_at", (t, None, 9)),
        ("find", (t, 3)),
        ("find", (t, 7)),
        ("find", ([1, 2], 1)),
    ]:
        got = getattr(extract, name)(*args)
        want = getattr(fextract, name)(*args)
        assert repr(got) == repr(want), name
    assert extract.mask_at(t, 1) == (2, (1, extract.Mask(), 3))
    assert jax.tree.leaves(extract.mask_at(t, 1)[1]) == [1, 3]


def test_labeled_is_a_named_tuple_read_by_key():
    t = extract.labeled(args=(1,), kwargs={"x": 2})
    assert t["args"] == t.args == (1,) and t[1] == {"x": 2}
    assert t.keys() == ("args", "kwargs")
    assert type(t) is type(extract.labeled(args=0, kwargs=0))  # one type per keys
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(t)]
    fpaths = [
        jax.tree_util.keystr(p)
        for p, _ in jax.tree.leaves_with_path(
            fextract.labeled(args=(1,), kwargs={"x": 2})
        )
    ]
    assert paths == fpaths == [".args[0]", ".kwargs['x']"]


def test_ordered_dict_flattens_in_insertion_order():
    d = extract.OrderedDict([("b", 1), ("a", 2)])
    fd = fextract.OrderedDict([("b", 1), ("a", 2)])
    assert jax.tree.leaves_with_path(d) == jax.tree.leaves_with_path(fd)
    assert jax.tree.leaves(d) == [1, 2]
    assert repr(d) == repr(fd) == "OrderedDict({\n  'b': 1,\n  'a': 2\n})"
    assert repr(extract.OrderedDict()) == repr(fextract.OrderedDict())
    back = jax.tree.map(lambda x: x * 10, d)
    assert type(back) is extract.OrderedDict and list(back.items()) == [
        ("b", 10),
        ("a", 20),
    ]


def test_filter_kwargs_matches_flax():
    def f(a, /, b, *, c):
        return a

    def g(a, **kw):
        return a

    kwargs = {"a": 1, "b": 2, "c": 3, "d": 4}
    assert extract.filter_kwargs(f, **kwargs) == fextract.filter_kwargs(f, **kwargs)
    assert extract.filter_kwargs(f, **kwargs) == {"b": 2, "c": 3}
    assert extract.filter_kwargs(g, **kwargs) == kwargs


def test_state_axes_are_prefix_mappings():
    axes = nnx.StateAxes({nnx.Param: 0, ...: None})
    assert isinstance(axes, extract.PrefixMapping)
    assert axes.map_prefix(("kernel",), nnx.Param(1)) == 0
    assert not isinstance(0, extract.PrefixMapping)

    class Custom(extract.PrefixMapping):
        def map_prefix(self, path, variable, /):
            return len(path)

    assert Custom().map_prefix(("a", "b"), nnx.Param(1)) == 2
    with pytest.raises(TypeError):
        extract.PrefixMapping()  # pyright: ignore[reportAbstractUsage]


def _stack(mod):
    class Foo(mod.Module):
        def __init__(self, rngs):
            self.w = mod.Param(rngs.normal((4, 2, 3)))
            self.count = mod.BatchStat(jnp.zeros(()))

    return Foo(mod.Rngs(0))


def test_tree_mode_prefix_is_the_objects_pytree_of_prefixes():
    specs = nnx.prefix(_stack(nnx), {nnx.Param: 0, ...: None}, graph=False)
    fspecs = fnnx.prefix(_stack(fnnx), {fnnx.Param: 0, ...: None}, graph=False)
    assert specs.w == fspecs.w == 0 and specs.count is fspecs.count is None
    paths = lambda t: [  # noqa: E731
        (jax.tree_util.keystr(p), x)
        for p, x in jax.tree.leaves_with_path(t, is_leaf=lambda x: x is None)
    ]
    assert paths(specs) == paths(fspecs) == [(".count", None), (".w", 0)]


def test_tree_mode_prefix_is_taken_by_jax_and_nnx_vmap():
    model = _stack(nnx)
    specs = nnx.prefix(model, {nnx.Param: 0, ...: None}, graph=False)
    x = jnp.ones((2,))
    y = jax.vmap(lambda m, x: x @ m.w[...], in_axes=(specs, None))(model, x)
    assert y.shape == (4, 3)
    want = jnp.einsum("i,bij->bj", x, model.w[...])
    assert jnp.allclose(y, want, atol=1e-5)

    @nnx.vmap(in_axes=(specs, None), graph=False, graph_updates=False)
    def g(m, x):
        return x @ m.w

    assert jnp.allclose(g(model, x), want, atol=1e-5)
    # flax: a tree-mode prefix is an object, refused in graph mode
    with pytest.raises(ValueError, match="Graph nodes are not allowed as prefixes"):
        nnx.vmap(lambda m, x: x, in_axes=(specs, None), graph=True)


def test_tree_mode_prefix_as_out_axes_stacks_new_objects():
    abstract = nnx.eval_shape(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    specs = nnx.prefix(abstract, {nnx.PathContains("kernel"): 1, ...: 0}, graph=False)

    @nnx.vmap(in_axes=0, out_axes=specs, graph=False, graph_updates=False)
    def create(key):
        return nnx.Linear(2, 3, rngs=nnx.Rngs(key))

    m = create(jax.random.split(jax.random.key(0), 5))
    assert m.kernel.shape == (2, 5, 3) and m.bias.shape == (5, 3)
