"""Methods of flax.nnx's classes that tests/test_flax_class_surface.py found lens's
lacked, run on lens and on flax (the oracle) alike: State's ``map``, ``|`` and
``-``; FlatState's ``split``, ``filter``, ``merge`` and slices; ``nnx.List`` and
``nnx.Dict`` as Modules (``eval``, ``iter_modules``); ``Variable.required_metadata``;
``DiffState.map_prefix``; ``StateSharding.shardings``; ``SizeBytes.from_any``."""

import warnings

import jax
import jax.numpy as jnp
import pytest

from lens import nnx as lnnx
from tests.helpers import tabulate

fnnx = pytest.importorskip("flax.nnx")

BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])


def _model(nnx):
    return nnx.Sequential(
        nnx.Linear(2, 3, rngs=nnx.Rngs(0)),
        nnx.BatchNorm(3, rngs=nnx.Rngs(0)),
        nnx.Dropout(0.5, rngs=nnx.Rngs(0)),
    )


def _paths(state):
    return sorted("/".join(map(str, p)) for p, _ in state.flat_state())


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # flax deprecates State's methods for dicts'
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


@BOTH
def test_state_union_difference_and_map(nnx):
    state = nnx.state(_model(nnx), nnx.Param, nnx.BatchStat)
    params, stats = state
    union = params | stats
    assert _paths(union) == sorted(_paths(params) + _paths(stats))
    assert (params | nnx.State({})) is params
    assert _paths(union - params) == _paths(stats)
    assert _paths(params - union) == []
    doubled = params.map(lambda path, v: v.replace(v[...] * 2))
    assert _paths(doubled) == _paths(params)
    kernel = params["layers"][0]["kernel"][...]
    assert jnp.allclose(doubled["layers"][0]["kernel"][...], 2 * kernel)


@BOTH
def test_flat_state_split_filter_merge_and_slices(nnx):
    flat = nnx.state(_model(nnx)).flat_state()
    params, rest = flat.split(nnx.Param, ...)
    assert type(params) is type(flat) and len(params) + len(rest) == len(flat)
    assert all(isinstance(v, nnx.Param) for _, v in params)
    with pytest.raises(ValueError, match="Non-exhaustive filters"):
        flat.split(nnx.Param)
    stats = flat.filter(nnx.BatchStat)
    assert len(stats) == 2 and all(isinstance(v, nnx.BatchStat) for _, v in stats)
    both = flat.filter(nnx.Param, nnx.BatchStat)
    assert [len(x) for x in both] == [4, 2]
    merged = type(flat).merge(params, rest)
    assert list(merged.paths) == list(flat.paths)
    assert type(flat).merge(params) is params
    head = flat[:2]
    assert type(head) is type(flat) and list(head.paths) == list(flat.paths[:2])
    assert flat[0][0] == flat.paths[0]


