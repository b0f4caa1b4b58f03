"""A sharded train step over two processes equals the same step on one.

Starts ``tests/multiprocess_worker.py`` as 2 processes x 4 CPU devices, joined by
``jax.distributed`` (gloo collectives on localhost), and runs the same code in
this process on its 8 devices (tests/conftest.py). Both train a lens.nn and a
lens.nnx model with the same logical axis rules, each process loading its own
rows of the batch; the losses, the parameters, and the checkpoint restored onto
another mesh must agree. Then this process (one process, another mesh) restores
the checkpoint the two wrote.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lens import errors, nn, nnx
from lens.training import checkpoints
from tests import multiprocess_worker as worker

ROOT = Path(__file__).parent.parent
WORKER = Path(worker.__file__)
TIMEOUT_S = 240  # the whole 2-process run; it takes seconds on an idle machine


def _free_port() -> int:
    """A port free on every address (the coordinator binds ``[::]:port``)."""
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::", 0))
            return s.getsockname()[1]
    except OSError:  # a machine without IPv6
        with socket.socket() as s:
            s.bind(("", 0))
            return s.getsockname()[1]


def _env() -> dict[str, str]:
    """This process's environment with 4 CPU devices (and tests/conftest.py's other
    XLA flags, which make compiling fast)."""
    env = dict(os.environ)
    flags = os.environ.get("XLA_FLAGS", "").split()
    env["XLA_FLAGS"] = " ".join(
        [f for f in flags if not f.startswith("--xla_force_host_platform_device")]
        + ["--xla_force_host_platform_device_count=4"]
    )
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait(timeout=30)


def _wait(procs: list[subprocess.Popen], deadline: float) -> str | None:
    """None once every process exited 0; else why not (the others are killed:
    a process left alone would wait forever at its next collective)."""
    try:
        while time.monotonic() < deadline:
            codes = [p.poll() for p in procs]
            if any(c not in (None, 0) for c in codes):
                return f"a process failed (exit codes {codes})"
            if all(c == 0 for c in codes):
                return None
            time.sleep(0.2)
        return f"timed out after {TIMEOUT_S} s"
    finally:
        _stop(procs)


def _start(out: Path, logs: list[Path], port: int) -> list[subprocess.Popen]:
    procs = []
    for i, log in enumerate(logs):
        with open(log, "w") as f:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(WORKER), "--process-id", str(i)]
                    + ["--num-processes", str(len(logs))]
                    + ["--coordinator", f"localhost:{port}", "--out", str(out)],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    env=_env(),
                    cwd=ROOT,
                )
            )
    return procs


# What process 0 prints when another program took the free port in between.
PORT_TAKEN = "Failed to add port to server"


def run_processes(out: Path, num_processes: int = 2) -> None:
    """Runs the worker as ``num_processes`` processes; fails the test with every
    process's output if one fails or the run times out. Tries a second port once
    if the first was taken before the coordinator could bind it."""
    logs = [out / f"process_{i}.log" for i in range(num_processes)]
    failure: str | None = None
    for _ in range(2):
        procs = _start(out, logs, _free_port())
        failure = _wait(procs, time.monotonic() + TIMEOUT_S)
        if not (failure and PORT_TAKEN in logs[0].read_text()):
            break
    if failure:
        outputs = "\n".join(
            f"----- process {i} -----\n{log.read_text()[-6000:]}"
            for i, log in enumerate(logs)
        )
        pytest.fail(f"2-process run: {failure}\n{outputs}", pytrace=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, object]:
    """What the 2 processes wrote, and the same run in this process."""
    two = tmp_path_factory.mktemp("two_processes")
    run_processes(two)
    one = tmp_path_factory.mktemp("one_process")
    assert jax.process_count() == 1 and jax.device_count() == 8
    return {
        "one": worker.run(str(one)),
        "two": [dict(np.load(two / f"result_{i}.npz")) for i in range(2)],
        "two_dir": two,
    }


def _arrays(result: dict, prefix: str) -> dict[str, np.ndarray]:
    return {k: v for k, v in result.items() if k.startswith(prefix)}


@pytest.mark.parametrize("process", [0, 1])
def test_losses_and_parameters_equal_one_process(runs, process):
    one, two = runs["one"], runs["two"][process]
    for name in ("nn_losses", "nnx_losses"):
        assert len(two[name]) == worker.STEPS
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, err_msg=name)
    assert two["nn_losses"][-1] < two["nn_losses"][0]  # it trained
    # nnx built outside jit: its variables were put on the devices as created
    assert str(two["eager_kernel_spec"]) == "P(None, 'model')"
    for prefix in ("nn[", "nnx[", "eager["):
        expected = _arrays(one, prefix)
        assert len(expected) == 4 and set(_arrays(two, prefix)) == set(expected)
        for k, v in expected.items():
            np.testing.assert_allclose(two[k], v, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("process", [0, 1])
def test_checkpoint_restores_onto_another_mesh(runs, process):
    one, two = runs["one"], runs["two"][process]
    # every process gets the path (as in Flax), not only process 0
    assert str(two["saved_path"]) == str(runs["two_dir"] / "ckpt" / "checkpoint_3")
    restored = _arrays(two, "restored[")
    assert len(restored) == 8
    for k, v in restored.items():
        trained = k.replace("restored['nn']", "nn").replace("restored['nnx']", "nnx")
        np.testing.assert_allclose(v, two[trained], rtol=0, atol=0, err_msg=k)
        np.testing.assert_allclose(v, one[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # restored into the trained arrays (spanning both processes): same layout
    assert two["live_same_sharding"].tolist() == [True] * 4
    for k, v in _arrays(two, "live[").items():
        np.testing.assert_array_equal(v, two[k.replace("live", "nn", 1)], err_msg=k)
    assert len(_arrays(two, "live[")) == 4
    # laid out by the target's shardings on the 1x8 mesh
    assert list(two["restored_specs"]) == list(one["restored_specs"])
    assert "P(None, 'model')" in set(two["restored_specs"])


def test_one_process_restores_what_two_saved(runs):
    """The 2-process checkpoint onto this process's 8 devices, as a 4x2 mesh."""
    mesh = worker.make_mesh((4, 2))
    x = np.zeros((worker.BATCH, worker.FEATURES), np.float32)
    with jax.set_mesh(mesh), nn.logical_axis_rules(worker.RULES):
        _, nnx_abstract = nnx.get_abstract_model(
            lambda: worker.NNXMLP(nnx.Rngs(0)), mesh
        )
        target = {
            "nn": worker.nn_abstract(mesh, x),
            "nnx": nnx_abstract.to_pure_dict(),
        }
    ckpt = runs["two_dir"] / "ckpt"
    restored = checkpoints.restore_checkpoint(ckpt, target=target, step=worker.STEPS)
    kernel = restored["nn"]["Dense_0"]["kernel"]
    assert isinstance(kernel, nn.Partitioned)
    for value in (kernel.value, restored["nnx"]["up"]["kernel"]):
        assert value.sharding == NamedSharding(mesh, P(None, "model"))
        assert len(value.addressable_shards) == 8
    saved = runs["two"][0]
    np.testing.assert_array_equal(kernel.value, saved["nn['Dense_0']['kernel']"])
    np.testing.assert_array_equal(
        restored["nnx"]["up"]["kernel"], saved["nnx['up']['kernel']"]
    )


