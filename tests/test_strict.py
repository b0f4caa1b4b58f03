"""Strict mode (``lens.strict``): each case Flax accepts silently raises or warns
in strict mode, and behaves as Flax's by default.

The cases are those of docs/reliability.md#strict-mode, in its order; each has a
``_strict`` test and a ``_default`` test (the latter runs Flax beside lens where
that is practical).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import pathlib
import re
import subprocess
import sys
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import lens
from lens import errors, nn, nnx, serialization
from lens.training import checkpoints

fnn = pytest.importorskip("flax.linen")
fnnx = pytest.importorskip("flax.nnx")
fser = pytest.importorskip("flax.serialization")
fckpt = pytest.importorskip("flax.training.checkpoints")
import flax  # noqa: E402

X = jnp.ones((1, 3))


@pytest.fixture(autouse=True)
def default_mode():
    """Every test starts with strict mode off for the process (whatever
    LENS_STRICT says) and leaves it as it was."""
    before = lens.config.lens_strict
    lens.config.update("lens_strict", False)
    yield
    lens.config.update("lens_strict", before)


@contextlib.contextmanager
def silent():
    """No StrictModeWarning nor UnusedVariablesWarning inside (either fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.StrictModeWarning)
        warnings.simplefilter("error", errors.UnusedVariablesWarning)
        yield


# ------------------------------------------------------------------------ the API


def test_off_by_default_and_on_inside_a_with_block_only():
    assert not lens.is_strict()
    with lens.strict():
        assert lens.is_strict()
        with lens.strict():
            assert lens.is_strict()
        assert lens.is_strict()
    assert not lens.is_strict()


def test_one_object_can_be_entered_again():
    block = lens.strict()
    for _ in range(2):
        with block:
            assert lens.is_strict()
        assert not lens.is_strict()


def test_the_call_sets_the_process_and_every_thread_sees_it():
    seen = []
    lens.strict(True)
    t = threading.Thread(target=lambda: seen.append(lens.is_strict()))
    t.start()
    t.join()
    assert seen == [True] and lens.config.lens_strict is True
    lens.strict(False)
    assert not lens.is_strict()


def test_a_with_block_in_one_thread_leaves_other_threads_alone():
    entered, checked = threading.Event(), threading.Event()
    inside = []

    def worker():
        with lens.strict():
            inside.append(lens.is_strict())
            entered.set()
            checked.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(10)
    try:
        assert inside == [True]
        assert not lens.is_strict()  # this thread: still off
    finally:
        checked.set()
        t.join()


def test_a_with_block_holds_in_its_own_context_only():
    before = contextvars.copy_context()
    with lens.strict():
        assert contextvars.copy_context().run(lens.is_strict)
        assert not before.run(lens.is_strict)  # a context copied before the block


def test_the_with_block_restores_after_an_error():
    with pytest.raises(KeyError), lens.strict():
        raise KeyError("x")
    assert not lens.is_strict()


def test_strict_takes_a_bool():
    with pytest.raises(TypeError, match="True or False"):
        lens.strict("yes")  # type: ignore[arg-type]


def test_a_bare_call_turns_it_on_for_the_process():
    try:
        lens.strict()
        assert lens.is_strict() and lens.config.lens_strict is True
    finally:
        lens.strict(False)
    assert not lens.is_strict()


def test_with_false_turns_it_off_in_a_block_only():
    lens.strict(True)
    try:
        with lens.strict(False):
            assert not lens.is_strict()
        assert lens.is_strict()
    finally:
        lens.strict(False)