@BOTH
def test_list_and_dict_are_modules(nnx):
    model = _model(nnx)
    layers = model.layers
    assert isinstance(layers, nnx.Module)
    assert isinstance(nnx.Dict(a=nnx.Linear(1, 1, rngs=nnx.Rngs(0))), nnx.Module)
    layers.eval()
    assert layers[2].deterministic and layers[1].use_running_average
    layers.train()
    assert not layers[2].deterministic
    found = [(path, type(m).__name__) for path, m in nnx.iter_modules(model)]
    assert (("layers",), "List") in found and found[-1] == ((), "Sequential")
    d = nnx.Dict(a=nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    d.set_attributes(deterministic=True)
    assert d["a"].deterministic and list(d) == ["a"]


@BOTH
def test_required_metadata_and_prefix_helpers(nnx):
    assert nnx.Variable.required_metadata == frozenset(
        {"hijax", "ref", "eager_sharding"}
    )
    assert nnx.Param.required_metadata == nnx.Variable.required_metadata
    v = nnx.Param(jnp.ones(1), note=1)
    assert v.get_metadata(exclude_required=True) == {"note": 1}
    diff = nnx.DiffState(0, nnx.PathContains("kernel"))
    assert diff.map_prefix(("lin", "kernel"), v) and not diff.map_prefix(("b",), v)
    specs = nnx.StateSharding({nnx.Param: "p", ...: None})
    assert specs.shardings == ("p", None) and specs.filters[0] is nnx.Param


def test_size_bytes_from_any_counts_every_array_leaf():
    from flax.nnx import summary as fsummary

    from lens.nnx import summary as lsummary

    tree = {"a": jnp.ones((2, 3)), "b": [jnp.ones(4, jnp.int8), "text"]}
    ours, theirs = lsummary.SizeBytes.from_any(tree), fsummary.SizeBytes.from_any(tree)
    assert (ours.size, ours.bytes) == (theirs.size, theirs.bytes) == (10, 28)
    empty = lsummary.SizeBytes.from_any({})
    assert not empty and bool(empty) == bool(fsummary.SizeBytes.from_any({}))
    assert jax.tree.leaves(tree)  # the tree itself is untouched
    keys = {"k": jax.random.key(0), "ks": jax.random.split(jax.random.key(0), 3)}
    ours, theirs = lsummary.SizeBytes.from_any(keys), fsummary.SizeBytes.from_any(keys)
    assert (ours.size, ours.bytes) == (theirs.size, theirs.bytes) == (4, 32)


@BOTH
def test_tabulate_counts_a_model_holding_rng_keys(nnx):
    # Dropout(rngs=...) keeps an RngKey Variable: an extended dtype to size
    model = nnx.Sequential(
        nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.1, rngs=nnx.Rngs(1))
    )
    table = tabulate(  # (flax's tabulate leaves methods on classes: the helper not)
        nnx,
        model,
        jnp.ones((1, 2)),
        console_kwargs={"width": 200, "force_terminal": False, "no_color": True},
    )
    assert "RngState" in table and "2 (12 B)" in table and "9 (36 B)" in table


@BOTH
def test_keyword_calls_written_for_flax(nnx):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    y, (graphdef2, _) = graphdef.apply(state=state, graph=False)(jnp.ones((1, 2)))
    assert y.shape == (1, 3) and isinstance(graphdef2, nnx.GraphDef)
    layers = nnx.List([1, 2])
    layers.insert(index=0, value=0)
    assert list(layers) == [0, 1, 2]
    v = nnx.Param(jnp.ones(1))
    v.update_from_state(variable_state=nnx.Param(jnp.zeros(1), note=1))
    assert float(v[...][0]) == 0.0 and v.get_metadata("note") == 1


@BOTH
def test_split_context_flatten_with_filters(nnx):
    model = nnx.BatchNorm(3, rngs=nnx.Rngs(0))
    with nnx.split_context() as ctx:
        graphdef, params, stats = ctx.flatten(model, nnx.Param, nnx.BatchStat)
    assert isinstance(graphdef, nnx.GraphDef)
    assert sorted(p[-1] for p in params.paths) == ["bias", "scale"]
    assert sorted(p[-1] for p in stats.paths) == ["mean", "var"]
    with nnx.split_context() as ctx, pytest.raises(ValueError, match="with_paths"):
        ctx.flatten(model, nnx.Param, with_paths=False)


@BOTH
def test_nnx_dataclass_compares_fields_by_default_and_still_transforms(nnx):
    @nnx.dataclass
    class Scaled(nnx.Module):
        lin: nnx.Linear
        n: int = 3

        def __call__(self, x):
            return self.lin(x) * self.n

    lin = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    m = Scaled(lin)
    assert m == Scaled(lin) and m != Scaled(lin, 4)
    assert Scaled.__hash__ is None  # eq=True, as dataclasses make it
    x = jnp.ones((1, 2))
    assert nnx.jit(lambda m, x: m(x))(m, x).shape == (1, 3)
    graphdef, state = nnx.split(m)
    assert nnx.merge(graphdef, state).n == 3
    grads = nnx.grad(lambda m: m(x).sum())(m)
    assert grads["lin"]["kernel"].shape == (2, 3)

    @nnx.dataclass(eq=False)
    class ById(nnx.Module):
        n: int = 3

    assert ById() != ById() and hash(ById()) is not None