def _line(text: str, collection: str, module: str, name: str) -> str:
    """The display's line for ``collection/module/name``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(collection))
    if module:
        start += next(i for i, line in enumerate(lines[start:]) if module in line)
    return next(line for line in lines[start:] if line.strip().startswith(name + " "))


@pytest.mark.parametrize("process", [0, 1])
def test_display_shows_each_process_and_device(runs, process):
    text = str(runs["two"][process]["display"])
    # the batch: rows 0:8 on process 0's 4 devices, rows 8:16 on process 1's
    batch = _line(text, "batch", "", "x")
    assert "[0:8,:] p0:d0-3 · [8:16,:] p1:d" in batch
    # restored onto 1x8: a quarter of the columns per device, 4 per process
    kernel = _line(text, "restored", "/Dense_0", "kernel")
    assert "[:,0:4] p0:d0 · [:,4:8] p0:d1" in kernel
    assert kernel.count(" p0:d") == 4 and kernel.count(" p1:d") == 4
    # statistics only where this process holds every value
    assert "mean" not in batch and "mean" not in kernel
    assert "mean" in _line(text, "params", "/Dense_0", "kernel")
    # one process: devices only
    one = str(runs["one"]["display"])
    assert "[0:8,:] d0-3 · [8:16,:] d4-7" in _line(one, "batch", "", "x")
    assert "mean" in _line(one, "batch", "", "x")


@pytest.mark.parametrize("process", [0, 1])
def test_the_sharding_view_names_each_process_devices(runs, process):
    """lens.sharding on two processes: every device of the mesh, named by its
    process, and the same bytes per device as one process of 8 devices counts."""
    text = str(runs["two"][process]["sharding"])
    assert "p0:d" in text and "p1:d" in text
    two = runs["two"][process]["sharding_bytes"]
    assert sorted({int(p) for p, _, _ in two}) == [0, 1]
    one = runs["one"]["sharding_bytes"]
    assert sorted(int(b) for _, _, b in two) == sorted(int(b) for _, _, b in one)


def test_multiprocess_save_faults_reach_every_process(runs):
    for process, result in enumerate(runs["two"]):
        single = str(result["fault_single"])
        assert single.startswith("MPACheckpointingRequiredError")
        assert "save_checkpoint_multiprocess" in single  # says how to fix
        assert str(result["fault_outdated"]).startswith("InvalidCheckpointError")
        assert result["fault_slow_peer"] == "ok", result["fault_slow_peer"]
        failed = str(result["fault_write_fails"])
        if process == 0:
            assert failed.startswith("OSError: disk full")
        else:
            assert failed.startswith("RuntimeError: save_checkpoint_multiprocess")
            assert "process 0 failed to write" in failed


def test_a_failed_process_stops_the_others_at_once(tmp_path):
    """One process exits with an error: the run fails then, not at the timeout,
    and the process still waiting (as at a collective) is killed."""
    code = ["import sys, time; time.sleep(60)", "import sys; sys.exit(3)"]
    procs = [subprocess.Popen([sys.executable, "-c", c]) for c in code]
    start = time.monotonic()
    failure = _wait(procs, start + 50)
    assert failure is not None and "exit codes" in failure
    assert time.monotonic() - start < 30
    assert procs[0].returncode not in (None, 0)  # killed


def test_a_taken_port_is_retried_once_then_reported(tmp_path, monkeypatch):
    ports, started = iter([1111, 2222, 3333]), []

    def start(out, logs, port):
        started.append(port)
        logs[0].write_text(f"E1125 add_port.cc:83] {PORT_TAKEN}: [::]:{port}")
        logs[1].write_text("waiting for the coordinator")
        return []

    monkeypatch.setattr(sys.modules[__name__], "_free_port", lambda: next(ports))
    monkeypatch.setattr(sys.modules[__name__], "_start", start)
    monkeypatch.setattr(sys.modules[__name__], "_wait", lambda procs, d: "failed")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)failed.*\[::\]:2222"):
        run_processes(tmp_path)
    assert started == [1111, 2222]  # one retry, on a new port


# ------------------------------------------------ checkpoints on one process


def _sharded(mesh_shape=(2, 4), spec=P("data", "model")):
    mesh = worker.make_mesh(mesh_shape)
    value = np.arange(32, dtype=np.float32).reshape(4, 8)
    return jax.device_put(value, NamedSharding(mesh, spec)), value


def test_restore_places_leaves_by_an_abstract_target(tmp_path):
    array, value = _sharded()
    path = checkpoints.save_checkpoint_multiprocess(tmp_path, {"w": array, "n": 1}, 1)
    assert path == str(tmp_path / "checkpoint_1")  # returned on every process
    sharding = NamedSharding(worker.make_mesh((8, 1)), P(None, "data"))
    target = {"w": jax.ShapeDtypeStruct((4, 8), np.float32, sharding=sharding), "n": 0}
    restored = checkpoints.restore_checkpoint(tmp_path, target=target)
    assert restored["w"].sharding == sharding
    np.testing.assert_array_equal(restored["w"], value)
    assert restored["n"] == 1
    # a target JAX array on one process: a JAX array on its sharding, as Flax's
    # default (Orbax) restore gives
    plain = checkpoints.restore_checkpoint(tmp_path, target={"w": array, "n": 0})
    assert isinstance(plain["w"], jax.Array) and plain["w"].sharding == array.sharding
    np.testing.assert_array_equal(plain["w"], value)


def test_restore_into_a_target_of_another_shape_says_where(tmp_path):
    array, _ = _sharded()
    checkpoints.save_checkpoint(tmp_path, {"w": array}, 1)
    target = {"w": jax.ShapeDtypeStruct((8, 4), np.float32, sharding=array.sharding)}
    with pytest.raises(errors.SerializationError, match=r"/w has shape \[4, 8\]"):
        checkpoints.restore_checkpoint(tmp_path, target=target)


def test_scaling_page_script_runs_on_one_process(tmp_path, monkeypatch, capsys):
    """docs/scaling.md's script as pasted, on this process's 8 devices (its
    2-process form is the worker's, run above)."""
    import re

    page = (ROOT / "docs" / "scaling.md").read_text()
    (script,) = re.findall(r"```python\n(.*?)```", page, re.S)
    monkeypatch.setenv("CKPT_DIR", str(tmp_path))
    monkeypatch.delenv("NUM_PROCESSES", raising=False)
    exec(compile(script, "docs/scaling.md", "exec"), {"__name__": "scaling"})  # noqa: S102
    lines = capsys.readouterr().out.splitlines()
    losses = [float(line.split("loss ")[1]) for line in lines if "loss" in line]
    assert len(losses) == 3 and losses[2] < losses[0]
    assert lines[-1] == "P(None, 'model')"  # restored onto the 1x8 mesh
    assert (tmp_path / "checkpoint_3").is_file()


def test_orbax_restore_lands_on_the_target_sharding(tmp_path):
    """With ``orbax_checkpointer`` (each process writes its own shards), restore
    passes the target's shardings to Orbax, as Flax does: the arrays come back
    on the target's mesh, not the one they were saved from."""
    ocp = pytest.importorskip("orbax.checkpoint")  # lens does not depend on it
    array, value = _sharded()
    ckpt = ocp.PyTreeCheckpointer()
    path = checkpoints.save_checkpoint_multiprocess(
        tmp_path, {"w": array}, 1, orbax_checkpointer=ckpt
    )
    sharding = NamedSharding(worker.make_mesh((1, 8)), P(None, "model"))
    target = {"w": jax.ShapeDtypeStruct((4, 8), np.float32, sharding=sharding)}
    restored = checkpoints.restore_checkpoint(
        path, target=target, orbax_checkpointer=ckpt
    )
    assert restored["w"].sharding == sharding
    np.testing.assert_array_equal(restored["w"], value)
    # without a sharding in the target, NumPy, as in Flax
    plain = checkpoints.restore_checkpoint(
        path, target={"w": np.zeros((4, 8), np.float32)}, orbax_checkpointer=ckpt
    )
    assert isinstance(plain["w"], np.ndarray)
    np.testing.assert_array_equal(plain["w"], value)
    # keep applies to Orbax checkpoints too: the older one goes
    checkpoints.save_checkpoint_multiprocess(
        tmp_path, {"w": array}, 2, keep=1, orbax_checkpointer=ckpt
    )
    assert checkpoints.available_steps(tmp_path) == [2]
