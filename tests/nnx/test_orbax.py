"""Orbax checkpoints of nnx States (issue 45): save and restore with orbax's v0
(``StandardCheckpointer``, ``CheckpointManager``) and v1 (``save``/``load``,
``training.Checkpointer``) APIs, into abstract targets from ``nnx.eval_shape``,
targets sharded on a mesh, LoRA-only (partial) targets and pure dicts, in graph
and tree mode; each restored State is checked against flax.nnx's for the same
model and key: values, paths, Variable types, dtypes, metadata and shardings."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from lens import nnx as lnnx

fnnx = pytest.importorskip("flax.nnx")
ocp = pytest.importorskip("orbax.checkpoint")
v1 = getattr(ocp, "v1", None)
BOTH = pytest.mark.parametrize("nnx", [lnnx, fnnx], ids=["lens", "flax"])
GRAPH = pytest.mark.parametrize("graph", [True, False], ids=["graph", "tree"])
needs_v1 = pytest.mark.skipif(v1 is None, reason="orbax without the v1 API")
# eval_shape's targets carry no shardings: orbax then reads them from the checkpoint
pytestmark = pytest.mark.filterwarnings("ignore:Sharding info not provided")


def _model_cls(nnx):
    """LoRA layers, batch stats and an int8 "quantized" Variable subclass."""

    class QParam(nnx.Variable):
        pass

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.LoRALinear(3, 4, lora_rank=2, rngs=rngs)
            self.lora = nnx.LoRA(4, 2, 5, rngs=rngs)
            self.bn = nnx.BatchNorm(5, rngs=rngs)
            self.q = QParam(jnp.arange(6, dtype=jnp.int8).reshape(2, 3), scale=0.5)

    return Model


def _make(nnx):
    cls = _model_cls(nnx)
    return lambda: cls(nnx.Rngs(0))


def _sharded_make(nnx):
    init = nnx.initializers.lecun_normal()

    class Sharded(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.LoRALinear(
                4,
                8,
                lora_rank=2,
                rngs=rngs,
                kernel_init=nnx.with_partitioning(init, (None, "b")),
            )
            self.out = nnx.Linear(
                8, 4, rngs=rngs, kernel_init=nnx.with_partitioning(init, ("b", "a"))
            )

    return lambda: Sharded(nnx.Rngs(0))


def _mesh():
    return jax.make_mesh((2, 4), ("a", "b"))


def _spec(x):
    sharding = getattr(x, "sharding", None)
    return getattr(sharding, "spec", None)


def _describe(nnx, state):
    """Per variable: path, Variable type, dtype, shape, sharding, metadata."""
    out = []
    for path, v in nnx.to_flat_state(state):
        x = v.get_value()
        meta = v.get_metadata()
        out.append((path, type(v).__name__, str(x.dtype), x.shape, _spec(x), meta))
    return out


def _values(nnx, state):
    return {p: np.asarray(v.get_value()) for p, v in nnx.to_flat_state(state)}


def _assert_same_values(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=str(k))


def _both(case, *args):
    """Runs ``case(nnx, ...)`` with lens and flax; the State that lens restores
    must be flax's (``case`` returns the restored State)."""
    results = {}
    for nnx in (lnnx, fnnx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            state = case(nnx, *args)
        assert isinstance(state, nnx.State), type(state)
        results[nnx] = (_describe(nnx, state), _values(nnx, state))
    assert results[lnnx][0] == results[fnnx][0]
    _assert_same_values(results[lnnx][1], results[fnnx][1])
    return results[lnnx]


def _saved_and_abstract(nnx, graph):
    make = _make(nnx)
    _, state = nnx.split(make(), graph=graph)
    graphdef, abstract = nnx.split(nnx.eval_shape(make), graph=graph)
    return state, graphdef, abstract


def _check_merge(nnx, graphdef, restored, state):
    """The restored State merges into a model with the saved values."""
    model = nnx.merge(graphdef, restored)
    _assert_same_values(_values(nnx, nnx.state(model)), _values(nnx, state))
    assert isinstance(model.q.get_value(), jax.Array)
    assert model.q.get_value().dtype == jnp.int8
    return restored


# ------------------------------------------------------------------------- v0


@GRAPH
def test_v0_standard_checkpointer_into_an_eval_shape_target(tmp_path, graph):
    def case(nnx, graph):
        state, graphdef, abstract = _saved_and_abstract(nnx, graph)
        path = tmp_path / f"{nnx.__name__}-{graph}"
        with ocp.StandardCheckpointer() as ckptr:
            ckptr.save(path, state)
            ckptr.wait_until_finished()
            restored = ckptr.restore(path, abstract)
        return _check_merge(nnx, graphdef, restored, state)

    described, _ = _both(case, graph)
    types = {path: t for path, t, *_ in described}
    assert types[("lin", "lora", "lora_a")] == "LoRAParam"
    assert types[("lora", "lora_b")] == "LoRAParam"
    assert types[("bn", "mean")] == "BatchStat"
    assert types[("q",)] == "QParam"
    assert {p: m for p, *_, m in described}[("q",)]["scale"] == 0.5


@pytest.mark.parametrize(
    "graph, composite", [(True, False), (False, True)], ids=["graph", "tree-composite"]
)
def test_v0_checkpoint_manager_standard_and_composite(tmp_path, graph, composite):
    def case(nnx, graph, composite):
        state, graphdef, abstract = _saved_and_abstract(nnx, graph)
        directory = tmp_path / f"{nnx.__name__}-{graph}-{composite}"
        options = ocp.CheckpointManagerOptions(max_to_keep=1)
        save, restore = ocp.args.StandardSave(state), ocp.args.StandardRestore(abstract)
        if composite:
            save = ocp.args.Composite(model_params=save)
            restore = ocp.args.Composite(model_params=restore)
        with ocp.CheckpointManager(directory, options=options) as mngr:
            mngr.save(3, args=save)
            mngr.wait_until_finished()
            assert mngr.latest_step() == 3
            restored = mngr.restore(3, args=restore)
        if composite:
            restored = restored["model_params"]
        return _check_merge(nnx, graphdef, restored, state)

    _both(case, graph, composite)


def test_v0_restore_without_a_target_gives_flax_s_plain_dicts(tmp_path):
    trees = {}
    for nnx in (lnnx, fnnx):
        state = nnx.state(_make(nnx)())
        path = tmp_path / nnx.__name__
        with ocp.StandardCheckpointer() as ckptr:
            ckptr.save(path, state)
            ckptr.wait_until_finished()
            trees[nnx] = ckptr.restore(path)
    assert type(trees[lnnx]) is dict
    assert jax.tree.structure(trees[lnnx]) == jax.tree.structure(trees[fnnx])
    assert trees[lnnx]["lin"]["lora"]["lora_a"].keys() == {"value"}
    for a, b in zip(jax.tree.leaves(trees[lnnx]), jax.tree.leaves(trees[fnnx])):
        np.testing.assert_array_equal(a, b)


def test_v0_pytree_restore_of_only_the_lora_params(tmp_path):
    def case(nnx):
        make = _make(nnx)
        state = nnx.state(make())
        path = tmp_path / nnx.__name__
        with ocp.StandardCheckpointer() as ckptr:
            ckptr.save(path, state)
            ckptr.wait_until_finished()
        target = nnx.state(nnx.eval_shape(make), nnx.LoRAParam)
        with ocp.Checkpointer(ocp.PyTreeCheckpointHandler()) as ckptr:
            args = ocp.args.PyTreeRestore(item=target, partial_restore=True)
            return ckptr.restore(path, args=args)

    described, _ = _both(case)
    assert {t for _, t, *_ in described} == {"LoRAParam"}
    assert len(described) == 4


@GRAPH
def test_pure_dict_round_trip_as_flax_s_guide_shows(tmp_path, graph):
    def case(nnx, graph):
        state, graphdef, abstract = _saved_and_abstract(nnx, graph)
        path = tmp_path / f"{nnx.__name__}-{graph}"
        with ocp.StandardCheckpointer() as ckptr:
            ckptr.save(path, nnx.to_pure_dict(state))
            ckptr.wait_until_finished()
            pure = ckptr.restore(path)
        nnx.replace_by_pure_dict(abstract, pure)
        return _check_merge(nnx, graphdef, abstract, state)

    _both(case, graph)


# ------------------------------------------------------------------------- v1


def _v1_save_load():
    # orbax renamed save_pytree/load_pytree to save/load (the old names warn)
    save = getattr(v1, "save", None) or v1.save_pytree
    load = getattr(v1, "load", None) or v1.load_pytree
    return save, load


@needs_v1
@GRAPH
def test_v1_save_and_load_pytree(tmp_path, graph):
    save, load = _v1_save_load()

    def case(nnx, graph):
        state, graphdef, abstract = _saved_and_abstract(nnx, graph)
        path = tmp_path / f"{nnx.__name__}-{graph}"
        save(path, state)
        return _check_merge(nnx, graphdef, load(path, abstract), state)

    _both(case, graph)


@needs_v1
@GRAPH
def test_v1_training_checkpointer_checkpointables(tmp_path, graph):
    def case(nnx, graph):
        state, graphdef, abstract = _saved_and_abstract(nnx, graph)
        with v1.training.Checkpointer(tmp_path / f"{nnx.__name__}-{graph}") as ckptr:
            assert ckptr.save_checkpointables(1, {"model_params": state})
            assert ckptr.latest.step == 1
            loaded = ckptr.load_checkpointables(1, {"model_params": abstract})
        return _check_merge(nnx, graphdef, loaded["model_params"], state)

    _both(case, graph)


@needs_v1
@pytest.mark.parametrize("saved", ["lora", "all"])
def test_v1_partial_load_of_the_lora_params(tmp_path, saved):
    """The issue's trainer: save a model's (LoRA) params, perturb the model,
    load only its LoRAParams with ``partial_load`` and update the model.
    (orbax's partial load rebuilds the target State from (key, value) pairs.)"""

    def case(nnx, saved):
        model = _make(nnx)()
        expected = _values(nnx, nnx.state(model))
        to_save = nnx.state(model, nnx.LoRAParam if saved == "lora" else ...)
        with v1.training.Checkpointer(tmp_path / f"{nnx.__name__}-{saved}") as ckptr:
            ckptr.save_checkpointables(1, {"model_params": to_save})
            nnx.update(model, jax.tree.map(lambda x: x + 1, nnx.state(model)))
            context = v1.Context()
            context.pytree.loading.partial_load = True
            with context:
                target = {"model_params": nnx.state(model, nnx.LoRAParam)}
                loaded = ckptr.load_checkpointables(1, target)["model_params"]
        nnx.update(model, loaded)
        after = _values(nnx, nnx.state(model))
        for path, value in after.items():
            if "lora" in path[-1]:
                np.testing.assert_array_equal(value, expected[path])
            else:
                assert not np.array_equal(value, expected[path]), path
        return loaded

    described, _ = _both(case, saved)
    assert {t for _, t, *_ in described} == {"LoRAParam"}


@needs_v1
def test_v1_partial_load_leaves_out_keys_missing_from_the_checkpoint(tmp_path):
    """A target with more variables than the checkpoint: orbax puts placeholders
    at the missing paths, rebuilds the State around them, then leaves them out."""

    save, load = _v1_save_load()

    def case(nnx):
        model = _make(nnx)()
        path = tmp_path / nnx.__name__
        save(path, nnx.state(model, nnx.LoRAParam))
        context = v1.Context()
        context.pytree.loading.partial_load = True
        with context:
            loaded = load(path, nnx.state(model, nnx.Any(nnx.LoRAParam, "q")))
        assert "q" not in loaded
        return loaded

    _both(case)


@needs_v1
def test_v1_optimizer_state_next_to_the_model_params(tmp_path):
    optax = pytest.importorskip("optax")

    def case(nnx):
        model = _make(nnx)()

        def optimizer(lr):
            tx = optax.inject_hyperparams(optax.adamw)(learning_rate=lr)
            return nnx.Optimizer(model, tx, wrt=nnx.LoRAParam)

        saved = nnx.state(optimizer(1e-3), nnx.optimizer.OptState)
        new = optimizer(1e-5)
        with v1.training.Checkpointer(tmp_path / nnx.__name__) as ckptr:
            items = {"model_params": nnx.state(model), "optimizer_state": saved}
            ckptr.save_checkpointables(1, items)
            target = {
                "model_params": nnx.state(model),
                "optimizer_state": nnx.state(new, nnx.optimizer.OptState),
            }
            loaded = ckptr.load_checkpointables(1, target)["optimizer_state"]
        nnx.update(new, loaded)
        lr = new.opt_state.hyperparams["learning_rate"].get_value()
        np.testing.assert_allclose(lr, 1e-3)
        return loaded

    described, _ = _both(case)
    assert {t for _, t, *_ in described} == {"OptArray", "OptState", "OptVariable"}


# -------------------------------------------------------------------- sharded


def _save_sharded(nnx, path, save):
    mesh = _mesh()
    with jax.set_mesh(mesh):
        model = _sharded_make(nnx)()
    state = nnx.state(model)
    assert _spec(state["out"]["kernel"].get_value()) == P("b", "a")
    save(path, state)
    return mesh, state


@pytest.mark.parametrize("target", ["get_abstract_model", "get_named_sharding"])
def test_v0_restore_into_a_target_sharded_on_a_mesh(tmp_path, target):
    def case(nnx, target):
        path = tmp_path / f"{nnx.__name__}-{target}"
        with ocp.StandardCheckpointer() as ckptr:
            mesh, state = _save_sharded(nnx, path, ckptr.save)
            ckptr.wait_until_finished()
            if target == "get_abstract_model":
                _, abstract = nnx.get_abstract_model(_sharded_make(nnx), mesh)
            else:
                with jax.set_mesh(mesh):
                    model = nnx.eval_shape(_sharded_make(nnx))
                abstract = nnx.state(model)
                shardings = nnx.get_named_sharding(abstract, mesh)
                abstract = jax.tree.map(
                    lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
                    abstract,
                    shardings,
                )
            restored = ckptr.restore(path, abstract)
        for _, v in nnx.to_flat_state(restored):
            assert v.get_value().sharding.mesh.shape == mesh.shape
        return restored

    described, _ = _both(case, target)
    specs = {path: spec for path, _, _, _, spec, _ in described}
    assert specs[("out", "kernel")] == P("b", "a")
    assert specs[("lin", "kernel")] == P(None, "b")
    assert specs[("lin", "lora", "lora_a")] == P()


@needs_v1
def test_v1_load_into_a_target_sharded_on_a_mesh(tmp_path):
    save, load = _v1_save_load()

    def case(nnx):
        path = tmp_path / nnx.__name__
        mesh, _ = _save_sharded(nnx, path, save)
        _, abstract = nnx.get_abstract_model(_sharded_make(nnx), mesh)
        return load(path, abstract)

    described, _ = _both(case)
    specs = {path: spec for path, _, _, _, spec, _ in described}
    assert specs[("out", "kernel")] == P("b", "a")


# ---------------------------------------------------- what orbax relies on


@BOTH
def test_a_state_is_built_from_key_value_pairs_and_subclasses_are_pytrees(nnx):
    pairs = [("a", 1), ("b", {"c": 2})]
    assert nnx.State(pairs) == nnx.State(dict(pairs))
    assert nnx.State(iter(pairs))["b"]["c"] == 2

    class Sub(nnx.State):
        pass

    sub = Sub({"a": 1, "b": {"c": 2}})
    assert jax.tree.leaves(sub) == [1, 2]
    assert type(jax.tree.map(lambda x: x * 2, sub)) is Sub