def test_the_environment_variable_turns_it_on():
    code = "import lens; print(lens.is_strict(), lens.config.lens_strict)"
    env = {**os.environ, "LENS_STRICT": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "True"], out.stderr
    env["LENS_STRICT"] = "0"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_the_notebook_magic(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    lens.load_ipython_extension(ip)
    try:
        ip.run_line_magic("lens_strict", "on")
        assert lens.is_strict()
        ip.run_line_magic("lens_strict", "")
        assert "strict mode is on" in capsys.readouterr().out
        ip.run_line_magic("lens_strict", "off")
        assert not lens.is_strict()
        with pytest.raises(ValueError, match="on or off"):
            ip.run_line_magic("lens_strict", "maybe")
    finally:
        lens.unload_ipython_extension(ip)
    assert "lens_strict" not in ip.magics_manager.magics["line"]


# --------------------------------------------------- 1. apply: variables unread


class _Two(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(x)

    @nn.nowrap
    def variables_with(self, **extra):
        v = self.init(jax.random.key(0), X)
        return {"params": {**v["params"], **extra}}


def _typo(v):
    dense = dict(v["params"]["Dense_0"], kernal=jnp.ones((3, 2)))
    return {"params": {"Dense_0": dense}}


def test_unused_variables_strict():
    m = _Two()
    v = m.variables_with()
    with lens.strict():
        with pytest.raises(errors.UnusedVariablesError, match="params/Dense_0/kernal"):
            m.apply(_typo(v), X)
        extra = m.variables_with(extra={"kernel": jnp.ones((3, 2))})
        with pytest.warns(errors.UnusedVariablesWarning, match="params/extra"):
            m.apply(extra, X)


def test_unused_variables_default():
    m, fm = _Two(), _FlaxTwo()
    v = m.variables_with(extra={"kernel": jnp.ones((3, 2))})
    with silent():  # a whole subtree no module read: silent, as in Flax
        y = m.apply(v, X)
    np.testing.assert_allclose(y, fm.apply(v, X), rtol=1e-6)
    # lens's own default promise (docs/reliability.md): a typo beside read
    # variables warns, and the result is Flax's.
    with pytest.warns(errors.UnusedVariablesWarning):
        y = m.apply(_typo(v), X)
    np.testing.assert_allclose(y, fm.apply(_typo(v), X), rtol=1e-6)


class _FlaxTwo(fnn.Module):
    @fnn.compact
    def __call__(self, x):
        return fnn.Dense(2)(x)


# ---------------------------------------------- 2. Optimizer.update: stray grads


class _Net:
    """The same model in lens.nnx and flax.nnx: a Linear and a BatchNorm."""

    @staticmethod
    def make(lib):
        class Net(lib.Module):
            def __init__(self, rngs):
                self.lin = lib.Linear(2, 3, rngs=rngs)
                self.bn = lib.BatchNorm(3, rngs=rngs)

            def __call__(self, x):
                return self.bn(self.lin(x))

        return Net(lib.Rngs(0))


def _loss(m):
    return jnp.sum(m(jnp.arange(4.0).reshape(2, 2)) ** 2)


def _grads(lib, m, with_stats=False):
    if with_stats:
        wrt = lib.DiffState(0, lib.Any(lib.Param, lib.BatchStat))
        return lib.grad(_loss, argnums=wrt)(m)
    return lib.grad(_loss)(m)


def _with_extra(lib, grads):
    g = jax.tree.map(lambda x: x, grads)
    g["extra"] = lib.Variable(jnp.ones(3))
    return g


def test_optimizer_stray_gradients_strict():
    m = _Net.make(nnx)
    opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param)
    kernel = np.asarray(m.lin.kernel[...])
    with lens.strict():
        with pytest.raises(errors.UnusedGradientsError, match="extra"):
            opt.update(m, _with_extra(nnx, _grads(nnx, m)))
        np.testing.assert_array_equal(m.lin.kernel[...], kernel)  # nothing written
        assert int(opt.step[...]) == 0
        with pytest.warns(errors.StrictModeWarning, match="bn/mean"):
            opt.update(m, _grads(nnx, m, with_stats=True))
        with silent():
            opt.update(m, _grads(nnx, m))


def test_optimizer_stray_gradients_default():
    results = []
    for lib in (nnx, fnnx):
        m, m2 = _Net.make(lib), _Net.make(lib)
        opt = lib.Optimizer(m, optax.sgd(0.1), wrt=lib.Param)
        opt2 = lib.Optimizer(m2, optax.sgd(0.1), wrt=lib.Param)
        with silent():
            opt.update(m, _with_extra(lib, _grads(lib, m)))  # dropped silently
            opt.update(m, _grads(lib, m, with_stats=True))
        opt2.update(m2, _grads(lib, m2))
        opt2.update(m2, _grads(lib, m2))
        np.testing.assert_allclose(m.lin.kernel[...], m2.lin.kernel[...], rtol=1e-6)
        results.append(np.asarray(m.lin.kernel[...]))
    np.testing.assert_allclose(*results, rtol=1e-5)


# ---------------------------------------------- 3. nnx.update: a key the model lacks


def _state_with_extra(lib, m):
    s = jax.tree.map(lambda x: x, lib.state(m))
    s["kernel"] = lib.Param(jnp.zeros((2, 3)))
    s["extra"] = lib.Param(jnp.ones(3))
    return s


def test_update_unknown_key_strict():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    kernel = np.asarray(m.kernel[...])
    with lens.strict():
        with pytest.raises(errors.GraphStructureError, match="has no 'extra'"):
            nnx.update(m, _state_with_extra(nnx, m))
        assert not hasattr(m, "extra")
        np.testing.assert_array_equal(m.kernel[...], kernel)  # nothing written
        nnx.update(m, nnx.state(m))


def test_update_unknown_key_default():
    for lib in (nnx, fnnx):
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        with silent():
            lib.update(m, _state_with_extra(lib, m))
        assert m.extra[...].shape == (3,)  # added, as flax.nnx adds it
        assert not np.any(m.kernel[...])


# --------------------------------------------- 4. nnx.merge: another model's state


def test_merge_other_models_state_strict():
    with lens.strict():
        ga, sa = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        _, sb = nnx.split(nnx.Linear(4, 5, rngs=nnx.Rngs(0)))
        with pytest.raises(errors.GraphStructureError, match=r"has shape \(5,\)"):
            nnx.merge(ga, sb)
        _, sbn = nnx.split(nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
        with pytest.raises(errors.GraphStructureError, match="no place for: mean"):
            nnx.merge(ga, sbn)
        # a stacked state (leading axes added, as vmap or scan over layers gives)
        # is the graphdef's own
        stacked = jax.tree.map(lambda x: jnp.stack([x, x]), sa)
        with silent():
            assert nnx.merge(ga, stacked).kernel[...].shape == (2, 2, 3)


def test_merge_other_models_state_default():
    for lib in (nnx, fnnx):
        ga, _ = lib.split(lib.Linear(2, 3, rngs=lib.Rngs(0)))
        _, sb = lib.split(lib.Linear(4, 5, rngs=lib.Rngs(0)))
        with silent():
            merged = lib.merge(ga, sb)
        assert merged.kernel[...].shape == (4, 5) and merged.in_features == 2


# --------------------------------------------------- 5. merge twice: shared state


def test_merge_twice_strict():
    with lens.strict():
        g, s = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        with silent():
            first = nnx.merge(g, s)
        with pytest.warns(errors.StrictModeWarning, match="copy=True"):
            second = nnx.merge(g, s)
        assert second.kernel is first.kernel
        with silent():
            copied = nnx.merge(g, s, copy=True)
        assert copied.kernel is not first.kernel


def test_merge_twice_default():
    for lib in (nnx, fnnx):
        g, s = lib.split(lib.Linear(2, 3, rngs=lib.Rngs(0)))
        with silent():
            first, second = lib.merge(g, s), lib.merge(g, s)
        assert first.kernel is second.kernel  # shared, as in flax.nnx


# ---------------------------------------- 6. a field set on an unbound Linen module


def test_setattr_on_unbound_field_strict():
    with lens.strict():
        dense = nn.Dense(3)
        with pytest.raises(errors.SetAttributeFrozenModuleError, match="clone"):
            dense.features = 5
        assert dense.features == 3
        assert dense.clone(features=5).features == 5

        class Doubled(nn.Module):  # fields set while constructing: allowed
            features: int = 2

            def __post_init__(self):
                self.features = self.features * 2
                self._round()
                super().__post_init__()

            def _round(self):
                self.features += 1

            @nn.compact
            def __call__(self, x):
                return nn.Dense(self.features)(x)

        with silent():
            assert Doubled().features == 5
            Doubled().init(jax.random.key(0), X)  # clone re-runs __post_init__


def test_setattr_on_unbound_field_default():
    for lib in (nn, fnn):
        dense = lib.Dense(3)
        with silent():
            dense.features = 5
        assert dense.features == 5
        kernel = dense.init(jax.random.key(0), X)["params"]["kernel"]
        assert kernel.shape == (3, 5)


# ------------------------------------------------ 7. two @compact methods


def _two_compact(lib):
    class TwoCompact(lib.Module):
        @lib.compact
        def __call__(self, x):
            return self.encode(lib.Dense(2, name="a")(x))

        @lib.compact
        def encode(self, x):
            return lib.Dense(4, name="b")(x)

    return TwoCompact()


def test_two_compact_methods_strict():
    with lens.strict():
        with pytest.raises(
            errors.MultipleMethodsCompactError,
            match=r"TwoCompact.__call__ and TwoCompact.encode are both @compact",
        ):
            _two_compact(nn).init(jax.random.key(0), X)


def test_two_compact_methods_default():
    shapes = []
    for lib in (nn, fnn):
        with silent():
            v = _two_compact(lib).init(jax.random.key(0), X)
        shapes.append(jax.tree.map(jnp.shape, v))
    assert shapes[0] == shapes[1]


# ---------------------------------------- 7b. setup and @compact both make modules


def _setup_and_compact(lib, compact_makes_a_module=True):
    class Both(lib.Module):
        def setup(self):
            self.a = lib.Dense(2)

        @lib.compact
        def __call__(self, x):
            if compact_makes_a_module:
                return lib.Dense(5)(self.a(x))
            return self.a(x) * self.param("w", lib.initializers.ones, ())

    return Both()


def test_setup_and_compact_strict():
    with lens.strict():
        with pytest.warns(
            errors.StrictModeWarning, match=r"Both.__call__ .*Both.setup .*self.a"
        ) as record:
            _setup_and_compact(nn).init(jax.random.key(0), X)
        assert record[0].filename == __file__  # at the user's line
        with silent():  # the compact method makes a parameter only: fine
            _setup_and_compact(nn, False).init(jax.random.key(0), X)


def test_setup_and_compact_default():
    shapes = []
    for lib in (nn, fnn):
        with silent():
            v = _setup_and_compact(lib).init(jax.random.key(0), X)
        shapes.append(jax.tree.map(jnp.shape, v))
    assert shapes[0] == shapes[1]


# ------------------------------------ 8. nnx.vmap adds an attribute to an argument


def _vmap_adding(lib):
    class Cache(lib.Module):
        def __init__(self, rngs):
            self.lin = lib.Linear(3, 3, rngs=rngs)

    @lib.vmap(in_axes=(None, 0))
    def f(m, x):
        m.cache = lib.Variable(x * 2)  # m is not mapped: x * 2 has no axis out
        return m.lin(x)

    return Cache(lib.Rngs(0)), f


def test_vmap_adding_an_attribute_strict():
    m, f = _vmap_adding(nnx)
    with lens.strict():
        with pytest.raises(
            errors.GraphStructureError, match=r"added args\[0\].cache \(on a Cache\)"
        ):
            f(m, jnp.ones((4, 3)))
        assert not hasattr(m, "cache")

        class Ensemble(nnx.Module):  # a vmapped __init__ (mapped self): fine
            @nnx.split_rngs(splits=3)
            @nnx.vmap(in_axes=(0, 0))
            def __init__(self, rngs):
                self.lin = nnx.Linear(2, 4, rngs=rngs)

        with silent():
            assert Ensemble(nnx.Rngs(0)).lin.kernel[...].shape == (3, 2, 4)


def test_vmap_adding_an_attribute_default():
    for lib in (nnx, fnnx):  # JAX refuses the output's axes, in both
        m, f = _vmap_adding(lib)
        with pytest.raises(ValueError, match="axis spec None") as info:
            f(m, jnp.ones((4, 3)))
        assert not isinstance(info.value, errors.GraphStructureError)


# --------------------------------------- 9. bytes with a checksum (any mode)

TREE = {"w": np.arange(4, dtype=np.float32), "b": np.float32(2.0)}


def test_checksum_detects_every_flipped_bit():
    data = serialization.to_bytes(TREE, checksum=True)
    for mode in (lens.strict(), warnings.catch_warnings()):
        with mode:
            for i in range(len(data)):
                bad = bytearray(data)
                bad[i] ^= 0x01
                with pytest.raises(
                    (errors.BytesCorruptedError, errors.SerializationError)
                ):
                    serialization.from_bytes(TREE, bytes(bad))
    bad = bytearray(data)
    bad[-100] ^= 0x01  # inside the array data: restorable, but corrupted
    with pytest.raises(errors.BytesCorruptedError, match="do not match"):
        serialization.from_bytes(TREE, bytes(bad))


def test_checksum_bytes_round_trip_and_flax_reads_them():
    for n in (1, 15, 16, 70000):  # the map header grows at 16 and 2**16 entries
        tree = {f"k{i}": np.float32(i) for i in range(n)}
        data = serialization.to_bytes(tree, checksum=True)
        assert serialization.from_bytes(tree, data) == tree
        assert set(serialization.msgpack_restore(data)) == set(tree)
        assert fser.from_bytes(tree, data) == tree  # Flax ignores the entry
    with pytest.raises(errors.SerializationError, match="dict"):
        serialization.to_bytes(np.ones(2), checksum=True)


def test_bytes_default_are_flaxs_and_a_flipped_byte_restores_as_in_flax():
    data = serialization.to_bytes(TREE)
    assert data == fser.to_bytes(TREE)  # byte for byte
    bad = bytearray(data)
    bad[-3] ^= 0x01  # the scalar's data: still decodes
    got = serialization.from_bytes(TREE, bytes(bad))
    want = fser.from_bytes(TREE, bytes(bad))
    assert got["b"] == want["b"] != TREE["b"]  # silently wrong, in both


# ---------------------------------- 10. restore_checkpoint from a missing directory


def test_restore_from_a_missing_directory_strict(tmp_path):
    missing = tmp_path / "nope"
    with lens.strict():
        with pytest.raises(errors.CheckpointNotFoundError, match="nope") as info:
            checkpoints.restore_checkpoint(missing, TREE)
        assert isinstance(info.value, FileNotFoundError)
        assert checkpoints.restore_checkpoint(tmp_path, TREE) is TREE  # empty: fine


def test_restore_from_a_missing_directory_default(tmp_path):
    missing = str(tmp_path / "nope")
    assert checkpoints.restore_checkpoint(missing, TREE) is TREE
    assert fckpt.restore_checkpoint(missing, TREE) is TREE


# ---------------------------------------------------------- 11. a string step


def test_string_step_strict(tmp_path):
    with lens.strict():
        with pytest.raises(errors.CheckpointStepTypeError, match="step='10'") as info:
            checkpoints.save_checkpoint(tmp_path, TREE, step="10")
        assert isinstance(info.value, TypeError)
        assert not os.listdir(tmp_path)
        checkpoints.save_checkpoint(tmp_path, TREE, step=10)
        with pytest.raises(errors.CheckpointStepTypeError):
            checkpoints.restore_checkpoint(tmp_path, TREE, step="10")


def test_string_step_default(tmp_path):
    ours, theirs = tmp_path / "lens", tmp_path / "flax"
    checkpoints.save_checkpoint(ours, TREE, step="10")
    with flax.config.temp_flip_flag("use_orbax_checkpointing", False):
        fckpt.save_checkpoint(str(theirs), TREE, step="10")
    assert os.listdir(ours) == os.listdir(theirs) == ["checkpoint_10"]
    restored = checkpoints.restore_checkpoint(ours, TREE, step="10")
    np.testing.assert_array_equal(restored["w"], TREE["w"])


# ------------------------------------ 12. restore_checkpoint into other shapes


def test_restore_into_other_shapes_strict(tmp_path):
    checkpoints.save_checkpoint(tmp_path, {"w": np.ones((4, 5), np.float32)}, step=0)
    with lens.strict():
        with pytest.raises(errors.SerializationError, match=r"/w has shape \[4, 5\]"):
            checkpoints.restore_checkpoint(
                tmp_path, {"w": np.zeros((2, 3), np.float32)}
            )


def test_restore_into_other_shapes_default(tmp_path):
    # Flax's checkpoints_test.test_smaller_target: the target is a placeholder
    ours, theirs = tmp_path / "lens", tmp_path / "flax"
    saved = {"w": np.ones((4, 5), np.float32)}
    checkpoints.save_checkpoint(ours, saved, step=0)
    with flax.config.temp_flip_flag("use_orbax_checkpointing", False):
        fckpt.save_checkpoint(str(theirs), saved, step=0)
        flax_got = fckpt.restore_checkpoint(str(theirs), {"w": np.zeros((2, 3))})
    got = checkpoints.restore_checkpoint(ours, {"w": np.zeros((2, 3), np.float32)})
    assert got["w"].shape == flax_got["w"].shape == (4, 5)


# ------------------------------------------------------------------ the docs


def test_the_docs_list_every_case_with_its_tests():
    page = pathlib.Path(__file__).parent.parent / "docs" / "reliability.md"
    section = page.read_text().split("## Strict mode", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"::(test_\w+)", section))
    here = {n for n in globals() if n.startswith("test_")}
    assert named <= here, named - here  # no stale names
    pairs = {n for n in here if n.endswith(("_strict", "_default"))}
    assert len(pairs) >= 20 and pairs <= named, pairs - named  # every case, both


# ------------------------------- 13. nn.jit argnums past the call's arguments


class _TakesN(nn.Module):
    @nn.compact
    def __call__(self, x, n=2):
        return nn.Dense(n)(x)


def test_jit_argnums_past_the_arguments_strict():
    with lens.strict():
        with pytest.raises(
            errors.JitArgnumsError,
            match=r"^Jitted function has static_argnums=\(7,\), but only accepts 2",
        ) as info:
            nn.jit(_TakesN, static_argnums=(7,))().init(jax.random.key(0), X)
        assert isinstance(info.value, ValueError)
        # counted as the user counts: the module is 0, n is 2
        v = nn.jit(_TakesN, static_argnums=(2,))().init(jax.random.key(0), X, 3)
        assert v["params"]["Dense_0"]["kernel"].shape == (3, 3)


def test_jit_argnums_past_the_arguments_default():
    class TakesN(fnn.Module):
        @fnn.compact
        def __call__(self, x, n=2):
            return fnn.Dense(n)(x)

    key = jax.random.key(0)
    ours = nn.jit(_TakesN, static_argnums=(7,), donate_argnums=(5,))().init(key, X)
    theirs = fnn.jit(TakesN, static_argnums=(7,), donate_argnums=(5,))().init(key, X)
    assert jax.tree.map(jnp.shape, ours) == jax.tree.map(jnp.shape, theirs)


# ------------------------------ 14. a saved dict key the restore target lacks


def test_restore_a_key_the_target_lacks_strict(tmp_path):
    data = serialization.to_bytes({"params": {"w": 1.0}, "opt": 2.0})
    checkpoints.save_checkpoint(tmp_path, {"params": {"w": 1.0}, "opt": 2.0}, 1)
    with lens.strict():
        with pytest.raises(errors.SerializationError, match=r"keys \{'opt'\}"):
            serialization.from_bytes({"params": {"w": 0.0}}, data)
        with pytest.raises(
            errors.SerializationError, match=r"keys \{'opt'\}.* at path \.\n"
        ):
            checkpoints.restore_checkpoint(tmp_path, {"params": {"w": 0.0}})


def test_restore_a_key_the_target_lacks_default(tmp_path):
    data = serialization.to_bytes({"params": {"w": 1.0}, "opt": 2.0})
    target = {"params": {"w": 0.0}}
    assert serialization.from_bytes(target, data) == fser.from_bytes(target, data)
    assert serialization.from_state_dict(target, {"params": {"w": 1.0}, "x": 3}) == {
        "params": {"w": 1.0}
    }
    checkpoints.save_checkpoint(tmp_path, {"params": {"w": 1.0}, "opt": 2.0}, 1)
    assert checkpoints.restore_checkpoint(tmp_path, target)["params"]["w"] == 1.0
