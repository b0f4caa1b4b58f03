"""lens.nnx's public functions take flax.nnx's parameters (flax as the oracle)."""

import inspect

import jax
import jax.numpy as jnp
import pytest

from lens import nnx

try:
    import flax.nnx as fnnx
except ImportError:  # flax is a test extra: without it the comparisons skip
    fnnx = None

needs_flax = pytest.mark.skipif(fnnx is None, reason="flax (the oracle) is absent")

# Functions and lift types whose parameters must be Flax's, name for name.
SAME_PARAMETERS = [
    "jit", "grad", "value_and_grad", "vmap", "scan", "remat", "cond", "switch",
    "while_loop", "fori_loop", "eval_shape", "shard_map", "split_rngs", "split",
    "state", "graphdef", "iter_graph", "clone", "PathContains", "StateSharding",
]  # fmt: skip


def _params(obj):
    return [(p.name, p.kind) for p in inspect.signature(obj).parameters.values()]


@needs_flax
@pytest.mark.parametrize("name", SAME_PARAMETERS)
def test_parameters_match_flax(name):
    assert _params(getattr(nnx, name)) == _params(getattr(fnnx, name))


def test_graph_modes_are_accepted_as_in_flax():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    assert nnx.split(m, graph=True)[0] == nnx.split(m)[0]
    # transforms run every mode; the simple ones reject aliasing, as flax does
    assert nnx.jit(lambda m: m(jnp.ones((1, 2))), graph_updates=False)(m).shape == (
        1,
        3,
    )


def test_clone_variables_and_arrays_as_in_flax():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    c = nnx.clone(m)
    m.bias.value += 1
    assert (c.bias.value != m.bias.value).all()
    shared = nnx.clone(m, variables=False)
    assert shared is not m and shared.bias is m.bias and shared.kernel is m.kernel
    copied = nnx.clone(m, arrays=True)
    assert copied.kernel.value is not m.kernel.value
    assert (copied.kernel.value == m.kernel.value).all()
    with pytest.raises(
        ValueError, match="^If arrays is True, variables should be also True"
    ):
        nnx.clone(m, variables=False, arrays=True)


@needs_flax
def test_path_contains_inexact_matches_part_of_a_name():
    m = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    for lib, model in (
        (nnx, m),
        (fnnx, fnnx.Sequential(fnnx.Linear(2, 3, rngs=fnnx.Rngs(0)))),
    ):
        exact = lib.state(model, lib.PathContains("kern"))
        loose = lib.state(model, lib.PathContains("kern", exact=False))
        assert jax.tree.leaves(exact) == []
        assert [x.shape for x in jax.tree.leaves(loose)] == [(2, 3)]
    assert repr(nnx.PathContains("k", exact=False)) == "PathContains('k', exact=False)"


def test_options_lens_does_not_carry_raise_clearly():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    with pytest.raises(TypeError, match="JAX removed reduce_axes"):
        nnx.grad(lambda m: m.kernel.sum(), reduce_axes=("batch",))
    with pytest.raises(ValueError, match="names no axis"):
        nnx.vmap(lambda m: m, transform_metadata={"not_partition_name": "x"})
    g = nnx.grad(lambda m, x: (m(x) ** 2).sum(), allow_int=True)(m, jnp.ones((1, 2)))
    assert set(g) == {"bias", "kernel"}


# Layers whose constructor and call take Flax's parameters, name for name (the
# gemma example passes kernel_metadata=..., out_sharding=..., promote_dtype=...).
SAME_LAYER_PARAMETERS = [
    "Linear", "LinearGeneral", "Einsum", "Embed", "Conv", "ConvTranspose",
    "LayerNorm", "BatchNorm", "RMSNorm", "GroupNorm", "Dropout",
    "MultiHeadAttention", "LSTMCell", "GRUCell", "SimpleCell", "OptimizedLSTMCell",
    "PReLU", "InstanceNorm", "LoRA", "LoRALinear", "Bidirectional",
]  # fmt: skip
SAME_NEW_FUNCTIONS = [
    "capture", "view", "view_info", "with_attributes", "iter_modules",
    "iter_children", "with_partitioning", "get_partition_spec", "get_named_sharding",
    "get_abstract_model", "dot_product_attention", "variable_type_from_name",
    "register_variable_name", "custom_vjp", "vjp", "jvp", "pop", "variables",
    "cached_partial", "merge", "split_state", "filter_state", "merge_state",
    "map_state", "set_metadata", "find_duplicates", "recursive_map", "call",
]  # fmt: skip


@needs_flax
@pytest.mark.parametrize("name", SAME_LAYER_PARAMETERS)
@pytest.mark.parametrize("method", ["__init__", "__call__"])
def test_layer_parameters_match_flax(name, method):
    ours, theirs = getattr(nnx, name), getattr(fnnx, name)
    assert _params(getattr(ours, method)) == _params(getattr(theirs, method))


@needs_flax
@pytest.mark.parametrize("name", SAME_NEW_FUNCTIONS)
def test_more_parameters_match_flax(name):
    assert _params(getattr(nnx, name)) == _params(getattr(fnnx, name))


def test_empty_sequential_is_the_identity():
    iden = nnx.Sequential()
    assert iden(12) == 12
    assert iden(12, 23) == (12, 23)
    assert iden() is None
    assert iden(k=2) == {"k": 2}
