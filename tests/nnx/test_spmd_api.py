"""lens.nnx.spmd's flax.nnx functions (add_axis / remove_axis over a tree,
abstract_with_sharding), Format out_sharding, and sharding in the optimizer
(``optimizer_sharding``, gradients from jax.grad of a module); the optimizer's
MISSING sentinel and generic ModelAndOptimizer."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.experimental.layout import Format, Layout
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from lens import nnx
from lens.nnx import spmd
from lens.nnx.training import optimizer as opt_lib

fnnx = pytest.importorskip("flax.nnx")
fspmd = pytest.importorskip("flax.nnx.spmd")


def _mesh(names=("row", "col")):
    return jax.make_mesh((2, 2), names, axis_types=(AxisType.Auto,) * 2)


def _vars(lib):
    return {
        "w": lib.Param(
            jnp.ones((3, 4)),
            out_sharding=("a", "b"),
            nick=("x", "y"),
            eager_sharding=False,
        ),
        "b": lib.Param(jnp.ones(4)),
    }


def _record(lib):
    calls = []

    class Tracked(lib.Param):
        def add_axis(self, axis_index, axis_name):
            calls.append(("add", axis_index, axis_name))
            super().add_axis(axis_index, axis_name)

        def remove_axis(self, axis_index, axis_name):
            calls.append(("remove", axis_index, axis_name))
            super().remove_axis(axis_index, axis_name)

    return Tracked, calls


@pytest.mark.parametrize("index", [0, 1, 2])
def test_add_and_remove_axis_over_a_tree_as_flax(index):
    meta = {nnx.PARTITION_NAME: "layers", "nick": "n"}
    ours, theirs = _vars(nnx), _vars(fnnx)
    assert spmd.add_axis(ours, index, meta) is ours
    fspmd.add_axis(theirs, index, meta)
    for k in ("w", "b"):
        assert ours[k].get_metadata().get("out_sharding") == theirs[
            k
        ].get_metadata().get("out_sharding")
    assert ours["w"].nick == theirs["w"].nick
    spmd.remove_axis(ours, index, meta)
    assert ours["w"].out_sharding == ("a", "b") and ours["w"].nick == ("x", "y")


def test_axis_hooks_run_and_a_wrong_name_is_refused():
    Tracked, calls = _record(nnx)
    state = nnx.State(
        {"w": Tracked(jnp.ones((2, 3)), out_sharding=("a", "b"), eager_sharding=False)}
    )
    spmd.add_axis(state, 0, {nnx.PARTITION_NAME: "layers"})
    spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: "layers"})
    assert calls == [("add", 0, "layers"), ("remove", 0, "layers")]
    with pytest.raises(
        ValueError, match=r"^Expected to remove 'other' at index 0"
    ) as info:
        spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: "other"})
    assert "['w']" in str(info.value)  # where
    assert state["w"].out_sharding == ("a", "b")  # unchanged
    with pytest.raises(ValueError, match='"partition_name" is not specified'):
        spmd.add_axis(state, 0, {})


def test_abstract_with_sharding_is_as_abstract_deprecated():
    assert nnx.abstract_with_sharding is spmd.abstract_with_sharding
    with jax.set_mesh(_mesh(("a", "b"))):
        abstract = nnx.eval_shape(
            lambda: nnx.Linear(
                4, 8, rngs=nnx.Rngs(0), kernel_metadata={"out_sharding": ("a", "b")}
            )
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = nnx.abstract_with_sharding(abstract)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "Use as_abstract instead" in str(caught[0].message)
    assert out.kernel.sharding.spec == PartitionSpec("a", "b")


def test_a_variable_takes_a_format_as_out_sharding():
    mesh = _mesh(("data", "model"))
    ns = NamedSharding(mesh, PartitionSpec("data", None))
    v = nnx.Variable(
        jnp.ones((4, 4)), out_sharding=Format(Layout(major_to_minor=(1, 0)), ns)
    )
    assert v.sharding == ns


def test_optimizer_state_takes_optimizer_sharding():
    mesh = _mesh()
    with jax.set_mesh(mesh):
        model = nnx.Linear(
            4,
            2,
            rngs=nnx.Rngs(0),
            kernel_metadata={"optimizer_sharding": ("row", "col")},
        )
        opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    mu = opt.opt_state[0].mu["kernel"]
    assert model.kernel.sharding.is_equivalent_to(
        NamedSharding(mesh, PartitionSpec()), 2
    )
    assert mu.sharding.is_equivalent_to(
        NamedSharding(mesh, PartitionSpec("row", "col")), 2
    )
    assert (
        mu.out_sharding == ("row", "col")
        and "optimizer_sharding" not in mu.get_metadata()
    )


def test_update_takes_jax_grad_of_a_module():
    def loss(model, x):
        return jnp.sum(model(x) ** 2)

    results = []
    for grad in (jax.grad, nnx.grad):
        model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
        opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        opt.update(model, grad(loss)(model, jnp.ones((1, 3))))
        results.append(np.asarray(model.kernel[...]))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    assert not np.allclose(results[0], nnx.Linear(3, 2, rngs=nnx.Rngs(0)).kernel[...])


def test_missing_arguments_and_generic_model_and_optimizer():
    assert repr(opt_lib.MISSING) == "MISSING"
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    both = nnx.ModelAndOptimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    with pytest.raises(TypeError, match=r"^Missing required argument `grads`\."):
        both.update()
    with pytest.raises(TypeError, match=r"^Missing required argument `grads`\."):
        nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param).update(model)
    alias = nnx.ModelAndOptimizer[nnx.Linear]
    assert alias.__origin__ is nnx.ModelAndOptimizer  # type: ignore[attr-defined]
    grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
    both.update(grads)
    assert int(both.step[...]) == 1


def test_split_and_state_refuse_ellipsis_before_another_filter():
    m = nnx.Dict(a=nnx.Param(1), b=nnx.BatchStat(2))
    first = r"^`...` or `True` can only be used as the last filters"
    for bad in (
        lambda: nnx.split(m, ..., nnx.Param),
        lambda: nnx.state(m, True, nnx.Param),
        lambda: nnx.state(m).split(..., nnx.Param),
        lambda: nnx.state(m).filter(..., nnx.BatchStat),
    ):
        with pytest.raises(ValueError, match=first):
            bad()
    _, params, rest = nnx.split(m, nnx.Param, ...)  # last: takes the rest
    assert list(params) == ["a"] and list(rest) == ["b"]
    assert list(nnx.state(m, nnx.Param, ..., ...)[1]) == ["b"]


def test_vmap_init_runs_a_variables_add_axis_hook_once():
    # vmap traces a body that builds new state twice (structure, then values);
    # the Variable's add_axis runs for the first only, as flax.nnx's runs once.
    calls = []

    class Counted(nnx.Param):
        def add_axis(self, axis_index, axis_name):
            calls.append((axis_index, axis_name))
            super().add_axis(axis_index, axis_name)

    class Stack(nnx.Module):
        @nnx.split_rngs(splits=3)
        @nnx.vmap(in_axes=(0, 0), transform_metadata={nnx.PARTITION_NAME: "layers"})
        def __init__(self, rngs):
            self.w = Counted(jnp.ones((2,)), out_sharding=("d",))

    mesh = jax.make_mesh((1, 2), ("layers", "d"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        m = Stack(nnx.Rngs(0))
    assert calls == [(0, "layers")]
    assert m.w.shape == (3, 2) and m.w.out_sharding == ("layers", "d")
