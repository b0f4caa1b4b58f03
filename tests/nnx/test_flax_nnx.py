"""lens.nnx against flax.nnx: the same seed gives the same parameters, keys and
outputs (flax is a test oracle only)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx

fnnx = pytest.importorskip("flax.nnx")


def _values(state):
    return {k: np.asarray(v[...]) for k, v in _flat(state).items()}


def _flat(state):
    return {tuple(k): v for k, v in state.flat_state()}


@pytest.mark.parametrize(
    "make",
    [
        lambda m, r: m.Linear(3, 4, rngs=r),
        lambda m, r: m.Linear(3, 4, use_bias=False, rngs=r),
        lambda m, r: m.LayerNorm(5, rngs=r),
        lambda m, r: m.BatchNorm(5, rngs=r),
    ],
)
def test_same_seed_same_parameters_and_same_key_use(make):
    lr, fr = nnx.Rngs(0, params=3), fnnx.Rngs(0, params=3)
    a, b = make(nnx, lr), make(fnnx, fr)
    va, vb = _values(nnx.state(a)), _values(fnnx.state(b))
    assert va.keys() == vb.keys()
    for k in va:
        np.testing.assert_array_equal(va[k], vb[k])
    # the next key drawn is the same too (the layers spent as many keys)
    np.testing.assert_array_equal(
        jax.random.key_data(lr.params()), jax.random.key_data(fr.params())
    )


def test_same_outputs_for_the_same_state():
    x = jax.random.normal(jax.random.key(1), (6, 5))
    for make in (
        lambda m, r: m.Linear(5, 4, rngs=r),
        lambda m, r: m.LayerNorm(5, rngs=r),
        lambda m, r: m.BatchNorm(5, rngs=r),
    ):
        a, b = make(nnx, nnx.Rngs(0)), make(fnnx, fnnx.Rngs(0))
        np.testing.assert_allclose(a(x), b(x), rtol=1e-5, atol=1e-6)


def test_dropout_draws_the_same_mask():
    x = jnp.ones((4, 8))
    a = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=7))
    b = fnnx.Dropout(0.5, rngs=fnnx.Rngs(dropout=7))
    np.testing.assert_array_equal(a(x), b(x))
    np.testing.assert_array_equal(a(x), b(x))  # and the next one


def test_split_rngs_vmap_ensemble_matches():
    def ensemble(m):
        @m.split_rngs(splits=3)
        @m.vmap(in_axes=0, out_axes=0)
        def create(rngs):
            return m.Linear(2, 3, rngs=rngs)

        return create(m.Rngs(0))

    a, b = ensemble(nnx), ensemble(fnnx)
    np.testing.assert_array_equal(a.kernel[...], b.kernel[...])


def test_iter_graph_visits_each_container_once_and_yields_pytree_nodes_as_flax():
    # flax.nnx yields every pytree node (a tuple, list, dict, None, namedtuple,
    # registered dataclass) after its children, once by identity; leaves wherever
    # they are, the root included. (lens leaves out flax's _pytree__ internals.)
    import collections

    import flax.struct as fstruct

    from lens import struct as lstruct

    Pair = collections.namedtuple("Pair", "x y")
    shared = (1, 2)

    def walk(lib, struct):
        @struct.dataclass
        class Box:
            a: int
            b: object = None

        class Node(lib.Module):
            pass

        root = Node()
        root.first, root.again = shared, shared
        root.none, root.also_none = None, None
        root.pair = Pair(3, 4)
        root.box = lib.data(Box(5, lib.Param(jnp.ones(1))))
        root.seq, root.seq_again = [6], None
        root.seq_again = root.seq
        found = [
            (tuple(map(str, p)), type(x).__name__)
            for p, x in lib.iter_graph(root)
            if not any(str(k).startswith("_pytree__") for k in p)
        ]
        return found, list(lib.iter_graph(7)), list(lib.iter_graph((8,)))

    assert walk(nnx, lstruct) == walk(fnnx, fstruct)
    found, root_leaf, _ = walk(nnx, lstruct)
    paths = [p for p, _ in found]
    assert (("again",) in paths) + (("first",) in paths) == 1  # the shared tuple once
    assert (("pair", "x"), "int") in found and (("box",), "Box") in found
    assert root_leaf == [((), 7)]


def test_reprs_of_flat_state_rngs_optimizer_and_boxes_are_flaxs():
    import re

    import optax

    import lens.nn as lnn

    flax_linen = pytest.importorskip("flax.linen")

    def reprs(lib, linen):
        model = lib.Linear(2, 3, rngs=lib.Rngs(0))
        return [
            repr(lib.state(model).flat_state()),
            repr(lib.Rngs(0, dropout=1)),  # default last, as passed to flax
            repr(lib.Rngs({"params": 0, "dropout": 1})),  # a mapping of streams
            repr(lib.Optimizer(model, optax.sgd(0.1), wrt=lib.Param)),
            repr(linen.Partitioned(jnp.ones(2), ("a",))),
            repr(linen.LogicallyPartitioned(jnp.ones(2), ("a",))),
        ]

    def same(text):
        return re.sub(r" at 0x[0-9a-f]+", "", text)

    ours, theirs = reprs(nnx, lnn), reprs(fnnx, flax_linen)
    for a, b in zip(ours, theirs, strict=True):
        assert same(a) == same(b)
    with pytest.raises(AttributeError, match="does not have attribute 'model' since"):
        nnx.Optimizer(
            nnx.Linear(1, 1, rngs=nnx.Rngs(0)), optax.sgd(0.1), wrt=nnx.Param
        ).model
